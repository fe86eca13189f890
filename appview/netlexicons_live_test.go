package appview_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/lexicon/lexresolve"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// stubResolver is a Config.Network.LexiconResolver of the test's own: schemas by
// NSID, all under one authority DID.
type stubResolver struct {
	mu      sync.Mutex
	did     string
	schemas map[string]lexresolve.Schema
	fetches int
}

func (r *stubResolver) Authority(_ context.Context, nsid string) (lexresolve.Authority, error) {
	return lexresolve.Authority{Domain: "example.test", DID: r.did}, nil
}

func (r *stubResolver) Schema(_ context.Context, nsid string) (lexresolve.Schema, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fetches++
	s, ok := r.schemas[nsid]
	if !ok {
		return s, &lexresolve.Error{Step: "record", NSID: nsid, Missing: true, Msg: "no such record"}
	}
	return s, nil
}

func (r *stubResolver) publish(t *testing.T, nsid, cid string, doc map[string]any) {
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.schemas[nsid] = lexresolve.Schema{Authority: lexresolve.Authority{Domain: "example.test", DID: r.did}, CID: cid, Document: raw}
}

func (r *stubResolver) unpublish(nsid string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.schemas, nsid)
}

func (r *stubResolver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fetches
}

// TestNetworkLexiconLiveUpdates follows an authority's schema commits
// through the live event source (the re-check is an hour away): the
// source starts following com.atproto.lexicon.schema once a network
// lexicon is tracked, a commit of the tracked authority re-fetches the
// schema and stores its new revision, commits of other accounts or other
// NSIDs fetch nothing, a deletion leaves the lexicon in use, and schema
// commits are not handed to the writer.
func TestNetworkLexiconLiveUpdates(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		const author, nsid = "did:plc:authorauthorauthorauthor", "com.example.feed.post"
		res := &stubResolver{did: author, schemas: map[string]lexresolve.Schema{}}
		res.publish(t, nsid, "bafy-one", noteSchema(nsid, "text"))
		src := newFakeSource("stub")
		env := testenv.New(t, open(t), appview.Config{
			Ingest:  appview.IngestConfig{EventSource: src},
			Network: appview.NetworkConfig{LexiconResolver: res, LexiconRecheck: time.Hour},
		})
		admin := env.Bootstrap(t)
		<-src.resumed
		if cols := src.Status().Collections; slices.Contains(cols, schemaCollection) {
			t.Fatalf("following %v before any network lexicon", cols)
		}
		r := admin.Do(t, "POST", "/admin/network-lexicons", map[string]any{"nsid": nsid})
		if o := r.Object(t); r.Status != 201 || o["authority_did"] != author || o["revision"] != 1.0 {
			t.Fatalf("add: %d %s", r.Status, r.Raw)
		}
		waitFor(t, "the schema collection followed", func() bool {
			return slices.Equal(src.Status().Collections, []string{schemaCollection, nsid})
		})

		schemaChange := func(did, rkey string, op storage.ChangeOp) storage.Change {
			c := storage.Change{Op: op, DID: did, Collection: schemaCollection, RKey: rkey}
			if op != storage.OpDelete {
				c.CID = "bafyreib2rxk3rybk3aobmv5cjuql3bm2twh4jo5uxgf5mdsrydvdfjk4zm"
				c.Record = json.RawMessage(`{"$type":"com.atproto.lexicon.schema","lexicon":1,"id":"` + rkey + `"}`)
			}
			return c
		}
		// Commits of another account, or of an untracked NSID: no fetch.
		fetches := res.count()
		src.send(t, 10, schemaChange("did:plc:someoneelseentirelyxxxxx", nsid, storage.OpUpdate),
			schemaChange(author, "com.example.feed.like", storage.OpCreate))
		time.Sleep(200 * time.Millisecond)
		if res.count() != fetches {
			t.Fatalf("untracked commits fetched schemas")
		}
		// The tracked authority publishes a new revision.
		res.publish(t, nsid, "bafy-two", noteSchema(nsid, "text", "title"))
		src.send(t, 11, schemaChange(author, nsid, storage.OpUpdate))
		waitFor(t, "the new revision", func() bool {
			var rows []map[string]any
			admin.Do(t, "GET", "/admin/network-lexicons", nil).JSON(t, &rows)
			return len(rows) == 1 && rows[0]["cid"] == "bafy-two"
		})
		if l := admin.Do(t, "GET", "/admin/lexicons/"+nsid, nil).Object(t); l["revision"] != 2.0 || !strings.Contains(string(mustJSON(t, l["lexicon_json"])), `"title"`) {
			t.Fatalf("stored %v", l)
		}
		// The schema commits were not indexed, and the cursor moved on.
		if n, err := env.Store.CountRecords(context.Background(), schemaCollection); err != nil || n != 0 {
			t.Fatalf("%d schema records indexed (%v)", n, err)
		}
		// A deletion at the authority: the lexicon stays, marked.
		res.unpublish(nsid)
		src.send(t, 12, schemaChange(author, nsid, storage.OpDelete))
		waitFor(t, "the deletion noted", func() bool {
			var rows []map[string]any
			admin.Do(t, "GET", "/admin/network-lexicons", nil).JSON(t, &rows)
			return len(rows) == 1 && rows[0]["upstream_deleted_at"] != nil
		})
		expect(t, admin.Do(t, "GET", "/admin/lexicons/"+nsid, nil), 200, "")
		waitFor(t, "the cursor stored", func() bool {
			c, err := env.Store.GetStreamCursor(context.Background(), "source:stub")
			return err == nil && c == 12
		})
		// Removing the last network lexicon stops following the collection.
		expect(t, admin.Do(t, "DELETE", "/admin/network-lexicons/"+nsid, nil), 204, "")
		waitFor(t, "the schema collection dropped", func() bool { return len(src.Status().Collections) == 0 })
	})
}
