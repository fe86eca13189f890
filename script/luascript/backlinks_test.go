package luascript

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/lexview/lexview/script"
	"github.com/lexview/lexview/storage"
)

// backlinkHost answers backlink queries and records them.
type backlinkHost struct {
	nopHost
	queries []storage.BacklinkQuery
	counted []storage.BacklinkCountQuery
	cursor  string
}

func (h *backlinkHost) Backlinks(_ context.Context, q storage.BacklinkQuery) (storage.BacklinkPage, error) {
	h.queries = append(h.queries, q)
	if q.Cursor == "refuse" {
		return storage.BacklinkPage{}, errors.New("invalid backlink query: bad cursor")
	}
	return storage.BacklinkPage{Total: 3, Cursor: h.cursor, Records: []storage.Backlink{
		{URI: "at://did:plc:b/app.bsky.feed.like/3k2", DID: "did:plc:b", Collection: "app.bsky.feed.like", RKey: "3k2"},
		{URI: "at://did:plc:a/app.bsky.feed.like/3k1", DID: "did:plc:a", Collection: "app.bsky.feed.like", RKey: "3k1"},
	}}, nil
}

func (h *backlinkHost) CountBacklinks(_ context.Context, q storage.BacklinkCountQuery) (storage.BacklinkCount, error) {
	h.counted = append(h.counted, q)
	c := storage.BacklinkCount{Records: 7}
	if q.DIDs {
		c.DIDs = 5
	}
	return c, nil
}

const likedPost = "at://did:plc:alice/app.bsky.feed.post/3k"

func TestDBBacklinks(t *testing.T) {
	t.Parallel()
	h := &backlinkHost{cursor: "next"}
	out, err := runWith(t, h, script.Invocation{}, `function handle()
		local page = db.backlinks{subject = "`+likedPost+`", source = "app.bsky.feed.like:subject.uri",
			did = {"did:plc:a", "did:plc:b"}, limit = 2, cursor = "c1"}
		local n = db.backlinkCount{subject = "`+likedPost+`", source = "app.bsky.feed.like:.subject.uri", dids = true}
		local records = db.backlinkCount{subject = "`+likedPost+`", source = "app.bsky.feed.like:subject.uri"}
		return {page = page, count = n, records = records}
	end`)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"count":{"dids":5,"records":7},"page":{"cursor":"next","records":[` +
		`{"collection":"app.bsky.feed.like","did":"did:plc:b","rkey":"3k2","uri":"at://did:plc:b/app.bsky.feed.like/3k2"},` +
		`{"collection":"app.bsky.feed.like","did":"did:plc:a","rkey":"3k1","uri":"at://did:plc:a/app.bsky.feed.like/3k1"}],"total":3},` +
		`"records":{"records":7}}`
	if out != want {
		t.Fatalf("got  %s\nwant %s", out, want)
	}
	like := storage.LinkSource{Collection: "app.bsky.feed.like", Path: "subject.uri"}
	wantQ := []storage.BacklinkQuery{{Subject: likedPost, Source: like, DIDs: []string{"did:plc:a", "did:plc:b"}, Limit: 2, Cursor: "c1"}}
	if !reflect.DeepEqual(h.queries, wantQ) {
		t.Fatalf("queries = %+v", h.queries)
	}
	if !reflect.DeepEqual(h.counted, []storage.BacklinkCountQuery{{Subject: likedPost, Source: like, DIDs: true}, {Subject: likedPost, Source: like}}) {
		t.Fatalf("counts = %+v", h.counted)
	}
}

func TestDBBacklinksDefaults(t *testing.T) {
	t.Parallel()
	h := &backlinkHost{}
	out, err := runWith(t, h, script.Invocation{}, `function handle()
		local page = db.backlinks{subject = "did:plc:alice", source = "app.bsky.graph.follow:subject", did = "did:plc:a"}
		return {cursor = page.cursor == nil, n = #page.records}
	end`)
	if err != nil {
		t.Fatal(err)
	}
	if out != `{"cursor":true,"n":2}` {
		t.Fatalf("got %s", out)
	}
	if q := h.queries[0]; q.Limit != 0 || q.Cursor != "" || !reflect.DeepEqual(q.DIDs, []string{"did:plc:a"}) {
		t.Fatalf("query = %+v (limit 0 is the default, one did a list of one)", q)
	}
}

func TestDBBacklinksErrors(t *testing.T) {
	t.Parallel()
	const src = `source = "app.bsky.feed.like:subject.uri"`
	for _, tc := range []struct{ call, want string }{
		{`db.backlinks()`, "db.backlinks: want an options table"},
		{`db.backlinks{` + src + `}`, "db.backlinks: subject is required"},
		{`db.backlinks{subject = "did:plc:a"}`, "db.backlinks: source is required"},
		{`db.backlinks{subject = "did:plc:a", source = "app.bsky.feed.like"}`, "db.backlinks: invalid backlink query: source must be collection:path"},
		{`db.backlinks{subject = 1, ` + src + `}`, "db.backlinks: subject must be a string"},
		{`db.backlinks{subject = "did:plc:a", ` + src + `, limit = 0}`, "db.backlinks: limit must be an integer between 1 and 100"},
		{`db.backlinks{subject = "did:plc:a", ` + src + `, limit = 101}`, "db.backlinks: limit must be an integer between 1 and 100"},
		{`db.backlinks{subject = "did:plc:a", ` + src + `, limit = 2.5}`, "db.backlinks: limit must be an integer"},
		{`db.backlinks{subject = "did:plc:a", ` + src + `, limit = "2"}`, "db.backlinks: limit must be a number"},
		{`db.backlinks{subject = "did:plc:a", ` + src + `, did = {}}`, "db.backlinks: did is an empty list"},
		{`db.backlinks{subject = "did:plc:a", ` + src + `, did = {1}}`, "db.backlinks: did[1] is not a string"},
		{`db.backlinks{subject = "did:plc:a", ` + src + `, did = true}`, "db.backlinks: did must be a DID or a list of DIDs"},
		{`db.backlinks{subject = "did:plc:a", ` + src + `, subjet = "x"}`, `db.backlinks: unknown option "subjet"`},
		{`db.backlinks{subject = "did:plc:a", ` + src + `, cursor = "refuse"}`, "db.backlinks: invalid backlink query: bad cursor"},
		{`db.backlinkCount{subject = "did:plc:a"}`, "db.backlinkCount: source is required"},
		{`db.backlinkCount{subject = "did:plc:a", ` + src + `, limit = 5}`, `db.backlinkCount: unknown option "limit"`},
		{`db.backlinkCount{subject = "did:plc:a", ` + src + `, dids = "yes"}`, `db.backlinkCount: dids must be a boolean`},
	} {
		_, err := runWith(t, &backlinkHost{}, script.Invocation{}, "function handle() "+tc.call+" end")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.call, err, tc.want)
		}
	}
	// A script may catch them.
	out, err := runWith(t, &backlinkHost{}, script.Invocation{}, `function handle()
		local ok, msg = pcall(db.backlinks, {subject = "did:plc:a", `+src+`, limit = 0})
		return {ok = ok, msg = msg}
	end`)
	if err != nil || !strings.Contains(out, `"ok":false`) || !strings.Contains(out, "limit must be") {
		t.Fatalf("pcall: %s, %v", out, err)
	}
}
