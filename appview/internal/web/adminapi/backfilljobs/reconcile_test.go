package backfilljobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// A record deleted from its repository is removed by the next backfill of
// the account, through the App's batch writer: record hooks see the delete,
// and the job's completion entry counts it.
func TestBackfillRemovesDeletedRecords(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		var mu sync.Mutex
		var deletes []string
		hook := func(_ context.Context, c *storage.Change) bool {
			if c.Op == storage.OpDelete {
				mu.Lock()
				deletes = append(deletes, c.URI())
				mu.Unlock()
			}
			return true
		}
		w := setupWith(t, open(t), "", appview.Config{RecordHooks: []appview.RecordHook{hook}})
		alice := w.account(t, 3)
		w.wait(t, w.create(t, map[string]any{"collection": postNSID, "did": alice}), "completed")
		gone := "at://" + alice + "/" + postNSID + "/3k00000000001"
		if _, err := w.env.Store.GetRecord(t.Context(), gone); err != nil {
			t.Fatalf("backfilled record: %v", err)
		}

		w.pds.DeleteRecord(alice, postNSID, "3k00000000001", "3kaaaaaaaaab2")
		id := w.create(t, map[string]any{"collection": postNSID, "did": alice})
		done := w.wait(t, id, "completed")
		if n(done.ProcessedRepos) != 1 || n(done.TotalRecords) != 2 {
			t.Fatalf("job: %+v", done)
		}
		if _, err := w.env.Store.GetRecord(t.Context(), gone); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("deleted record still served: %v", err)
		}
		if c, _ := w.env.Store.CountRecords(t.Context(), postNSID); c != 2 {
			t.Fatalf("%d records", c)
		}
		mu.Lock()
		seen := append([]string(nil), deletes...)
		mu.Unlock()
		if len(seen) != 1 || seen[0] != gone {
			t.Fatalf("hook saw deletes %v", seen)
		}
		deadline := time.Now().Add(60 * time.Second)
		for {
			events, _, _ := w.env.Store.ListEvents(t.Context(), storage.EventFilter{Type: "backfill.completed", Subject: id, Limit: 1})
			if len(events) == 1 {
				var detail struct {
					RecordsDeleted int64 `json:"records_deleted"`
				}
				if json.Unmarshal(events[0].Detail, &detail); detail.RecordsDeleted != 1 {
					t.Fatalf("completion entry: %s", events[0].Detail)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("no backfill.completed entry")
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
}
