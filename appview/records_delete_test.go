package appview_test

import (
	"context"
	"github.com/lexview/lexview/appview/internal/testing/metricstest"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// TestOperatorDeletionGoesThroughTheWriter: DELETE /admin/records runs
// through the batch writer like every record change: the record hooks see
// each deletion (one that keeps its record keeps it indexed, and it is
// not counted as deleted), and the writer's metrics count the deletions
// under the source "operator", also in a collection without a lexicon.
func TestOperatorDeletionGoesThroughTheWriter(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		const protected = "at://did:plc:alice/app.test.post/r2"
		var (
			mu   sync.Mutex
			seen []string
		)
		hook := func(_ context.Context, c *storage.Change) bool {
			if c.Op != storage.OpDelete {
				return true
			}
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, c.URI())
			return c.URI() != protected
		}
		reg := prometheus.NewRegistry()
		env := testenv.New(t, open(t), appview.Config{
			RecordHooks: []appview.RecordHook{hook},
			Metrics:     appview.MetricsConfig{Registerer: reg},
		})
		ctx := context.Background()
		var ops []storage.RecordOp
		var uris []string
		for _, rkey := range []string{"r1", "r2", "r3"} {
			rec := storagetest.Rec("did:plc:alice", "app.test.post", rkey, time.Unix(1000, 0), map[string]any{"text": rkey})
			ops = append(ops, storage.RecordOp{Record: rec})
			uris = append(uris, rec.URI)
		}
		if err := env.Store.ApplyBatch(ctx, storage.Batch{Ops: ops}); err != nil {
			t.Fatal(err)
		}
		admin := env.Bootstrap(t)

		r := admin.Do(t, "DELETE", "/admin/records", map[string]any{"uris": uris})
		if r.Status != 200 || string(r.Raw) != `{"deleted":2}` {
			t.Fatalf("delete: %d %s", r.Status, r.Raw)
		}
		mu.Lock()
		if len(seen) != 3 {
			t.Errorf("the record hook saw %v, want the 3 deletions", seen)
		}
		mu.Unlock()
		for _, uri := range uris {
			_, err := env.Store.GetRecord(ctx, uri)
			if kept := err == nil; kept != (uri == protected) {
				t.Errorf("%s: indexed %v after the deletion (%v)", uri, kept, err)
			}
		}
		labels := map[string]string{"source": "operator", "collection": "app.test.post"}
		if v, ok := metricstest.Value(t, reg, "lexview_events_received_total", labels); !ok || v != 3 {
			t.Errorf("received under source operator: %v (%v)", v, ok)
		}
		if v, ok := metricstest.Value(t, reg, "lexview_records_indexed_total", labels); !ok || v != 2 {
			t.Errorf("committed under source operator: %v (%v)", v, ok)
		}
	})
}
