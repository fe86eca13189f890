package indexer_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lexview/lexview/appview/internal/core/indexer"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// heldStore holds each commit whose batch holds a URI hold matches until
// the test releases it, and records which batches were being committed
// at once.
type heldStore struct {
	storage.Store
	hold    func(uri string) bool
	release chan struct{}
	once    sync.Once
	entered chan []string // URIs of each batch as its commit begins

	mu           sync.Mutex
	active, most int
}

// newHeldStore returns a store holding the batches that hold selects
// until the test calls let, or ends (so that a failed test does not hang
// stopping its writer).
func newHeldStore(t *testing.T, hold func(string) bool) *heldStore {
	h := &heldStore{Store: storagetest.SQLite(t), hold: hold, release: make(chan struct{}), entered: make(chan []string, 100)}
	t.Cleanup(h.let)
	return h
}

// let releases the held commits.
func (h *heldStore) let() { h.once.Do(func() { close(h.release) }) }

func (h *heldStore) ApplyBatch(ctx context.Context, b storage.Batch) error {
	uris := make([]string, len(b.Ops))
	held := false
	for i, op := range b.Ops {
		uris[i] = op.Record.URI
		held = held || h.hold(op.Record.URI)
	}
	h.mu.Lock()
	h.active++
	h.most = max(h.most, h.active)
	h.mu.Unlock()
	h.entered <- uris
	if held {
		<-h.release
	}
	err := h.Store.ApplyBatch(ctx, b)
	h.mu.Lock()
	h.active--
	h.mu.Unlock()
	return err
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// waitEntered returns the URIs of the next batch whose commit begins.
func waitEntered(t *testing.T, h *heldStore) []string {
	t.Helper()
	select {
	case uris := <-h.entered:
		return uris
	case <-time.After(10 * time.Second):
		t.Fatal("no commit began")
		return nil
	}
}

// noneEntered checks that no commit begins for a while.
func noneEntered(t *testing.T, h *heldStore, why string) {
	t.Helper()
	select {
	case uris := <-h.entered:
		t.Fatalf("%s, but a batch of %v was committed", why, uris)
	case <-time.After(100 * time.Millisecond):
	}
}

func bulkWrite(t *testing.T, w *indexer.Writer, wg *sync.WaitGroup, keys ...string) {
	changes := make([]storage.Change, len(keys))
	for i, k := range keys {
		changes[i] = note(storage.OpCreate, k, "", k)
	}
	wg.Go(func() {
		if _, err := w.WriteBulk(context.Background(), "backfill", changes); err != nil {
			t.Error(err)
		}
	})
}

// TestBulkWritersCommitSideBySide: with two bulk writers, two batches of
// bulk work and the live batch are committed at once; Stop waits for all
// of them.
func TestBulkWritersCommitSideBySide(t *testing.T) {
	h := newHeldStore(t, func(string) bool { return true })
	w := indexer.New(indexer.Options{Store: h, Lexicons: registry(t, h), MaxBatch: 2, MaxDelay: time.Millisecond, BulkWriters: 2, Logger: quiet()})
	ctx := context.Background()
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	bulkWrite(t, w, &wg, "b1", "b2")
	bulkWrite(t, w, &wg, "b3", "b4")
	bulkWrite(t, w, &wg, "b5", "b6")
	waitEntered(t, h)
	waitEntered(t, h)
	noneEntered(t, h, "two bulk writers are busy")
	if _, err := w.Submit(ctx, "jetstream", []storage.Change{note(storage.OpCreate, "live", "", "live")}, &storage.StreamCursor{Name: "s", Value: 1}); err != nil {
		t.Fatal(err)
	}
	if got := waitEntered(t, h); len(got) != 1 || !strings.HasSuffix(got[0], "/live") {
		t.Fatalf("the live batch is %v", got)
	}
	h.let()
	wg.Wait()
	if err := w.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if h.most != 3 {
		t.Fatalf("%d commits at once at most, want 3 (two bulk, one live)", h.most)
	}
	if n, _ := h.CountRecords(ctx, "app.test.note"); n != 7 {
		t.Fatalf("%d records, want 7", n)
	}
	if c, err := h.GetStreamCursor(ctx, "s"); err != nil || c != 1 {
		t.Fatalf("cursor %d %v", c, err)
	}
}

// TestBatchesSharingAURIAreNotCommittedAtOnce: a live change to a record
// whose bulk batch is being committed waits for that commit, and is
// committed after it.
func TestBatchesSharingAURIAreNotCommittedAtOnce(t *testing.T) {
	h := newHeldStore(t, func(uri string) bool { return strings.HasSuffix(uri, "/shared") })
	w := indexer.New(indexer.Options{Store: h, Lexicons: registry(t, h), MaxBatch: 2, MaxDelay: time.Millisecond, BulkWriters: 2, Logger: quiet()})
	ctx := context.Background()
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.let(); _ = w.Stop(ctx) })
	var wg sync.WaitGroup
	bulkWrite(t, w, &wg, "shared", "other") // no rev: whichever commits last wins
	waitEntered(t, h)
	wg.Go(func() {
		if _, err := w.Write(ctx, "jetstream", []storage.Change{note(storage.OpUpdate, "shared", "3k002", "live")}); err != nil {
			t.Error(err)
		}
	})
	noneEntered(t, h, "the live change shares a URI with the batch being committed")
	bulkWrite(t, w, &wg, "unrelated")
	if got := waitEntered(t, h); len(got) != 1 || !strings.HasSuffix(got[0], "/unrelated") {
		t.Fatalf("the next batch is %v, want the unrelated bulk change", got)
	}
	h.let()
	wg.Wait()
	rec, err := h.GetRecord(ctx, "at://did:plc:w/app.test.note/shared")
	if err != nil || !strings.Contains(string(rec.Value), `"live"`) {
		t.Fatalf("shared = %s, %v; want the live change, committed last", rec.Value, err)
	}
}

