package appview_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/testing/metricstest"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// TestLinkIndexPass: records stored before the link index existed are
// indexed by the leader's background pass, which reports its end in the
// event log and the metrics, while the instance serves.
func TestLinkIndexPass(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		store := open(t)
		ctx := context.Background()
		const n = 1200
		const post = "at://did:plc:author/app.test.post/p1"
		var ops []storage.RecordOp
		for i := range n {
			ops = append(ops, storage.RecordOp{Record: storagetest.Rec(fmt.Sprintf("did:plc:u%d", i), "app.test.like", "l1",
				time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), map[string]any{"subject": map[string]any{"uri": post}})})
		}
		if err := store.ApplyBatch(ctx, storage.Batch{Ops: ops}); err != nil {
			t.Fatal(err)
		}
		// As if the records had been stored before the index existed.
		db := store.(interface{ Writer() *sql.DB }).Writer()
		for _, stmt := range []string{`DELETE FROM record_links`, `UPDATE link_index_state SET done = false, after_uri = '', scanned = 0`} {
			if _, err := db.ExecContext(ctx, stmt); err != nil {
				t.Fatal(err)
			}
		}
		src, _ := storage.ParseLinkSource("app.test.like:subject.uri")
		if c, err := store.CountBacklinks(ctx, storage.BacklinkCountQuery{Subject: post, Source: src, DIDs: true}); err != nil || c.Records != 0 {
			t.Fatalf("before the pass: %+v %v", c, err)
		}

		reg := prometheus.NewRegistry()
		testenv.New(t, store, appview.Config{Metrics: appview.MetricsConfig{Registerer: reg}})
		waitFor(t, "the link index pass", func() bool {
			st, err := store.LinkIndexStatus(ctx)
			return err == nil && st.Done
		})
		if c, err := store.CountBacklinks(ctx, storage.BacklinkCountQuery{Subject: post, Source: src, DIDs: true}); err != nil || c.Records != n || c.DIDs != n {
			t.Fatalf("after the pass: %+v %v", c, err)
		}
		if v, ok := metricstest.Value(t, reg, "lexview_link_index_ready", nil); !ok || v != 1 {
			t.Errorf("lexview_link_index_ready = %v, %v", v, ok)
		}
		if v, ok := metricstest.Value(t, reg, "lexview_link_index_pass_records", nil); !ok || v != n {
			t.Errorf("lexview_link_index_pass_records = %v, %v", v, ok)
		}
		waitFor(t, "the pass's event", func() bool {
			events, _, err := store.ListEvents(ctx, storage.EventFilter{Type: "links.indexed", Limit: 5})
			return err == nil && len(events) == 1
		})
	})
}
