package deadletters_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/web/adminapi/internal/admintest"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

var base = time.Date(2026, 2, 3, 4, 5, 6, 789000000, time.UTC)

// item is the wire shape of a dead letter, detail fields included.
type item struct {
	ID         string          `json:"id"`
	Kind       string          `json:"kind"`
	LexiconID  string          `json:"lexicon_id"`
	URI        string          `json:"uri"`
	DID        string          `json:"did"`
	Collection string          `json:"collection"`
	RKey       string          `json:"rkey"`
	Action     string          `json:"action"`
	Error      string          `json:"error"`
	Attempts   int             `json:"attempts"`
	CreatedAt  string          `json:"created_at"`
	ResolvedAt *string         `json:"resolved_at"`
	Record     json.RawMessage `json:"record"`
}

type page struct {
	DeadLetters []item  `json:"dead_letters"`
	Cursor      *string `json:"cursor"`
}

// add stores a record dead letter of collection created at base+i seconds.
func add(t *testing.T, s storage.Store, collection string, i int, mod func(*storage.DeadLetter)) storage.DeadLetter {
	t.Helper()
	rkey := fmt.Sprintf("3kaaaaaaa%04d", i)
	d := storage.DeadLetter{
		Kind: storage.DeadLetterRecord, LexiconID: collection, DID: "did:plc:alice", Collection: collection, RKey: rkey,
		URI: "at://did:plc:alice/" + collection + "/" + rkey, Action: "create", Error: "script failed",
		Attempts: 3, Record: json.RawMessage(`{"text":"hello"}`), CreatedAt: base.Add(time.Duration(i) * time.Second),
	}
	if mod != nil {
		mod(&d)
	}
	stored, err := s.AddDeadLetter(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	return stored
}

func resolve(t *testing.T, s storage.Store, id string) {
	t.Helper()
	if err := s.ResolveDeadLetter(context.Background(), id, base.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
}

func list(t *testing.T, c *admintest.Caller, query string) page {
	t.Helper()
	r := c.Do(t, "GET", "/admin/dead-letters?"+query, nil)
	admintest.Expect(t, r, 200, "")
	var p page
	r.JSON(t, &p)
	if p.DeadLetters == nil {
		t.Fatalf("dead_letters is not an array: %s", r.Raw)
	}
	for _, d := range p.DeadLetters {
		if d.Record != nil {
			t.Fatalf("the list carries records: %s", r.Raw)
		}
	}
	return p
}

func ids(p page) []string {
	out := make([]string, len(p.DeadLetters))
	for i, d := range p.DeadLetters {
		out[i] = d.ID
	}
	return out
}

func count(t *testing.T, c *admintest.Caller, query string) int {
	t.Helper()
	r := c.Do(t, "GET", "/admin/dead-letters/count?"+query, nil)
	admintest.Expect(t, r, 200, "")
	n, ok := r.Object(t)["count"].(float64)
	if !ok {
		t.Fatalf("count: %s", r.Raw)
	}
	return int(n)
}

func get(t *testing.T, c *admintest.Caller, id string) item {
	t.Helper()
	r := c.Do(t, "GET", "/admin/dead-letters/"+id, nil)
	admintest.Expect(t, r, 200, "")
	var d item
	r.JSON(t, &d)
	return d
}

func TestListCountGet(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		srv := admintest.New(t, open(t), mountDeadLetters, nil)
		su := srv.Super
		posts := []storage.DeadLetter{}
		for i := range 5 {
			posts = append(posts, add(t, srv.Store, "app.test.post", i, nil))
		}
		like := add(t, srv.Store, "app.test.like", 10, func(d *storage.DeadLetter) { d.Action = "delete"; d.Record = nil })
		label := add(t, srv.Store, "", 11, func(d *storage.DeadLetter) {
			d.Kind, d.LexiconID, d.URI, d.DID, d.RKey, d.Action = storage.DeadLetterLabel, "", "at://did:plc:bob", "did:plc:bob", "", "label"
		})
		resolve(t, srv.Store, posts[1].ID)

		// Default: unresolved only, newest first.
		p := list(t, su, "")
		want := []string{label.ID, like.ID, posts[4].ID, posts[3].ID, posts[2].ID, posts[0].ID}
		if !slices.Equal(ids(p), want) || p.Cursor != nil {
			t.Fatalf("default list: %v, cursor %v", ids(p), p.Cursor)
		}
		first := p.DeadLetters[2]
		if first.Kind != "record" || first.LexiconID != "app.test.post" || first.URI != posts[4].URI || first.DID != "did:plc:alice" ||
			first.Collection != "app.test.post" || first.RKey != posts[4].RKey || first.Action != "create" ||
			first.Error != "script failed" || first.Attempts != 3 || first.CreatedAt != "2026-02-03T04:05:10.789Z" || first.ResolvedAt != nil {
			t.Fatalf("list item: %+v", first)
		}
		if p.DeadLetters[0].Kind != "label" {
			t.Fatalf("label item: %+v", p.DeadLetters[0])
		}
		raw := string(su.Do(t, "GET", "/admin/dead-letters", nil).Raw)
		for _, absent := range []string{`"resolved_at"`, `"cursor"`, `"record":`} {
			if strings.Contains(raw, absent) {
				t.Fatalf("%s present: %s", absent, raw)
			}
		}

		for query, want := range map[string][]string{
			"resolved=false":                        {label.ID, like.ID, posts[4].ID, posts[3].ID, posts[2].ID, posts[0].ID},
			"resolved=true":                         {posts[1].ID},
			"resolved=all":                          {label.ID, like.ID, posts[4].ID, posts[3].ID, posts[2].ID, posts[1].ID, posts[0].ID},
			"resolved=":                             {label.ID, like.ID, posts[4].ID, posts[3].ID, posts[2].ID, posts[1].ID, posts[0].ID},
			"collection=app.test.like":              {like.ID},
			"collection=app.test.post&resolved=all": {posts[4].ID, posts[3].ID, posts[2].ID, posts[1].ID, posts[0].ID},
			"collection=app.test.none":              {},
		} {
			if got := ids(list(t, su, query)); !slices.Equal(got, want) {
				t.Errorf("%s: %v, want %v", query, got, want)
			}
			if n := count(t, su, query); n != len(want) {
				t.Errorf("count %s: %d, want %d", query, n, len(want))
			}
		}
		if p := list(t, su, "resolved=true"); p.DeadLetters[0].ResolvedAt == nil || *p.DeadLetters[0].ResolvedAt != "2026-02-03T05:05:06.789Z" {
			t.Fatalf("resolved_at: %+v", p.DeadLetters[0])
		}

		// Detail: the record, or null.
		d := get(t, su, posts[0].ID)
		if string(d.Record) != `{"text":"hello"}` || d.URI != posts[0].URI || d.Attempts != 3 {
			t.Fatalf("detail: %+v", d)
		}
		r := su.Do(t, "GET", "/admin/dead-letters/"+like.ID, nil)
		if o := r.Object(t); o["record"] != nil || !strings.Contains(string(r.Raw), `"record":null`) {
			t.Fatalf("delete detail: %s", r.Raw)
		}
		if d := get(t, su, posts[1].ID); d.ResolvedAt == nil {
			t.Fatalf("resolved detail: %+v", d)
		}
		admintest.Expect(t, su.Do(t, "GET", "/admin/dead-letters/nope", nil), 404, "dead letter not found")

		for _, q := range []string{"resolved=yes", "resolved=TRUE", "collection=nope", "limit=0", "limit=101", "limit=x",
			"cursor=garbage", "cursor="} {
			if r := su.Do(t, "GET", "/admin/dead-letters?"+q, nil); r.Status != 400 || r.Error(t) == "" {
				t.Errorf("list %s: %d %s", q, r.Status, r.Raw)
			}
		}
		for _, q := range []string{"resolved=maybe", "collection=not_an_nsid"} {
			if r := su.Do(t, "GET", "/admin/dead-letters/count?"+q, nil); r.Status != 400 {
				t.Errorf("count %s: %d %s", q, r.Status, r.Raw)
			}
		}
	})
}

