package appview_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// TestScriptSearch: db.search in a query script, on both databases, over a
// text index declared through the store: ranked records as db.query
// returns them, a cursor, and a malformed query as a Lua error the script
// can catch (the request still answers 200).
func TestScriptSearch(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		e := newScriptEnv(t, open(t))
		e.seed(t, 30)
		ctx := context.Background()
		store := e.App.Store()
		if _, _, err := store.DeclareFieldIndex(ctx, storage.FieldIndexSpec{Collection: "app.test.note", Path: "text", Kind: storage.FieldIndexText}); err != nil {
			t.Fatal(err)
		}
		for {
			p, err := store.BuildFieldIndexes(ctx, 10)
			if err != nil {
				t.Fatal(err)
			}
			if !p.Pending {
				break
			}
		}
		e.setScript(t, "xrpc.query:app.test.feed", `function handle()
			local page = db.search{query = params.q, limit = 2}
			local texts = {}
			for _, r in ipairs(page.records) do texts[#texts + 1] = r.text end
			local rest = page.cursor and db.search{query = params.q, limit = 2, cursor = page.cursor} or {records = {}}
			for _, r in ipairs(rest.records) do texts[#texts + 1] = r.text end
			local ok, err = pcall(db.search, {query = '"unclosed'})
			return {texts = texts, ok = ok, err = err}
		end`)
		r := e.get(t, "/xrpc/app.test.feed?q=7+OR+17+OR+27")
		if r.Status != 200 {
			t.Fatalf("search script: %d %s; %s", r.Status, r.Raw, e.admin.Do(t, "GET", "/admin/events?event_type=script.error", nil).Raw)
		}
		var got struct {
			Texts []string `json:"texts"`
			OK    bool     `json:"ok"`
			Err   string   `json:"err"`
		}
		r.JSON(t, &got)
		slices.Sort(got.Texts)
		if want := []string{"note 17", "note 27", "note 7"}; !slices.Equal(got.Texts, want) {
			t.Errorf("found %q, want %q", got.Texts, want)
		}
		if got.OK || !strings.Contains(got.Err, "db.search: invalid query: search: a quoted phrase is not closed") {
			t.Errorf("a malformed query: ok %v, %q", got.OK, got.Err)
		}
	})
}
