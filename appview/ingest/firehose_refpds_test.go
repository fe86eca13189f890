package ingest_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/ingest"
	"github.com/lexview/lexview/appview/internal/testing/refpds"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// TestFirehoseReferencePDS follows the reference PDS's own subscribeRepos
// firehose (EVENT_SOURCE=firehose with RELAY_URL at the PDS): records
// created, updated and deleted there arrive verified, and none of the
// PDS's commits is refused.
func TestFirehoseReferencePDS(t *testing.T) {
	t.Parallel()
	pds := refpds.Start(t)
	ctx := context.Background()
	alice := pds.CreateAccount(t, "alice.test")
	store := storagetest.SQLite(t)
	// From the first event the PDS keeps: the account's first commit too.
	if err := store.ApplyBatch(ctx, storage.Batch{Cursors: []storage.StreamCursor{{Name: ingest.CursorKey(ingest.FirehoseName), Value: 0}}}); err != nil {
		t.Fatal(err)
	}
	app := startApp(t, store, appview.Config{
		Ingest:  appview.IngestConfig{EventStream: appview.EventStreamFirehose, RelayURL: pds.PDSURL},
		Network: appview.NetworkConfig{PLCURL: pds.PLCURL, AllowPrivateNetworks: true},
	})
	defer stop(t, app)
	putLexicon(t, app, "app.test.post")

	uri, _ := alice.CreateRecord(t, "app.test.post", map[string]any{"text": "first"})
	rkey := uri[len(uri)-13:]
	alice.PutRecord(t, "app.test.post", "kept", map[string]any{"text": "kept"})
	waitText := func(uri, want string) {
		t.Helper()
		eventually(t, uri+" = "+want, func() bool { got, ok := text(t, store, uri); return ok && got == want })
	}
	waitText(uri, "first")
	kept := "at://" + alice.DID + "/app.test.post/kept"
	waitText(kept, "kept")
	alice.PutRecord(t, "app.test.post", rkey, map[string]any{"text": "edited"})
	waitText(uri, "edited")
	alice.DeleteRecord(t, "app.test.post", rkey)
	eventually(t, "the delete", func() bool { _, ok := text(t, store, uri); return !ok })

	st, err := store.GetRepoState(ctx, alice.DID)
	if err != nil || st.Rev == "" || st.Data == "" {
		t.Fatalf("repo state %+v %v", st, err)
	}
	for _, typ := range []string{"source.event_skipped", "source.resync_needed"} {
		events, _, err := store.ListEvents(ctx, storage.EventFilter{Type: typ, Limit: 10})
		if err != nil || len(events) != 0 {
			var details []json.RawMessage
			for _, e := range events {
				details = append(details, e.Detail)
			}
			t.Fatalf("%s: %d entries %s (%v)", typ, len(events), details, err)
		}
	}
}
