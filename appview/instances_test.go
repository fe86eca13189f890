package appview_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/internal/jetstreamtest"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// TestLexiconChangesReachOtherInstances: two instances share a database. A
// record lexicon uploaded through one (b) reaches the other (a) without a
// restart, and is indexed live: the Jetstream subscription of the leader
// (a, started first, on PostgreSQL; both with SQLite) gains the
// collection.
func TestLexiconChangesReachOtherInstances(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		store := open(t)
		js := jetstreamtest.New(t)
		a := testenv.New(t, store, appview.Config{Ingest: appview.IngestConfig{JetstreamURL: js.URL}})
		b := testenv.New(t, store, appview.Config{Ingest: appview.IngestConfig{JetstreamURL: js.URL}})
		waitFor := func(what string, ok func() bool) {
			t.Helper()
			for deadline := time.Now().Add(60 * time.Second); !ok(); time.Sleep(50 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("never saw %s", what)
				}
			}
		}
		subscribed := func(collection string) bool {
			subs := js.Subscriptions()
			return len(subs) > 0 && slices.Contains(subs[len(subs)-1].Collections, collection)
		}

		const doc = `{"lexicon":1,"id":"app.test.shared","defs":{"main":{"type":"record","key":"tid","record":{"type":"object","properties":{"text":{"type":"string"}}}}}}`
		no := false
		if _, err := b.App.Lexicons().Put(context.Background(), lexicon.Upload{Document: json.RawMessage(doc), Backfill: &no}); err != nil {
			t.Fatal(err)
		}
		waitFor("the new lexicon on a", func() bool { _, ok := a.App.Lexicons().Snapshot().Get("app.test.shared"); return ok })
		waitFor("a subscription to the new collection", func() bool { return subscribed("app.test.shared") })
		// Deletions and new revisions travel the same way
		// (lexicon.TestRefreshSeesOtherInstances).
	})
}
