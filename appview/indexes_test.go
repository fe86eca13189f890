package appview_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/testing/metricstest"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// TestFieldIndexes: a script's db.count that scans a collection is
// suggested as an index; the index declared through the admin API is
// built by the leader while the instance serves, reported in the event
// log and the metrics, then used by the same query (no more scans); the
// library API lists and drops it.
func TestFieldIndexes(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		store := open(t)
		ctx := context.Background()
		const n = 300
		var ops []storage.RecordOp
		for i := range n {
			ops = append(ops, storage.RecordOp{Record: storagetest.Rec(fmt.Sprintf("did:plc:u%d", i), "app.test.like", "l1",
				time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC), map[string]any{"subject": map[string]any{"uri": fmt.Sprintf("at://did:plc:a/app.test.post/p%d", i%3)}, "lang": fmt.Sprintf("l%d", i%3)})})
		}
		if err := store.ApplyBatch(ctx, storage.Batch{Ops: ops}); err != nil {
			t.Fatal(err)
		}
		reg := prometheus.NewRegistry()
		env := testenv.New(t, store, appview.Config{Metrics: appview.MetricsConfig{Registerer: reg},
			Scripts: appview.ScriptConfig{IndexSuggestionMinRecords: n}})
		su := env.Bootstrap(t)
		r := su.Do(t, "POST", "/admin/lexicons", map[string]any{
			"lexicon_json":      json.RawMessage(`{"lexicon":1,"id":"app.test.countLikes","defs":{"main":{"type":"query"}}}`),
			"target_collection": "app.test.like",
			"script":            `function handle() return {n = db.count{filter = {field = "lang", value = "l1"}}} end`,
		})
		if r.Status != 201 {
			t.Fatalf("lexicon: %d %s", r.Status, r.Raw)
		}
		client, _ := env.NewClient(t, apiclients.NewClient{})
		count := func() {
			t.Helper()
			r := env.Do(t, "GET", "/xrpc/app.test.countLikes", nil, "X-Client-Key", client.Key)
			if r.Status != 200 || string(r.Raw) != `{"n":100}` {
				t.Fatalf("count: %d %s", r.Status, r.Raw)
			}
		}
		scans := func() float64 {
			v, _ := metricstest.Value(t, reg, "lexview_query_indexable_scans_total", map[string]string{"collection": "app.test.like"})
			return v
		}
		count()
		if v := scans(); v != 1 {
			t.Errorf("indexable scans %v, want 1", v)
		}
		waitFor(t, "the suggestion", func() bool {
			var out struct {
				Suggestions []struct {
					Collection, Field string
					Records           *int64
				}
			}
			su.Do(t, "GET", "/admin/indexes/suggestions", nil).JSON(t, &out)
			return len(out.Suggestions) == 1 && out.Suggestions[0].Field == "lang" &&
				out.Suggestions[0].Records != nil && *out.Suggestions[0].Records == n
		})

		r = su.Do(t, "POST", "/admin/indexes", map[string]any{"collection": "app.test.like", "path": "lang"})
		if r.Status != 201 {
			t.Fatalf("declare: %d %s", r.Status, r.Raw)
		}
		var idx struct {
			ID int64 `json:"id"`
		}
		r.JSON(t, &idx)
		waitFor(t, "the index to be ready", func() bool {
			var got struct {
				State    string
				Done     int64
				Progress float64
			}
			su.Do(t, "GET", fmt.Sprintf("/admin/indexes/%d", idx.ID), nil).JSON(t, &got)
			return got.State == "ready" && got.Done == n && got.Progress == 1
		})
		labels := map[string]string{"collection": "app.test.like", "path": "lang", "kind": "value"}
		if v, ok := metricstest.Value(t, reg, "lexview_field_index_ready", labels); !ok || v != 1 {
			t.Errorf("lexview_field_index_ready = %v, %v", v, ok)
		}
		if v, ok := metricstest.Value(t, reg, "lexview_field_index_build_records", labels); !ok || v != n {
			t.Errorf("lexview_field_index_build_records = %v, %v", v, ok)
		}
		count()
		if v := scans(); v != 1 {
			t.Errorf("indexable scans %v after the index is ready, want 1", v)
		}
		waitFor(t, "the ready event", func() bool {
			events, _, err := store.ListEvents(ctx, storage.EventFilter{Type: "field_index.ready", Limit: 5})
			return err == nil && len(events) == 1 && events[0].Subject == "app.test.like"
		})

		list, err := env.App.Indexes().List(ctx, "")
		if err != nil || len(list) != 1 || list[0].ID != idx.ID || list[0].State != storage.FieldIndexReady {
			t.Fatalf("App.Indexes().List: %+v %v", list, err)
		}
		if err := env.App.Indexes().Drop(ctx, idx.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := env.App.Indexes().Get(ctx, idx.ID); !errors.Is(err, appview.ErrNotFound) {
			t.Fatalf("Get after Drop: %v", err)
		}
		if _, _, err := env.App.Indexes().Declare(ctx, storage.FieldIndexSpec{Collection: "app.test.like", Path: "a..b"}); !errors.Is(err, appview.ErrInvalid) {
			t.Fatalf("Declare of a bad path: %v", err)
		}
		count()
		events, _, err := store.ListEvents(ctx, storage.EventFilter{Type: "field_index.dropped", Limit: 5})
		if err != nil || len(events) != 1 || events[0].ActorDID != "" {
			t.Fatalf("dropped events: %+v %v", events, err)
		}
	})
}
