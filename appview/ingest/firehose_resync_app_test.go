package ingest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"testing"
	"time"

	comatproto "github.com/bluesky-social/indigo/api/atproto"
	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/ingest"
	"github.com/lexview/lexview/appview/internal/testing/firehosetest"
	"github.com/lexview/lexview/internal/backfilltest"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// resyncWorld is an App following a stand-in firehose, whose accounts'
// DID documents (PLC stand-in) name a PDS stand-in that exports their
// repositories by getRepo, signed with the keys their firehose commits
// are signed with: a resync can succeed.
type resyncWorld struct {
	t      *testing.T
	store  storage.Store
	server *firehosetest.Server
	plc    *backfilltest.PLC
	pds    *backfilltest.PDS
	app    *appview.App
}

func newResyncWorld(t *testing.T, store storage.Store) *resyncWorld {
	t.Helper()
	w := &resyncWorld{t: t, store: store, server: firehosetest.NewServer(), plc: backfilltest.NewPLC(t), pds: backfilltest.NewPDS(t)}
	t.Cleanup(w.server.Close)
	dir := w.plc.Directory()
	src := &ingest.Firehose{URL: w.server.URL, Directory: dir, HTTPClient: w.server.Client(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	w.app = startApp(t, store, appview.Config{
		Ingest:  appview.IngestConfig{EventSource: src, RelayURL: w.pds.URL()},
		Network: appview.NetworkConfig{Directory: dir, PLCURL: w.plc.URL(), AllowPrivateNetworks: true},
	})
	t.Cleanup(func() { stop(t, w.app) })
	putLexicon(t, w.app, "app.test.post")
	eventually(t, "the subscription", func() bool { return len(w.server.Cursors()) == 1 })
	return w
}

// account makes a repository whose DID document names the PDS stand-in,
// which exports it.
func (w *resyncWorld) account(did string) *firehosetest.Repo {
	w.t.Helper()
	r, err := firehosetest.NewRepo(did)
	if err != nil {
		w.t.Fatal(err)
	}
	pub, err := r.Key.PublicKey()
	if err != nil {
		w.t.Fatal(err)
	}
	w.plc.AddKey(did, w.pds.URL(), pub)
	w.pds.ServeRepo(did, r.Key)
	return r
}

func (w *resyncWorld) commit(r *firehosetest.Repo, ops ...firehosetest.Op) *comatproto.SyncSubscribeRepos_Commit {
	w.t.Helper()
	c, err := r.Commit(ops...)
	if err != nil {
		w.t.Fatal(err)
	}
	return c
}

// publish publishes events and waits until the App stored the position of
// the last.
func (w *resyncWorld) publish(evts ...interface{ MarshalCBOR(io.Writer) error }) {
	w.t.Helper()
	var last int64
	for _, ev := range evts {
		last = w.server.Publish(ev)
	}
	eventually(w.t, "the cursor", func() bool {
		c, err := w.store.GetStreamCursor(context.Background(), ingest.CursorKey(ingest.FirehoseName))
		return err == nil && c >= last
	})
}

// pdsHolds gives the PDS stand-in's export of r n posts (record keys
// 3k00000000000, ...; text "record I of DID") at a revision newer than
// r's commits so far.
func (w *resyncWorld) pdsHolds(r *firehosetest.Repo, n int) {
	time.Sleep(time.Millisecond) // a later microsecond: a newer TID
	w.pds.AddRepo(r.DID, "app.test.post", n, syntax.NewTIDNow(0).String())
}

// pdsPost is the post the PDS stand-in holds under key i.
func pdsPost(did string, i int) firehosetest.Op {
	return post(fmt.Sprintf("3k%011d", i), fmt.Sprintf("record %d of %s", i, did))
}

// posts returns the texts of did's stored posts by record key.
func (w *resyncWorld) posts(did string) map[string]string {
	w.t.Helper()
	page, err := w.store.ListRecords(context.Background(), storage.ListQuery{DID: did, Limit: 100})
	if err != nil {
		w.t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range page.Records {
		var v struct{ Text string }
		if err := json.Unmarshal(r.Value, &v); err != nil {
			w.t.Fatal(err)
		}
		out[r.RKey] = v.Text
	}
	return out
}

// events returns the event-log entries of a type about subject.
func (w *resyncWorld) events(typ, subject string) []storage.Event {
	w.t.Helper()
	evs, _, err := w.store.ListEvents(context.Background(), storage.EventFilter{Type: typ, Limit: 100})
	if err != nil {
		w.t.Fatal(err)
	}
	return slices.DeleteFunc(evs, func(e storage.Event) bool { return e.Subject != subject })
}

func detail(t *testing.T, e storage.Event) map[string]any {
	t.Helper()
	var d map[string]any
	if err := json.Unmarshal(e.Detail, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestFirehoseGapResyncSucceeds: a commit the firehose never delivered
// shows as a gap; the repository is fetched again by verified CAR from
// its PDS, and the store then holds exactly the repository's records: the
// one never delivered is there, the one it deleted is gone, and the event
// log has source.resynced. On both stores.
func TestFirehoseGapResyncSucceeds(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		w := newResyncWorld(t, open(t))
		alice := w.account("did:plc:alice")
		w.publish(w.commit(alice, pdsPost(alice.DID, 0), post("gone", "deleted by the missed commit")))
		// Missed: the firehose never delivers it.
		w.commit(alice, pdsPost(alice.DID, 1), firehosetest.Op{Collection: "app.test.post", RKey: "gone"})
		c3 := w.commit(alice, pdsPost(alice.DID, 2))
		w.pdsHolds(alice, 3)
		w.publish(c3)

		eventually(t, "source.resynced", func() bool { return len(w.events("source.resynced", alice.DID)) == 1 })
		want := map[string]string{}
		for i := range 3 {
			want[fmt.Sprintf("3k%011d", i)] = fmt.Sprintf("record %d of %s", i, alice.DID)
		}
		if got := w.posts(alice.DID); !maps.Equal(got, want) {
			t.Fatalf("stored %v, want the repository's %v", got, want)
		}
		d := detail(t, w.events("source.resynced", alice.DID)[0])
		if d["source"] != ingest.FirehoseName || d["records"] != 3.0 || d["deleted"] != 1.0 || d["rev"] == "" {
			t.Fatalf("source.resynced detail %v", d)
		}
		gaps := w.events("source.resync_needed", alice.DID)
		if len(gaps) != 1 || detail(t, gaps[0])["reason"] != ingest.GapSince {
			t.Fatalf("resync requests %+v", gaps)
		}
		if n := len(w.events("source.resync_failed", alice.DID)); n != 0 {
			t.Fatalf("%d failed resyncs", n)
		}
	})
}
