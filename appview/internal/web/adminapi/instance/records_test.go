package instance_test

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

var base = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// start runs an instance on a fresh store and returns it with its super user.
func start(t *testing.T, open func(testing.TB) storage.Store) (*testenv.Env, *testenv.Admin) {
	t.Helper()
	env := testenv.New(t, open(t), appview.Config{})
	return env, env.Bootstrap(t)
}

// seedRecords stores n records of collection for did, one second apart.
func seedRecords(t *testing.T, s storage.Store, did, collection string, n int) []string {
	t.Helper()
	var ops []storage.RecordOp
	var uris []string
	for i := range n {
		rec := storagetest.Rec(did, collection, fmt.Sprintf("r%03d", i), base.Add(time.Duration(i)*time.Second),
			map[string]any{"n": i})
		ops = append(ops, storage.RecordOp{Record: rec})
		uris = append(uris, rec.URI)
	}
	if err := s.ApplyBatch(context.Background(), storage.Batch{Ops: ops}); err != nil {
		t.Fatal(err)
	}
	return uris
}

// audited returns the subjects and details of the events of one type.
func audited(t *testing.T, s storage.Store, eventType string) []storage.Event {
	t.Helper()
	events, _, err := s.ListEvents(context.Background(), storage.EventFilter{Type: eventType, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return events
}

type recordsPage struct {
	Records []struct {
		URI        string         `json:"uri"`
		DID        string         `json:"did"`
		Collection string         `json:"collection"`
		RKey       string         `json:"rkey"`
		CID        string         `json:"cid"`
		IndexedAt  string         `json:"indexed_at"`
		CreatedAt  string         `json:"created_at"`
		Record     map[string]any `json:"record"`
	} `json:"records"`
	Cursor *string `json:"cursor"`
}

func TestStatsAndCollections(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env, su := start(t, open)
		empty := su.Do(t, "GET", "/admin/stats", nil)
		var st struct {
			TotalRecords      *int64         `json:"total_records"`
			Lexicons          *int           `json:"lexicons"`
			RecordCollections *int           `json:"record_collections"`
			Collections       []any          `json:"collections"`
			Ingest            map[string]any `json:"ingest"`
			Writer            map[string]any `json:"writer"`
		}
		empty.JSON(t, &st)
		if empty.Status != 200 || st.TotalRecords == nil || *st.TotalRecords != 0 || *st.Lexicons != 0 || *st.RecordCollections != 0 ||
			st.Collections == nil || len(st.Collections) != 0 || st.Ingest["enabled"] != false || st.Writer["committed"] != float64(0) {
			t.Fatalf("empty stats: %d %s", empty.Status, empty.Raw)
		}
		if r := su.Do(t, "GET", "/admin/records/collections", nil); r.Status != 200 || string(r.Raw) != `[]` {
			t.Fatalf("empty collections: %d %s", r.Status, r.Raw)
		}
		doc := `{"lexicon":1,"id":"app.test.post","defs":{"main":{"type":"record","key":"tid","record":{"type":"object","properties":{}}}}}`
		if r := su.Do(t, "POST", "/admin/lexicons", map[string]any{"lexicon_json": doc}); r.Status != 201 {
			t.Fatalf("upload: %d %s", r.Status, r.Raw)
		}
		seedRecords(t, env.Store, "did:plc:alice", "app.test.post", 3)
		seedRecords(t, env.Store, "did:plc:alice", "app.test.like", 5)
		seedRecords(t, env.Store, "did:plc:bob", "app.test.post", 1)

		var stats struct {
			TotalRecords      int64 `json:"total_records"`
			Lexicons          int   `json:"lexicons"`
			RecordCollections int   `json:"record_collections"`
			Collections       []struct {
				Collection string `json:"collection"`
				Count      int64  `json:"count"`
			} `json:"collections"`
		}
		su.Do(t, "GET", "/admin/stats", nil).JSON(t, &stats)
		if stats.TotalRecords != 9 || stats.Lexicons != 1 || stats.RecordCollections != 1 || len(stats.Collections) != 2 ||
			stats.Collections[0].Collection != "app.test.like" || stats.Collections[0].Count != 5 || stats.Collections[1].Count != 4 {
			t.Fatalf("stats: %+v", stats)
		}
		r := su.Do(t, "GET", "/admin/records/collections", nil)
		if r.Status != 200 || string(r.Raw) != `[{"collection":"app.test.like","count":5},{"collection":"app.test.post","count":4}]` {
			t.Fatalf("collections: %d %s", r.Status, r.Raw)
		}
	})
}

