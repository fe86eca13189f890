package lexicon_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

const (
	recordDoc = `{"lexicon":1,"id":"app.test.post","defs":{"main":{"type":"record","key":"tid","record":{"type":"object","properties":{}}}}}`
	queryDoc  = `{"lexicon":1,"id":"app.test.getPosts","defs":{"main":{"type":"query"}}}`
)

func TestRegistry(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		ctx := context.Background()
		store := open(t)
		reg := lexicon.NewRegistry(store)
		changes, unsubscribe := reg.Subscribe()
		defer unsubscribe()

		no := false
		rec, created, err := reg.Put(ctx, lexicon.Upload{Document: json.RawMessage(recordDoc), Backfill: &no, TargetCollection: "app.test.ignored"})
		if err != nil || !created || rec.Revision != 1 || rec.Kind != lexicon.KindRecord || rec.Backfill {
			t.Fatalf("put record: %+v %v %v", rec, created, err)
		}
		if rec.TargetCollection != "app.test.post" {
			t.Fatalf("a record lexicon's collection is its id, got %q", rec.TargetCollection)
		}
		select {
		case <-changes:
		case <-time.After(time.Second):
			t.Fatal("no change notification")
		}
		q, created, err := reg.Put(ctx, lexicon.Upload{Document: json.RawMessage(queryDoc), TargetCollection: "app.test.post"})
		if err != nil || !created || !q.Backfill || q.TargetCollection != "app.test.post" {
			t.Fatalf("put query: %+v %v", q, err)
		}
		q2, created, err := reg.Put(ctx, lexicon.Upload{Document: json.RawMessage(queryDoc), Script: "function handle() return {} end"})
		if err != nil || created || q2.Revision != 2 || q2.Script == "" || q2.TargetCollection != "" {
			t.Fatalf("re-upload: %+v %v %v", q2, created, err)
		}
		snap := reg.Snapshot()
		if snap.Len() != 2 || len(snap.RecordCollections()) != 1 || snap.RecordCollections()[0] != "app.test.post" {
			t.Fatalf("snapshot: %d lexicons, collections %v", snap.Len(), snap.RecordCollections())
		}
		if _, _, err := reg.Put(ctx, lexicon.Upload{Document: json.RawMessage(queryDoc), TargetCollection: "bad target"}); !lexicon.IsParseError(err) {
			t.Fatalf("invalid target_collection: %v", err)
		}

		// A fresh registry loads what was stored.
		other := lexicon.NewRegistry(store)
		if err := other.Load(ctx); err != nil {
			t.Fatal(err)
		}
		if l, ok := other.Snapshot().Get("app.test.getPosts"); !ok || l.Revision != 2 {
			t.Fatalf("loaded: %+v %v", l, ok)
		}

		if err := reg.Delete(ctx, "app.test.post"); err != nil {
			t.Fatal(err)
		}
		if err := reg.Delete(ctx, "app.test.post"); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("second delete: %v", err)
		}
		if _, ok := reg.Snapshot().Get("app.test.post"); ok {
			t.Fatal("deleted lexicon still routed")
		}
		if _, ok := snap.Get("app.test.post"); !ok {
			t.Fatal("an old snapshot must not change")
		}
	})
}

func TestRegistryConcurrentReadersAndWriters(t *testing.T) {
	ctx := context.Background()
	reg := lexicon.NewRegistry(storagetest.SQLite(t))
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				s := reg.Snapshot()
				for _, l := range s.All() {
					if l.ID == "" {
						t.Error("empty lexicon in snapshot")
					}
				}
			}
		}()
	}
	for i := range 20 {
		if _, _, err := reg.Put(ctx, lexicon.Upload{Document: json.RawMessage(queryDoc)}); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			if err := reg.Delete(ctx, "app.test.getPosts"); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(stop)
	wg.Wait()
}

// TestRefreshSeesOtherInstances: two registries on one database, as two
// instances are. Changes made through one reach the other on Refresh, which
// reports no change (and keeps its snapshot) when there is none.
func TestRefreshSeesOtherInstances(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		ctx := context.Background()
		store := open(t)
		a, b := lexicon.NewRegistry(store), lexicon.NewRegistry(store)
		changes, unsubscribe := b.Subscribe()
		defer unsubscribe()
		refresh := func(want bool) *lexicon.Snapshot {
			t.Helper()
			changed, err := b.Refresh(ctx)
			if err != nil || changed != want {
				t.Fatalf("Refresh = %v, %v; want changed %v", changed, err, want)
			}
			if want {
				select {
				case <-changes:
				default:
					t.Fatal("a refresh that changed the snapshot notified no subscriber")
				}
			}
			return b.Snapshot()
		}

		refresh(false)
		if _, _, err := a.Put(ctx, lexicon.Upload{Document: json.RawMessage(recordDoc)}); err != nil {
			t.Fatal(err)
		}
		snap := refresh(true)
		if got := snap.RecordCollections(); len(got) != 1 || got[0] != "app.test.post" {
			t.Fatalf("collections after refresh: %v", got)
		}
		if same := refresh(false); same != snap {
			t.Fatal("a refresh without changes replaced the snapshot")
		}

		// A new revision of one lexicon, and a second lexicon.
		post, _ := snap.Get("app.test.post")
		if _, _, err := a.Put(ctx, lexicon.Upload{Document: json.RawMessage(recordDoc)}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := a.Put(ctx, lexicon.Upload{Document: json.RawMessage(queryDoc), TargetCollection: "app.test.post"}); err != nil {
			t.Fatal(err)
		}
		snap = refresh(true)
		if l, _ := snap.Get("app.test.post"); l.Revision != 2 || l == post {
			t.Fatalf("revision after refresh: %+v", l)
		}
		if _, ok := snap.Get("app.test.getPosts"); !ok || snap.Len() != 2 {
			t.Fatalf("query lexicon missing after refresh (%d lexicons)", snap.Len())
		}

		if err := a.Delete(ctx, "app.test.post"); err != nil {
			t.Fatal(err)
		}
		snap = refresh(true)
		if _, ok := snap.Get("app.test.post"); ok || len(snap.RecordCollections()) != 0 {
			t.Fatal("deleted lexicon survived the refresh")
		}
	})
}

// TestRecordURI: RecordURI says whether a record lexicon's record declares
// a top-level `uri` property.
func TestRecordURI(t *testing.T) {
	reg := lexicon.NewRegistry(storagetest.SQLite(t))
	for id, props := range map[string]string{
		"app.test.bookmark": `{"uri":{"type":"string"}}`,
		"app.test.post":     `{"text":{"type":"string"},"reply":{"type":"object","properties":{"uri":{"type":"string"}}}}`,
	} {
		doc := `{"lexicon":1,"id":"` + id + `","defs":{"main":{"type":"record","key":"tid","record":{"type":"object","properties":` + props + `}}}}`
		if _, _, err := reg.Put(context.Background(), lexicon.Upload{Document: json.RawMessage(doc)}); err != nil {
			t.Fatal(err)
		}
	}
	if l, _ := reg.Snapshot().Get("app.test.bookmark"); l == nil || !l.RecordURI {
		t.Fatalf("bookmark: %+v", l)
	}
	if l, _ := reg.Snapshot().Get("app.test.post"); l == nil || l.RecordURI {
		t.Fatalf("post (a nested uri only): %+v", l)
	}
}
