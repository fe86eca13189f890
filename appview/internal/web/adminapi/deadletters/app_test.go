package deadletters_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// TestRetryInTheApp retries through a whole instance with the real script
// machinery: no script bound, a script that fails again, and one that
// succeeds and indexes the record.
func TestRetryInTheApp(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env := testenv.New(t, open(t), appview.Config{})
		ctx := context.Background()
		doc := `{"lexicon":1,"id":"app.test.post","defs":{"main":{"type":"record","key":"tid","record":{"type":"object","properties":{"text":{"type":"string"}}}}}}`
		if _, err := env.App.Lexicons().Put(ctx, lexicon.Upload{Document: json.RawMessage(doc), Backfill: new(false)}); err != nil {
			t.Fatal(err)
		}
		su := env.Bootstrap(t)
		d := add(t, env.Store, "app.test.post", 0, func(d *storage.DeadLetter) {
			d.CreatedAt, d.CID, d.Rev = time.Time{}, "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm", "3kaaaaaaaaaa2"
		})
		retry := func() testenv.Response {
			t.Helper()
			return su.Do(t, "POST", "/admin/dead-letters/"+d.ID+"/retry", nil)
		}
		if r := retry(); r.Status != 404 || r.Error(t) != "no script is bound to this dead letter" {
			t.Fatalf("no script: %d %s", r.Status, r.Raw)
		}
		put := func(source string) {
			t.Helper()
			r := su.Do(t, "POST", "/admin/scripts", map[string]any{"trigger": "record.create:app.test.post", "source": source})
			if r.Status != 201 && r.Status != 200 {
				t.Fatalf("script: %d %s", r.Status, r.Raw)
			}
		}
		put(`function handle() error("still broken") end`)
		r := retry()
		if o := r.Object(t); r.Status != 200 || o["resolved"] != false || o["error"] == nil {
			t.Fatalf("failing script: %d %s", r.Status, r.Raw)
		}
		if got, err := env.Store.GetDeadLetter(ctx, d.ID); err != nil || got.Attempts != d.Attempts+1 || !got.ResolvedAt.IsZero() {
			t.Fatalf("after the failure: %+v %v", got, err)
		}
		put(`function handle() return true end`)
		if r := retry(); r.Status != 200 || r.Object(t)["resolved"] != true {
			t.Fatalf("working script: %d %s", r.Status, r.Raw)
		}
		recs, err := env.Store.GetRecords(ctx, []string{d.URI})
		if err != nil || len(recs) != 1 {
			t.Fatalf("record not indexed: %v %v", recs, err)
		}
	})
}