func TestListRecords(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env, su := start(t, open)
		alice := seedRecords(t, env.Store, "did:plc:alice", "app.test.post", 5)
		seedRecords(t, env.Store, "did:plc:bob", "app.test.post", 2)
		seedRecords(t, env.Store, "did:plc:alice", "app.test.like", 1)

		var p recordsPage
		su.Do(t, "GET", "/admin/records?collection=app.test.post&did=did:plc:alice&limit=2", nil).JSON(t, &p)
		if len(p.Records) != 2 || p.Cursor == nil {
			t.Fatalf("first page: %+v", p)
		}
		first := p.Records[0]
		if first.URI != alice[4] || first.DID != "did:plc:alice" || first.Collection != "app.test.post" || first.RKey != "r004" ||
			first.CID == "" || first.IndexedAt != "2026-03-04T05:06:11.000Z" || first.Record["n"] != float64(4) ||
			first.Record["$type"] != "app.test.post" {
			t.Fatalf("record: %+v", first)
		}
		var got []string
		query := "/admin/records?collection=app.test.post&did=did:plc:alice&limit=2"
		for pages := 0; ; pages++ {
			if pages > 5 {
				t.Fatal("paging does not end")
			}
			var p recordsPage
			su.Do(t, "GET", query, nil).JSON(t, &p)
			for _, rec := range p.Records {
				got = append(got, rec.URI)
			}
			if p.Cursor == nil {
				break
			}
			query = "/admin/records?collection=app.test.post&did=did:plc:alice&limit=2&cursor=" + url.QueryEscape(*p.Cursor)
		}
		want := slices.Clone(alice)
		slices.Reverse(want)
		if !slices.Equal(got, want) {
			t.Fatalf("pages: %v", got)
		}

		// Default page size covers every record of the collection; the
		// cursor is null on the last page.
		r := su.Do(t, "GET", "/admin/records?collection=app.test.post", nil)
		if r.Status != 200 || !strings.Contains(string(r.Raw), `"cursor":null`) {
			t.Fatalf("all: %d %s", r.Status, r.Raw)
		}
		r.JSON(t, &p)
		if len(p.Records) != 7 {
			t.Fatalf("all: %d records", len(p.Records))
		}
		if r := su.Do(t, "GET", "/admin/records?collection=app.test.none", nil); r.Status != 200 || string(r.Raw) != `{"records":[],"cursor":null}` {
			t.Fatalf("empty collection: %d %s", r.Status, r.Raw)
		}

		// A cursor is bound to its listing: the XRPC cursor format with
		// another scope, or another DID filter, is refused.
		var aliceCursor string
		{
			var p recordsPage
			su.Do(t, "GET", "/admin/records?collection=app.test.post&did=did:plc:alice&limit=1", nil).JSON(t, &p)
			aliceCursor = *p.Cursor
		}
		xrpcCursor := storage.EncodeCursor("records/created\x00app.test.post\x00", storage.Position{Time: base, URI: alice[0]})
		// A cursor of the order by indexing time (before created_at).
		oldCursor := storage.EncodeCursor("admin-records\x00app.test.post\x00", storage.Position{Time: base, URI: alice[0]})
		for query, msg := range map[string]string{
			"collection=notansid":                                                               "invalid collection NSID",
			"collection=app.test.post&did=alice":                                                "invalid did",
			"collection=app.test.post&limit=0":                                                  "limit must be an integer between 1 and 100",
			"collection=app.test.post&limit=101":                                                "limit must be an integer between 1 and 100",
			"collection=app.test.post&cursor=bogus":                                             "invalid cursor",
			"collection=app.test.post&cursor=" + url.QueryEscape(aliceCursor):                   "invalid cursor",
			"collection=app.test.like&did=did:plc:alice&cursor=" + url.QueryEscape(aliceCursor): "invalid cursor",
			"collection=app.test.post&cursor=" + url.QueryEscape(xrpcCursor):                    "invalid cursor",
			"collection=app.test.post&cursor=" + url.QueryEscape(oldCursor):                     "invalid cursor",
		} {
			r := su.Do(t, "GET", "/admin/records?"+query, nil)
			if r.Status != 400 || r.Error(t) != msg {
				t.Errorf("%q: %d %s", query, r.Status, r.Raw)
			}
		}
	})
}

