package indexer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/lexview/lexview/appview/internal/core/indexer"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

const cid = "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm"

const noteDoc = `{"lexicon":1,"id":"app.test.note","defs":{"main":{"type":"record","key":"any","record":{"type":"object","required":["text"],"properties":{"text":{"type":"string"}}}}}}`

// registry returns a lexicon registry holding app.test.note.
func registry(t *testing.T, store storage.Store) *lexicon.Registry {
	t.Helper()
	reg := lexicon.NewRegistry(store)
	if _, _, err := reg.Put(context.Background(), lexicon.Upload{Document: json.RawMessage(noteDoc)}); err != nil {
		t.Fatal(err)
	}
	return reg
}

// setup returns a started writer, stopped when the test ends.
func setup(t *testing.T, store storage.Store, bulkWriters int) *indexer.Writer {
	t.Helper()
	w := indexer.New(indexer.Options{Store: store, Lexicons: registry(t, store), BulkWriters: bulkWriters, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop(context.Background()) })
	return w
}

func note(op storage.ChangeOp, rkey, rev, text string) storage.Change {
	c := storage.Change{Op: op, DID: "did:plc:w", Collection: "app.test.note", RKey: rkey, Rev: rev}
	if op != storage.OpDelete {
		c.CID, c.Record = cid, json.RawMessage(`{"$type":"app.test.note","text":"`+text+`"}`)
	}
	return c
}

// forEachMode runs fn on each backend, with one batch committed at a time
// and with bulk batches beside live ones (lanes.go).
func forEachMode(t *testing.T, fn func(t *testing.T, open func(testing.TB) storage.Store, bulkWriters int)) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		for _, bw := range []int{0, 2} {
			t.Run(fmt.Sprintf("bulkWriters=%d", bw), func(t *testing.T) { fn(t, open, bw) })
		}
	})
}

func TestWriterOrderValidationAndCursor(t *testing.T) {
	forEachMode(t, func(t *testing.T, open func(testing.TB) storage.Store, bulkWriters int) {
		store := open(t)
		w := setup(t, store, bulkWriters)
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
		stopCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := w.Stop(stopCtx); err != nil {
			t.Fatalf("Stop: %v", err)
		}
		if _, err := store.GetRecord(ctx, "at://did:plc:w/app.test.note/late"); err != nil {
			t.Fatalf("queued change lost at shutdown: %v", err)
		}
	})
}