// TestLiveBacklogHoldsBulkBack: while live submissions wait for the live
// lane, a bulk batch does not start.
func TestLiveBacklogHoldsBulkBack(t *testing.T) {
	h := newHeldStore(t, func(uri string) bool { return strings.HasSuffix(uri, "/live0") })
	w := indexer.New(indexer.Options{Store: h, Lexicons: registry(t, h), MaxBatch: 10, MaxDelay: time.Millisecond, BulkWriters: 2, Logger: quiet()})
	ctx := context.Background()
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	submit := func(i int) {
		if _, err := w.Submit(ctx, "jetstream", []storage.Change{note(storage.OpCreate, fmt.Sprint("live", i), "", "x")}, nil); err != nil {
			t.Fatal(err)
		}
	}
	submit(0)
	waitEntered(t, h) // the live lane is held committing live0
	submit(1)
	submit(2) // two waiting: more than a tenth of a batch
	var wg sync.WaitGroup
	bulkWrite(t, w, &wg, "bulk")
	noneEntered(t, h, "live changes are waiting")
	h.let()
	wg.Wait()
	if err := w.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := h.CountRecords(ctx, "app.test.note"); n != 4 {
		t.Fatalf("%d records, want 4", n)
	}
}

// concurrencyHook counts record-event hooks running at once.
type concurrencyHook struct {
	active, most atomic.Int32
}

func (c *concurrencyHook) Wants(storage.Change) bool { return true }

func (c *concurrencyHook) Apply(_ context.Context, changes []storage.Change) ([]indexer.Outcome, error) {
	n := c.active.Add(1)
	defer c.active.Add(-1)
	for m := c.most.Load(); n > m && !c.most.CompareAndSwap(m, n); m = c.most.Load() {
	}
	time.Sleep(5 * time.Millisecond)
	return make([]indexer.Outcome, len(changes)), nil
}

// TestHooksRunForOneBatchAtATime: batches committed side by side still
// run their record-event hooks one batch after the other.
func TestHooksRunForOneBatchAtATime(t *testing.T) {
	store := storagetest.SQLite(t)
	hook := &concurrencyHook{}
	w := indexer.New(indexer.Options{Store: store, Lexicons: registry(t, store), MaxBatch: 1, MaxDelay: time.Millisecond, BulkWriters: 3, Hook: hook, Logger: quiet()})
	ctx := context.Background()
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 12 {
		bulkWrite(t, w, &wg, fmt.Sprint("b", i))
		wg.Go(func() {
			if _, err := w.Write(ctx, "jetstream", []storage.Change{note(storage.OpCreate, fmt.Sprint("l", i), "", "x")}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if err := w.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := store.CountRecords(ctx, "app.test.note"); n != 24 {
		t.Fatalf("%d records, want 24", n)
	}
	if m := hook.most.Load(); m != 1 {
		t.Fatalf("hooks of %d batches ran at once", m)
	}
}

// TestBulkBatchSize: bulk batches take up to BulkMaxBatch changes, live
// ones up to MaxBatch.
func TestBulkBatchSize(t *testing.T) {
	h := newHeldStore(t, func(string) bool { return false })
	w := indexer.New(indexer.Options{Store: h, Lexicons: registry(t, h), MaxBatch: 1, BulkMaxBatch: 3, MaxDelay: time.Second, BulkWriters: 1, Logger: quiet()})
	ctx := context.Background()
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	bulkWrite(t, w, &wg, "b1")
	bulkWrite(t, w, &wg, "b2")
	bulkWrite(t, w, &wg, "b3")
	for _, k := range []string{"l1", "l2"} {
		wg.Go(func() {
			if _, err := w.Write(ctx, "jetstream", []storage.Change{note(storage.OpCreate, k, "", k)}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if err := w.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	sizes := map[string][]int{}
	for range 3 {
		uris := waitEntered(t, h)
		kind := "live"
		if strings.Contains(uris[0], "/b") {
			kind = "bulk"
		}
		sizes[kind] = append(sizes[kind], len(uris))
	}
	if fmt.Sprint(sizes["bulk"]) != "[3]" || fmt.Sprint(sizes["live"]) != "[1 1]" || len(h.entered) != 0 {
		t.Fatalf("batch sizes %v, want one bulk batch of 3 and live batches of 1", sizes)
	}
}