// pageAll follows the cursors of a listing from query and returns the
// URIs in order.
func pageAll(t *testing.T, su *testenv.Admin, query string) []string {
	t.Helper()
	var got []string
	next := query
	for pages := 0; ; pages++ {
		if pages > 50 {
			t.Fatal("paging does not end")
		}
		r := su.Do(t, "GET", next, nil)
		if r.Status != 200 {
			t.Fatalf("%s: %d %s", next, r.Status, r.Raw)
		}
		var p recordsPage
		r.JSON(t, &p)
		for _, rec := range p.Records {
			got = append(got, rec.URI)
		}
		if p.Cursor == nil {
			return got
		}
		next = query + "&cursor=" + url.QueryEscape(*p.Cursor)
	}
}

// TestListRecordsEveryCollection: without collection, GET /admin/records
// lists every collection newest created first (created_at, then URI,
// descending; these records state no creation time, so it is indexed_at),
// with cursors of its own; with did alone, one repository's records of
// every collection in AT URI order.
func TestListRecordsEveryCollection(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env, su := start(t, open)
		if r := su.Do(t, "GET", "/admin/records", nil); r.Status != 200 || string(r.Raw) != `{"records":[],"cursor":null}` {
			t.Fatalf("empty: %d %s", r.Status, r.Raw)
		}
		// Times interleave the collections; bob's likes tie with alice's
		// posts (same seconds), so the URI breaks the tie, descending:
		// at://did:plc:bob/... before at://did:plc:alice/....
		posts := seedRecords(t, env.Store, "did:plc:alice", "app.test.post", 3) // +0s, +1s, +2s
		likes := seedRecords(t, env.Store, "did:plc:bob", "app.test.like", 2)   // +0s, +1s
		var ops []storage.RecordOp
		var follows []string
		for i := range 2 {
			rec := storagetest.Rec("did:plc:alice", "app.test.follow", fmt.Sprintf("f%d", i), base.Add(time.Duration(2*i+1)*time.Second+time.Millisecond), nil)
			ops = append(ops, storage.RecordOp{Record: rec})
			follows = append(follows, rec.URI) // +1.001s, +3.001s
		}
		if err := env.Store.ApplyBatch(context.Background(), storage.Batch{Ops: ops}); err != nil {
			t.Fatal(err)
		}
		want := []string{follows[1], posts[2], follows[0], likes[1], posts[1], likes[0], posts[0]}

		r := su.Do(t, "GET", "/admin/records", nil)
		var p recordsPage
		r.JSON(t, &p)
		if r.Status != 200 || len(p.Records) != 7 || p.Cursor != nil {
			t.Fatalf("all: %d %s", r.Status, r.Raw)
		}
		if first := p.Records[0]; first.URI != follows[1] || first.Collection != "app.test.follow" || first.DID != "did:plc:alice" ||
			first.RKey != "f1" || first.IndexedAt != "2026-03-04T05:06:10.001Z" || first.CreatedAt != first.IndexedAt ||
			first.Record["$type"] != "app.test.follow" {
			t.Fatalf("first record: %+v", first)
		}
		for _, query := range []string{"/admin/records?limit=2", "/admin/records?collection=&limit=3", "/admin/records?limit=100"} {
			if got := pageAll(t, su, query); !slices.Equal(got, want) {
				t.Fatalf("%s: %v\nwant %v", query, got, want)
			}
		}

		// did alone: alice's records of every collection, by URI descending.
		aliceAll := append(slices.Clone(posts), follows...)
		slices.Sort(aliceAll)
		slices.Reverse(aliceAll)
		if got := pageAll(t, su, "/admin/records?did=did:plc:alice&limit=2"); !slices.Equal(got, aliceAll) {
			t.Fatalf("did alone: %v\nwant %v", got, aliceAll)
		}
		if r := su.Do(t, "GET", "/admin/records?did=did:plc:nobody", nil); r.Status != 200 || string(r.Raw) != `{"records":[],"cursor":null}` {
			t.Fatalf("unknown did: %d %s", r.Status, r.Raw)
		}

		// Cursors are bound to their listing: the every-collection cursor is
		// refused by a collection's listing and by a DID's, and the other
		// way round.
		cursorOf := func(query string) string {
			t.Helper()
			var p recordsPage
			su.Do(t, "GET", query, nil).JSON(t, &p)
			if p.Cursor == nil {
				t.Fatalf("%s: no cursor", query)
			}
			return url.QueryEscape(*p.Cursor)
		}
		all := cursorOf("/admin/records?limit=1")
		posts1 := cursorOf("/admin/records?collection=app.test.post&limit=1")
		alice1 := cursorOf("/admin/records?did=did:plc:alice&limit=1")
		for query, msg := range map[string]string{
			"collection=app.test.post&cursor=" + all: "invalid cursor",
			"did=did:plc:alice&cursor=" + all:        "invalid cursor",
			"cursor=" + posts1:                       "invalid cursor",
			"cursor=" + alice1:                       "invalid cursor",
			"cursor=bogus":                           "invalid cursor",
			"did=did:plc:alice&cursor=" + posts1:     "invalid cursor",
			"limit=0":                                "limit must be an integer between 1 and 100",
			"limit=101":                              "limit must be an integer between 1 and 100",
			"did=alice":                              "invalid did",
			"collection=app.test.post&did=did:plc:bob&cursor=" + alice1: "invalid cursor",
		} {
			r := su.Do(t, "GET", "/admin/records?"+query, nil)
			if r.Status != 400 || r.Error(t) != msg {
				t.Errorf("%q: %d %s", query, r.Status, r.Raw)
			}
		}
		// The cursor of the every-collection listing continues it.
		var next recordsPage
		su.Do(t, "GET", "/admin/records?limit=3&cursor="+all, nil).JSON(t, &next)
		if len(next.Records) != 3 || next.Records[0].URI != want[1] || next.Records[2].URI != want[3] {
			t.Fatalf("after the first record: %+v", next)
		}
	})
}

