package indexer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/lexview/lexview/appview/internal/core/indexer"
	"github.com/lexview/lexview/appview/internal/core/metrics"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// gatedStore records each batch's URIs and holds every commit until the
// test lets it through.
type gatedStore struct {
	storage.Store
	gate    chan struct{}
	mu      sync.Mutex
	batches [][]string
}

func (g *gatedStore) ApplyBatch(ctx context.Context, b storage.Batch) error {
	<-g.gate
	uris := make([]string, len(b.Ops))
	for i, op := range b.Ops {
		uris[i] = op.Record.URI
	}
	g.mu.Lock()
	g.batches = append(g.batches, uris)
	g.mu.Unlock()
	return g.Store.ApplyBatch(ctx, b)
}

// TestLiveChangesOvertakeBulkWork: while the writer is busy, bulk pages
// (backfill) and a live change queue up; the live change goes into the
// very next batch, ahead of the waiting bulk work, and everything is
// committed.
func TestLiveChangesOvertakeBulkWork(t *testing.T) {
	store := &gatedStore{Store: storagetest.SQLite(t), gate: make(chan struct{})}
	reg := lexicon.NewRegistry(store)
	doc := `{"lexicon":1,"id":"app.test.note","defs":{"main":{"type":"record","key":"any","record":{"type":"object","required":["text"],"properties":{"text":{"type":"string"}}}}}}`
	if _, _, err := reg.Put(context.Background(), lexicon.Upload{Document: json.RawMessage(doc)}); err != nil {
		t.Fatal(err)
	}
	m := metrics.New()
	w := indexer.New(indexer.Options{Store: store, Lexicons: reg, MaxBatch: 2, MaxDelay: time.Millisecond, Metrics: m, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ctx := context.Background()
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(ctx)

	var wg sync.WaitGroup
	bulk := func(keys ...string) {
		changes := make([]storage.Change, len(keys))
		for i, k := range keys {
			changes[i] = note(storage.OpCreate, k, "", k)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := w.WriteBulk(ctx, "backfill", changes); err != nil {
				t.Error(err)
			}
		}()
	}
	waitQueued := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); w.Stats().Queued < n; {
			if time.Now().After(deadline) {
				t.Fatalf("%d submissions queued, want %d", w.Stats().Queued, n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	bulk("b1", "b2") // taken at once: the writer blocks committing it
	waitQueued(0)
	time.Sleep(20 * time.Millisecond)
	bulk("b3", "b4")
	bulk("b5", "b6")
	waitQueued(2)
	if _, err := w.Submit(ctx, "jetstream", []storage.Change{note(storage.OpCreate, "live", "", "live")}, nil); err != nil {
		t.Fatal(err)
	}
	waitQueued(3)
	close(store.gate)
	wg.Wait()

	store.mu.Lock()
	defer store.mu.Unlock()
	if len(store.batches) < 2 {
		t.Fatalf("batches: %v", store.batches)
	}
	if next := store.batches[1]; next[0] != note(storage.OpCreate, "live", "", "").URI() {
		t.Fatalf("the batch after the busy one starts with %v, want the live change; batches %v", next, store.batches)
	}
	total := 0
	for _, b := range store.batches {
		total += len(b)
	}
	if total != 7 {
		t.Fatalf("committed %d changes, want 7: %v", total, store.batches)
	}

	// Operators see lag per source, commit times and counts per source.
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(m.Gatherer(), promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{
		fmt.Sprintf(`lexview_commit_lag_seconds_count{source="backfill"} %d`, len(store.batches)),
		`lexview_commit_lag_seconds_count{source="jetstream"} 1`,
		fmt.Sprintf(`lexview_commit_duration_seconds_count %d`, len(store.batches)),
		`lexview_batch_size_sum 7`,
		`lexview_records_indexed_total{collection="app.test.note",source="backfill"} 6`,
		`lexview_records_indexed_total{collection="app.test.note",source="jetstream"} 1`,
		`lexview_write_queue_depth 0`,
		`go_goroutines`,
	} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}
