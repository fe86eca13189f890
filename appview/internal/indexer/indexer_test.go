package indexer_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/lexview/lexview/appview/internal/indexer"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

const cid = "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm"

func setup(t *testing.T, store storage.Store) (*indexer.Writer, context.CancelFunc, chan struct{}) {
	t.Helper()
	reg := lexicon.NewRegistry(store)
	doc := `{"lexicon":1,"id":"app.test.note","defs":{"main":{"type":"record","key":"any","record":{"type":"object","required":["text"],"properties":{"text":{"type":"string"}}}}}}`
	if _, _, err := reg.Put(context.Background(), lexicon.Upload{Document: json.RawMessage(doc)}); err != nil {
		t.Fatal(err)
	}
	w := indexer.New(store, reg, indexer.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return w, cancel, done
}

func note(op storage.ChangeOp, rkey, rev, text string) storage.Change {
	c := storage.Change{Op: op, DID: "did:plc:w", Collection: "app.test.note", RKey: rkey, Rev: rev}
	if op != storage.OpDelete {
		c.CID, c.Record = cid, json.RawMessage(`{"$type":"app.test.note","text":"`+text+`"}`)
	}
	return c
}

func TestWriterOrderValidationAndCursor(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		store := open(t)
		w, cancel, done := setup(t, store)
		ctx := context.Background()
		// Separate submissions keep their order: create, update, delete of
		// one record ends deleted; another ends at its update.
		for i, c := range []storage.Change{
			note(storage.OpCreate, "a", "3k001", "one"), note(storage.OpCreate, "b", "3k002", "b1"),
			note(storage.OpUpdate, "a", "3k003", "two"), note(storage.OpUpdate, "b", "3k004", "b2"),
			note(storage.OpDelete, "a", "3k005", ""),
		} {
			if _, err := w.Submit(ctx, "test", []storage.Change{c}, &storage.StreamCursor{Name: "s", Value: int64(i + 1)}); err != nil {
				t.Fatal(err)
			}
		}
		// Invalid changes are reported and never written.
		res, err := w.Write(ctx, "test", []storage.Change{
			{Op: storage.OpCreate, DID: "did:plc:w", Collection: "app.test.note", RKey: "bad", CID: cid, Record: json.RawMessage(`{"$type":"app.test.note","text":7}`)},
			{Op: storage.OpCreate, DID: "did:plc:w", Collection: "app.test.unknown", RKey: "x", CID: cid, Record: json.RawMessage(`{}`)},
			note(storage.OpCreate, "c", "3k006", "c"),
		})
		if err != nil || res.Accepted != 1 || len(res.Rejected) != 2 {
			t.Fatalf("write: %+v %v", res, err)
		}
		if _, err := store.GetRecord(ctx, "at://did:plc:w/app.test.note/a"); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("a: %v", err)
		}
		rec, err := store.GetRecord(ctx, "at://did:plc:w/app.test.note/b")
		if err != nil || rec.Rev != "3k004" {
			t.Fatalf("b: %+v %v", rec, err)
		}
		if _, err := store.GetRecord(ctx, "at://did:plc:w/app.test.note/bad"); !errors.Is(err, storage.ErrNotFound) {
			t.Fatal("an invalid record was written")
		}
		if c, err := store.GetStreamCursor(ctx, "s"); err != nil || c != 5 {
			t.Fatalf("cursor %d %v", c, err)
		}
		st := w.Stats()
		if st.Committed != 6 || st.Rejected != 2 || st.Batches == 0 || st.LastCommitAt.IsZero() {
			t.Fatalf("stats %+v", st)
		}
		if got := w.TakeRejections(); got["app.test.note"] != 1 || got["app.test.unknown"] != 1 {
			t.Fatalf("rejections %v", got)
		}

		// Stopping flushes what is queued.
		if _, err := w.Submit(ctx, "test", []storage.Change{note(storage.OpCreate, "late", "3k007", "late")}, nil); err != nil {
			t.Fatal(err)
		}
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return")
		}
		if _, err := store.GetRecord(ctx, "at://did:plc:w/app.test.note/late"); err != nil {
			t.Fatalf("queued change lost at shutdown: %v", err)
		}
	})
}