func TestDeleteRecords(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env, su := start(t, open)
		uris := seedRecords(t, env.Store, "did:plc:alice", "app.test.post", 4)
		ctx := context.Background()

		r := su.Do(t, "DELETE", "/admin/records", map[string]any{"uris": []string{uris[0]}})
		if r.Status != 200 || string(r.Raw) != `{"deleted":1}` {
			t.Fatalf("delete one: %d %s", r.Status, r.Raw)
		}
		if _, err := env.Store.GetRecord(ctx, uris[0]); err == nil {
			t.Fatal("record still indexed")
		}
		ev := audited(t, env.Store, "record.deleted")
		if len(ev) != 1 || ev[0].Subject != uris[0] || ev[0].ActorDID != su.Account.DID.String() {
			t.Fatalf("audit: %+v", ev)
		}

		// Unknown and repeated URIs are not counted.
		missing := "at://did:plc:alice/app.test.post/nope"
		r = su.Do(t, "DELETE", "/admin/records", map[string]any{"uris": []string{uris[0], uris[1], uris[2], uris[2], missing}})
		if r.Status != 200 || string(r.Raw) != `{"deleted":2}` {
			t.Fatalf("delete several: %d %s", r.Status, r.Raw)
		}
		ev = audited(t, env.Store, "record.deleted")
		if len(ev) != 2 || ev[0].Subject != "" || !strings.Contains(string(ev[0].Detail), `"deleted": 2`) &&
			!strings.Contains(string(ev[0].Detail), `"deleted":2`) {
			t.Fatalf("bulk audit: %+v %s", ev, ev[0].Detail)
		}
		if n, _ := env.Store.CountRecords(ctx, "app.test.post"); n != 1 {
			t.Fatalf("left: %d", n)
		}

		tooMany := make([]string, 1001)
		for i := range tooMany {
			tooMany[i] = fmt.Sprintf("at://did:plc:alice/app.test.post/r%d", i)
		}
		for name, body := range map[string]any{
			"no uris":     map[string]any{},
			"empty":       map[string]any{"uris": []string{}},
			"too many":    map[string]any{"uris": tooMany},
			"not a uri":   map[string]any{"uris": []string{uris[3], "https://example.com/x"}},
			"no rkey":     map[string]any{"uris": []string{"at://did:plc:alice/app.test.post"}},
			"handle":      map[string]any{"uris": []string{"at://alice.test/app.test.post/r1"}},
			"bad nsid":    map[string]any{"uris": []string{"at://did:plc:alice/post/r1"}},
			"wrong types": map[string]any{"uris": "at://did:plc:alice/app.test.post/r1"},
			"malformed":   []byte(`{"uris": [`),
		} {
			r := su.Do(t, "DELETE", "/admin/records", body)
			if r.Status != 400 || r.Error(t) == "" {
				t.Errorf("%s: %d %s", name, r.Status, r.Raw)
			}
		}
		if r := su.Do(t, "DELETE", "/admin/records", []byte(`{"uris": [`)); r.Error(t) != "invalid request body" {
			t.Errorf("malformed JSON: %s", r.Raw)
		}
		// A refused request deletes nothing.
		if _, err := env.Store.GetRecord(ctx, uris[3]); err != nil {
			t.Fatalf("record deleted by a refused request: %v", err)
		}
		// Exactly 1000 is accepted.
		tooMany[999] = uris[3]
		if r := su.Do(t, "DELETE", "/admin/records", map[string]any{"uris": tooMany[:1000]}); r.Status != 200 || string(r.Raw) != `{"deleted":1}` {
			t.Fatalf("1000 uris: %d %s", r.Status, r.Raw)
		}
	})
}