// TestWriterLifecycle: before Start every submission fails at once with
// ErrNotStarted (nothing blocks, nothing is counted); after Stop with
// ErrStopped; the writer starts once.
func TestWriterLifecycle(t *testing.T) {
	forEachMode(t, func(t *testing.T, open func(testing.TB) storage.Store, bulkWriters int) {
		store := open(t)
		w := indexer.New(indexer.Options{Store: store, Lexicons: registry(t, store), BulkWriters: bulkWriters, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		submit := map[string]func() error{
			"Submit": func() error {
				_, err := w.Submit(ctx, "test", []storage.Change{note(storage.OpCreate, "s", "", "s")}, &storage.StreamCursor{Name: "source:test", Value: 1})
				return err
			},
			"Write": func() error {
				_, err := w.Write(ctx, "test", []storage.Change{note(storage.OpCreate, "w", "", "w")})
				return err
			},
			"WriteBulk": func() error {
				_, err := w.WriteBulk(ctx, "test", []storage.Change{note(storage.OpCreate, "b", "", "b")})
				return err
			},
		}
		for name, fn := range submit {
			if err := fn(); !errors.Is(err, indexer.ErrNotStarted) {
				t.Fatalf("%s before Start = %v, want ErrNotStarted", name, err)
			}
		}
		if st := w.Stats(); st.Rejected != 0 || st.Queued != 0 {
			t.Fatalf("submissions before Start were counted: %+v", st)
		}
		if err := w.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := w.Start(context.Background()); err == nil {
			t.Fatal("a second Start succeeded")
		}
		for name, fn := range submit {
			if err := fn(); err != nil {
				t.Fatalf("%s while running: %v", name, err)
			}
		}
		if err := w.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		if n, _ := store.CountRecords(ctx, "app.test.note"); n != 3 {
			t.Fatalf("%d records committed, want 3", n)
		}
		if c, err := store.GetStreamCursor(ctx, "source:test"); err != nil || c != 1 {
			t.Fatalf("cursor %d %v", c, err)
		}
		for name, fn := range submit {
			if err := fn(); !errors.Is(err, indexer.ErrStopped) {
				t.Fatalf("%s after Stop = %v, want ErrStopped", name, err)
			}
		}
		if err := w.Start(context.Background()); !errors.Is(err, indexer.ErrStopped) {
			t.Fatalf("Start after Stop = %v", err)
		}
		if err := w.Stop(ctx); err != nil {
			t.Fatalf("a second Stop: %v", err)
		}

		// A writer stopped before it started refuses with ErrStopped.
		never := indexer.New(indexer.Options{Store: store, Lexicons: registry(t, store)})
		if err := never.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := never.Write(ctx, "test", []storage.Change{note(storage.OpCreate, "n", "", "n")}); !errors.Is(err, indexer.ErrStopped) {
			t.Fatalf("Write on a writer stopped unstarted = %v", err)
		}
	})
}

// TestWriterCursorsPerStream: changes of two streams committed in one
// batch store each stream's last position under its own name.
func TestWriterCursorsPerStream(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		store := open(t)
		w := indexer.New(indexer.Options{Store: store, Lexicons: registry(t, store), MaxDelay: time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err := w.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		for i, s := range []struct {
			source string
			value  int64
		}{{"a", 10}, {"b", 500}, {"a", 11}, {"b", 400}, {"a", 12}} {
			c := note(storage.OpCreate, fmt.Sprintf("k%d", i), "", "x")
			if _, err := w.Submit(ctx, s.source, []storage.Change{c}, &storage.StreamCursor{Name: "source:" + s.source, Value: s.value}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		if st := w.Stats(); st.Batches != 1 {
			t.Fatalf("%d batches, want the five submissions in one", st.Batches)
		}
		for name, want := range map[string]int64{"source:a": 12, "source:b": 400} {
			if got, err := store.GetStreamCursor(ctx, name); err != nil || got != want {
				t.Fatalf("%s = %d, %v; want %d", name, got, err, want)
			}
		}
	})
}

// blockingStore holds every commit until release is closed.
type blockingStore struct {
	indexer.Store
	entered chan struct{}
	release chan struct{}
}

func (b *blockingStore) ApplyBatch(ctx context.Context, batch storage.Batch) error {
	select {
	case b.entered <- struct{}{}:
	default:
	}
	<-b.release
	return b.Store.ApplyBatch(ctx, batch)
}

// TestWriterStopDeadline: when Stop's context ends while queued changes
// are still being committed, Stop says so; the commit still completes and
// a later Stop waits for it.
func TestWriterStopDeadline(t *testing.T) {
	store := storagetest.SQLite(t)
	bs := &blockingStore{Store: store, entered: make(chan struct{}, 1), release: make(chan struct{})}
	w := indexer.New(indexer.Options{Store: bs, Lexicons: registry(t, store), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := w.Submit(ctx, "test", []storage.Change{note(storage.OpCreate, "slow", "", "slow")}, nil); err != nil {
		t.Fatal(err)
	}
	<-bs.entered
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := w.Stop(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Stop while a commit is held = %v, want a deadline error", err)
	}
	if _, err := w.Write(ctx, "test", []storage.Change{note(storage.OpCreate, "late", "", "late")}); !errors.Is(err, indexer.ErrStopped) {
		t.Fatalf("Write while stopping = %v, want ErrStopped", err)
	}
	close(bs.release)
	if err := w.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := store.GetRecord(ctx, "at://did:plc:w/app.test.note/slow"); err != nil {
		t.Fatalf("the held change was not committed: %v", err)
	}
}
