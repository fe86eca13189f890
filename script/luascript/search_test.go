package luascript

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/script"
	"github.com/lexview/lexview/storage"
)

// searchHost answers searches with two records and records the queries
// it is asked; a query "bad" is refused as the store refuses one.
type searchHost struct {
	nopHost
	asked []storage.SearchQuery
}

func (h *searchHost) SearchRecords(_ context.Context, q storage.SearchQuery) (storage.SearchPage, error) {
	h.asked = append(h.asked, q)
	if q.Query == "bad" {
		return storage.SearchPage{}, fmt.Errorf("%w: search: a quoted phrase is not closed", storage.ErrInvalidQuery)
	}
	hit := func(rkey string, rank float64) storage.SearchHit {
		return storage.SearchHit{Rank: rank, Record: storage.Record{
			URI: "at://did:plc:a/app.x.post/" + rkey, DID: "did:plc:a", Collection: "app.x.post", RKey: rkey, CID: "bafy" + rkey,
			Value: []byte(`{"text":"post ` + rkey + `"}`), CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		}}
	}
	return storage.SearchPage{Hits: []storage.SearchHit{hit("1", 2.5), hit("2", 1)}, Cursor: "next"}, nil
}

func TestDBSearch(t *testing.T) {
	h := &searchHost{}
	out, err := runWith(t, h, script.Invocation{Collection: "app.x.post"}, `function handle()
		local page = db.search{query = "hello world", fields = {"text", "title"}, did = "did:plc:a", limit = 5, cursor = "c"}
		local texts = {}
		for _, r in ipairs(page.records) do texts[#texts + 1] = r.text .. " " .. r.uri end
		local ok, err = pcall(db.search, {query = "bad"})
		local one = db.search{collection = "app.y.post", query = "x", fields = "body"}
		return {texts = texts, cursor = page.cursor, ok = ok, err = err, n = #one.records}
	end`)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"cursor":"next","err":"test:5: db.search: invalid query: search: a quoted phrase is not closed","n":2,"ok":false,` +
		`"texts":["post 1 at://did:plc:a/app.x.post/1","post 2 at://did:plc:a/app.x.post/2"]}`
	if out != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
	wantAsked := []storage.SearchQuery{
		{Collection: "app.x.post", Query: "hello world", Fields: []string{"text", "title"}, DID: "did:plc:a", Limit: 5, Cursor: "c"},
		{Collection: "app.x.post", Query: "bad", Limit: 20},
		{Collection: "app.y.post", Query: "x", Fields: []string{"body"}, Limit: 20},
	}
	if !reflect.DeepEqual(h.asked, wantAsked) {
		t.Errorf("asked %+v\nwant  %+v", h.asked, wantAsked)
	}
	for _, c := range []struct{ call, msg string }{
		{`db.search{}`, "query is required"},
		{`db.search{query = 1}`, "query must be a string"},
		{`db.search{query = "x", collection = "not an nsid"}`, "invalid collection"},
		{`db.search{query = "x", limit = 0}`, "limit must be an integer between 1 and 100"},
		{`db.search{query = "x", limit = "5"}`, "limit must be a number"},
		{`db.search{query = "x", fields = {1}}`, "fields must be a list of field paths"},
		{`db.search{query = "x", fields = true}`, "fields must be a list of field paths"},
		{`db.search{query = "x", fields = {"a", "b", "c", "d", "e"}}`, "at most 4"},
	} {
		_, err := runWith(t, h, script.Invocation{Collection: "app.x.post"}, "function handle() return "+c.call+" end")
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v, want %q", c.call, err, c.msg)
		}
	}
	if _, err := runWith(t, h, script.Invocation{}, `function handle() return db.search{query = "x"} end`); err == nil ||
		!strings.Contains(err.Error(), "db.search: collection is required") {
		t.Errorf("without a collection: %v", err)
	}
}