func TestDeleteCollection(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env, su := start(t, open)
		seedRecords(t, env.Store, "did:plc:alice", "app.test.post", 3)
		seedRecords(t, env.Store, "did:plc:bob", "app.test.like", 2)
		ctx := context.Background()

		r := su.Do(t, "DELETE", "/admin/records/collection?collection=app.test.post", nil)
		if r.Status != 200 || string(r.Raw) != `{"deleted":3}` {
			t.Fatalf("by query: %d %s", r.Status, r.Raw)
		}
		r = su.Do(t, "DELETE", "/admin/records/collection", map[string]any{"collection": "app.test.like"})
		if r.Status != 200 || string(r.Raw) != `{"deleted":2}` {
			t.Fatalf("by body: %d %s", r.Status, r.Raw)
		}
		if n, _ := env.Store.CountRecords(ctx, ""); n != 0 {
			t.Fatalf("left: %d", n)
		}
		r = su.Do(t, "DELETE", "/admin/records/collection?collection=app.test.post", nil)
		if r.Status != 200 || string(r.Raw) != `{"deleted":0}` {
			t.Fatalf("again: %d %s", r.Status, r.Raw)
		}
		ev := audited(t, env.Store, "collection.deleted")
		if len(ev) != 3 || ev[2].Subject != "app.test.post" || ev[1].Subject != "app.test.like" {
			t.Fatalf("audit: %+v", ev)
		}

		for name, tc := range map[string]struct {
			query string
			body  any
			msg   string
		}{
			"missing":       {"", nil, "collection is required"},
			"empty body":    {"", map[string]any{}, "collection is required"},
			"empty query":   {"?collection=", nil, "collection is required"},
			"invalid query": {"?collection=not_an_nsid", nil, "invalid collection NSID"},
			"invalid body":  {"", map[string]any{"collection": "x"}, "invalid collection NSID"},
			"malformed":     {"", []byte(`{"collection":`), "invalid request body"},
			"wrong type":    {"", map[string]any{"collection": 5}, "invalid request body"},
		} {
			r := su.Do(t, "DELETE", "/admin/records/collection"+tc.query, tc.body)
			if r.Status != 400 || r.Error(t) != tc.msg {
				t.Errorf("%s: %d %s", name, r.Status, r.Raw)
			}
		}
	})
}
