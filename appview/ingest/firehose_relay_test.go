package ingest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/ingest"
	"github.com/lexview/lexview/appview/internal/testing/metricstest"
	"github.com/lexview/lexview/appview/internal/testing/refpds"
	"github.com/lexview/lexview/appview/internal/testing/refrelay"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// TestFirehoseThroughRelay follows indigo's stock relay in front of the
// reference PDS (EVENT_SOURCE=firehose, RELAY_URL at the relay), on both
// stores: records created, updated and deleted on the PDS arrive
// verified, none of the relayed events is refused or starts a resync, and
// a restart resumes from the relay's sequence number: the changes made
// while Lexview was down arrive, and the relay sends the new run only the
// events after the stored cursor (no loss, no duplicates).
func TestFirehoseThroughRelay(t *testing.T) {
	t.Parallel()
	refrelay.Require(t)
	pds := refpds.Start(t)
	relay := refrelay.Start(t, pds)
	run := 0
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		run++
		ctx := context.Background()
		// The relay passes events of accounts it saw on the PDS's stream:
		// the accounts are made now that it is connected.
		alice := pds.CreateAccount(t, fmt.Sprintf("alice%d.test", run))
		store := open(t)
		sentBefore := relay.EventsSent(t)
		// From the relay's first event: that of the account's creation.
		if err := store.ApplyBatch(ctx, storage.Batch{Cursors: []storage.StreamCursor{{Name: ingest.CursorKey(ingest.FirehoseName), Value: 0}}}); err != nil {
			t.Fatal(err)
		}
		cfg := appview.Config{Ingest: appview.IngestConfig{EventStream: appview.EventStreamFirehose, RelayURL: relay.URL},
			Network: appview.NetworkConfig{PLCURL: pds.PLCURL, AllowPrivateNetworks: true}}
		cfg.Metrics.Registerer = prometheus.NewRegistry()
		app := startApp(t, store, cfg)
		putLexicon(t, app, "app.test.post")

		waitText := func(uri, want string) {
			t.Helper()
			eventually(t, uri+" = "+want, func() bool { got, ok := text(t, store, uri); return ok && got == want })
		}
		waitGone := func(uri string) {
			t.Helper()
			eventually(t, uri+" deleted", func() bool { _, ok := text(t, store, uri); return !ok })
		}
		post := func(rkey string) string { return "at://" + alice.DID + "/app.test.post/" + rkey }

		uri, _ := alice.CreateRecord(t, "app.test.post", map[string]any{"text": "first"})
		rkey := uri[len(uri)-13:]
		alice.PutRecord(t, "app.test.post", "kept", map[string]any{"text": "kept"})
		waitText(uri, "first")
		waitText(post("kept"), "kept")
		alice.PutRecord(t, "app.test.post", rkey, map[string]any{"text": "edited"})
		waitText(uri, "edited")
		alice.DeleteRecord(t, "app.test.post", rkey)
		waitGone(uri)

		// Everything the relay sent is applied, and it sent each of its
		// events once: from cursor 0, its sequence numbers 1..n, n events.
		cursor := func() int64 {
			c, err := store.GetStreamCursor(ctx, ingest.CursorKey(ingest.FirehoseName))
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		waitEqual(t, "the cursor and the events the relay sent", func() (int64, int64) {
			return cursor(), relay.EventsSent(t) - sentBefore
		})
		stop(t, app)
		stopped, sentBefore := cursor(), relay.EventsSent(t)

		// While Lexview is down: a new account, and changes.
		bob := pds.CreateAccount(t, fmt.Sprintf("bob%d.test", run))
		alice.PutRecord(t, "app.test.post", "kept", map[string]any{"text": "kept, edited while down"})
		alice.PutRecord(t, "app.test.post", "down", map[string]any{"text": "written while down"})
		bob.PutRecord(t, "app.test.post", "bob", map[string]any{"text": "bob's"})
		const commitsWhileDown = 4 // bob's first commit and three records

		reg := prometheus.NewRegistry()
		cfg.Metrics.Registerer = reg
		app = startApp(t, store, cfg)
		defer stop(t, app)
		waitText(post("kept"), "kept, edited while down")
		waitText(post("down"), "written while down")
		waitText("at://"+bob.DID+"/app.test.post/bob", "bob's")
		alice.DeleteRecord(t, "app.test.post", "down")
		waitGone(post("down"))

		waitEqual(t, "the cursor's move and the events the relay sent after the restart", func() (int64, int64) {
			return cursor() - stopped, relay.EventsSent(t) - sentBefore
		})
		// The relay's sequence numbers have no gaps: the new run was sent
		// exactly the events after the stored cursor, and applied each
		// commit once.
		if v, ok := metricstest.Value(t, reg, "lexview_commits_verified_total", map[string]string{"source": ingest.FirehoseName}); !ok || v != commitsWhileDown+1 {
			t.Errorf("commits verified after the restart: %v (%v), want %d", v, ok, commitsWhileDown+1)
		}

		for _, did := range []string{alice.DID, bob.DID} {
			if st, err := store.GetRepoState(ctx, did); err != nil || st.Rev == "" || st.Data == "" {
				t.Errorf("repo state of %s: %+v %v", did, st, err)
			}
		}
		for _, typ := range []string{"source.event_skipped", "source.resync_needed"} {
			events, _, err := store.ListEvents(ctx, storage.EventFilter{Type: typ, Limit: 10})
			if err != nil || len(events) != 0 {
				var details []json.RawMessage
				for _, e := range events {
					details = append(details, e.Detail)
				}
				t.Errorf("%s: %d entries %s (%v)", typ, len(events), details, err)
			}
		}
	})
}

// waitEqual polls values for up to 60 seconds until both are equal and
// not zero; it fails the test with the last ones otherwise.
func waitEqual(t *testing.T, what string, values func() (int64, int64)) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		a, b := values()
		if a == b && a != 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d and %d after 10 s", what, a, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