func TestPaging(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		srv := admintest.New(t, open(t), mountDeadLetters, nil)
		var want []string
		for i := range 7 {
			want = append(want, add(t, srv.Store, "app.test.post", i, nil).ID)
		}
		// Two dead letters at the same instant: the ID breaks the tie.
		for range 2 {
			want = append(want, add(t, srv.Store, "app.test.post", 3, nil).ID)
		}
		got := func(query string) []string {
			var out []string
			cursor := ""
			for n := 0; ; n++ {
				q := query
				if cursor != "" {
					q += "&cursor=" + url.QueryEscape(cursor)
				}
				p := list(t, srv.Super, q)
				out = append(out, ids(p)...)
				if p.Cursor == nil {
					return out
				}
				if *p.Cursor == "" || n > 10 {
					t.Fatalf("cursor %v after %d pages", *p.Cursor, n)
				}
				cursor = *p.Cursor
			}
		}
		all := got("limit=2")
		if len(all) != 9 || len(uniq(all)) != 9 {
			t.Fatalf("paged: %v", all)
		}
		if one := got("limit=100"); !slices.Equal(one, all) {
			t.Fatalf("one page %v, paged %v", one, all)
		}
		if !slices.Equal(sorted(all), sorted(want)) {
			t.Fatalf("ids %v, want %v", all, want)
		}
		// A cursor continues only the listing it came from.
		p := list(t, srv.Super, "limit=2")
		for _, q := range []string{"resolved=all", "collection=app.test.post", "resolved=true"} {
			r := srv.Super.Do(t, "GET", "/admin/dead-letters?limit=2&"+q+"&cursor="+url.QueryEscape(*p.Cursor), nil)
			admintest.Expect(t, r, 400, "invalid cursor")
		}
		if next := list(t, srv.Super, "limit=2&resolved=false&cursor="+url.QueryEscape(*p.Cursor)); len(next.DeadLetters) != 2 {
			t.Fatalf("explicit default filter: %v", ids(next))
		}
	})
}

func uniq(s []string) []string { return slices.Compact(sorted(s)) }

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

func TestPermissions(t *testing.T) {
	srv := admintest.New(t, storagetest.SQLite(t), mountDeadLetters, nil)
	d := add(t, srv.Store, "app.test.post", 0, nil)
	reader := srv.Caller(t, admins.DeadLettersRead)
	manager := srv.Caller(t, admins.DeadLettersManage)
	list(t, reader, "")
	count(t, reader, "")
	get(t, reader, d.ID)
	for _, path := range []string{"/" + d.ID + "/dismiss", "/" + d.ID + "/retry", "/" + d.ID + "/reindex",
		"/bulk/dismiss", "/bulk/retry", "/bulk/reindex"} {
		admintest.Expect(t, reader.Do(t, "POST", "/admin/dead-letters"+path, map[string]any{"all": true}), 403, "insufficient permissions")
	}
	admintest.Expect(t, manager.Do(t, "GET", "/admin/dead-letters", nil), 403, "insufficient permissions")
	admintest.Expect(t, manager.Do(t, "POST", "/admin/dead-letters/"+d.ID+"/dismiss", nil), 200, "")
}
