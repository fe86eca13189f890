package fixed_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// The link graph the backlink tests seed: likes of one post (more than a
// page of 100), from fewer accounts than likes, beside links that must
// not count (likes of another post, reposts of the post), and one post
// mentioning the post's author in a facet.
const (
	author        = "did:plc:author"
	likedPost     = "at://" + author + "/app.bsky.feed.post/p1"
	otherPost     = "at://" + author + "/app.bsky.feed.post/p2"
	likeSource    = "app.bsky.feed.like:subject.uri"
	mentionSource = "app.bsky.feed.post:facets[app.bsky.richtext.facet].features[app.bsky.richtext.facet#mention].did"
	numLikes      = 130
	numLikers     = 65
)

// liker is the account of like i.
func liker(i int) string { return fmt.Sprintf("did:plc:liker%03d", i%numLikers) }

// likeRKey is the record key of like i; a later like is newer.
func likeRKey(i int) string { return fmt.Sprintf("like%04d", i) }

func seedLinks(t *testing.T, store storage.Store) {
	t.Helper()
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	strongRef := func(uri string) map[string]any {
		return map[string]any{"uri": uri, "cid": "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm"}
	}
	var ops []storage.RecordOp
	for i := range numLikes {
		ops = append(ops, storage.RecordOp{Record: storagetest.Rec(liker(i), "app.bsky.feed.like", likeRKey(i),
			base.Add(time.Duration(i)*time.Second), map[string]any{"subject": strongRef(likedPost)})})
	}
	for i := range 3 {
		ops = append(ops, storage.RecordOp{Record: storagetest.Rec(liker(i), "app.bsky.feed.like", fmt.Sprintf("other%d", i),
			base, map[string]any{"subject": strongRef(otherPost)})})
		ops = append(ops, storage.RecordOp{Record: storagetest.Rec(liker(i), "app.bsky.feed.repost", fmt.Sprintf("repost%d", i),
			base, map[string]any{"subject": strongRef(likedPost)})})
	}
	ops = append(ops, storage.RecordOp{Record: storagetest.Rec("did:plc:fan", "app.bsky.feed.post", "mention1", base,
		map[string]any{"text": "hi @author", "facets": []any{map[string]any{
			"$type": "app.bsky.richtext.facet", "index": map[string]any{"byteStart": 3, "byteEnd": 10},
			"features": []any{map[string]any{"$type": "app.bsky.richtext.facet#mention", "did": author}},
		}}})})
	if err := store.ApplyBatch(context.Background(), storage.Batch{Ops: ops}); err != nil {
		t.Fatal(err)
	}
}

// backlinksEnv calls the backlink methods of an instance as an API client.
type backlinksEnv struct {
	*testenv.Env
	key string
}

func (e backlinksEnv) call(t *testing.T, method string, params url.Values) testenv.Response {
	t.Helper()
	return e.Do(t, http.MethodGet, "/xrpc/blue.microcosm.links."+method+"?"+params.Encode(), nil, "X-Client-Key", e.key)
}

// fields decodes a JSON object answer and checks that it has exactly the
// given members.
func fields(t *testing.T, r testenv.Response, want ...string) map[string]json.RawMessage {
	t.Helper()
	if r.Status != http.StatusOK {
		t.Fatalf("status %d: %s", r.Status, r.Raw)
	}
	var m map[string]json.RawMessage
	r.JSON(t, &m)
	if got := slices.Sorted(maps.Keys(m)); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Fatalf("members %v, want %v: %s", got, want, r.Raw)
	}
	return m
}

// backlinksPage is getBacklinks' answer, its shape checked.
type backlinksPage struct {
	total   int64
	records []map[string]string
	cursor  *string
}

func getBacklinks(t *testing.T, e backlinksEnv, params url.Values) backlinksPage {
	t.Helper()
	m := fields(t, e.call(t, "getBacklinks", params), "total", "records", "cursor")
	var p backlinksPage
	if err := json.Unmarshal(m["total"], &p.total); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(m["records"], &p.records); err != nil || p.records == nil {
		t.Fatalf("records %s: %v", m["records"], err)
	}
	for _, r := range p.records {
		if len(r) != 3 || r["did"] == "" || r["collection"] == "" || r["rkey"] == "" {
			t.Fatalf("a record is not {did, collection, rkey}: %v", r)
		}
	}
	if err := json.Unmarshal(m["cursor"], &p.cursor); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBacklinks(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		store := open(t)
		env := testenv.New(t, store, appview.Config{})
		client, _ := env.NewClient(t, apiclients.NewClient{RateLimitCapacity: new(100000)})
		e := backlinksEnv{env, client.Key}
		seedLinks(t, store)
		likes := url.Values{"subject": {likedPost}, "source": {likeSource}}
		with := func(kv ...string) url.Values {
			v := maps.Clone(likes)
			for i := 0; i+1 < len(kv); i += 2 {
				v.Add(kv[i], kv[i+1])
			}
			return v
		}

		t.Run("first page", func(t *testing.T) {
			p := getBacklinks(t, e, likes)
			if p.total != numLikes || len(p.records) != storage.DefaultBacklinkLimit || p.cursor == nil || *p.cursor == "" {
				t.Fatalf("total %d, %d records, cursor %v", p.total, len(p.records), p.cursor)
			}
			if r := p.records[0]; r["did"] != liker(numLikes-1) || r["collection"] != "app.bsky.feed.like" || r["rkey"] != likeRKey(numLikes-1) {
				t.Fatalf("the newest like first, got %v", r)
			}
		})

		t.Run("paging past 100", func(t *testing.T) {
			var got []string
			params := with("limit", "100")
			for page := 0; ; page++ {
				if page > 2 {
					t.Fatal("the cursor does not end")
				}
				p := getBacklinks(t, e, params)
				if p.total != numLikes {
					t.Fatalf("page %d: total %d", page, p.total)
				}
				for _, r := range p.records {
					got = append(got, r["rkey"])
				}
				if p.cursor == nil {
					break
				}
				params.Set("cursor", *p.cursor)
			}
			var want []string
			for i := numLikes - 1; i >= 0; i-- {
				want = append(want, likeRKey(i))
			}
			if !slices.Equal(got, want) {
				t.Fatalf("paged %d records %v, want every like once, newest first", len(got), got)
			}
		})

		t.Run("did filter", func(t *testing.T) {
			// liker 1 and 2 liked twice each (likes 1, 2, 66, 67); did repeats
			// and blank values are dropped, as Constellation does.
			params := with("did", liker(1), "did", liker(2), "did", liker(1), "did", " ", "limit", "3")
			p := getBacklinks(t, e, params)
			if p.total != 4 || len(p.records) != 3 || p.cursor == nil {
				t.Fatalf("page 1: total %d, %d records, cursor %v", p.total, len(p.records), p.cursor)
			}
			params.Set("cursor", *p.cursor)
			p2 := getBacklinks(t, e, params)
			if p2.total != 4 || len(p2.records) != 1 || p2.cursor != nil {
				t.Fatalf("page 2: total %d, %d records, cursor %v", p2.total, len(p2.records), p2.cursor)
			}
			var rkeys []string
			for _, r := range append(p.records, p2.records...) {
				if r["did"] != liker(1) && r["did"] != liker(2) {
					t.Fatalf("a record of another account: %v", r)
				}
				rkeys = append(rkeys, r["rkey"])
			}
			if want := []string{likeRKey(67), likeRKey(66), likeRKey(2), likeRKey(1)}; !slices.Equal(rkeys, want) {
				t.Fatalf("rkeys %v, want %v", rkeys, want)
			}
		})

		t.Run("unknown did", func(t *testing.T) {
			r := e.call(t, "getBacklinks", with("did", "did:plc:nobody"))
			if string(r.Raw) != `{"total":0,"records":[],"cursor":null}` {
				t.Fatalf("%d %s", r.Status, r.Raw)
			}
		})

		t.Run("typed array path", func(t *testing.T) {
			p := getBacklinks(t, e, url.Values{"subject": {author}, "source": {mentionSource}})
			if p.total != 1 || len(p.records) != 1 || p.records[0]["did"] != "did:plc:fan" || p.records[0]["rkey"] != "mention1" || p.cursor != nil {
				t.Fatalf("mentions: %+v", p)
			}
		})

		t.Run("count", func(t *testing.T) {
			for _, tc := range []struct {
				params url.Values
				want   string
			}{
				{likes, fmt.Sprintf(`{"total":%d}`, numLikes)},
				{url.Values{"subject": {likedPost}, "source": {"app.bsky.feed.repost:subject.uri"}}, `{"total":3}`},
				{url.Values{"subject": {otherPost}, "source": {likeSource}}, `{"total":3}`},
				{url.Values{"subject": {"at://did:plc:nobody/app.bsky.feed.post/x"}, "source": {likeSource}}, `{"total":0}`},
			} {
				if r := e.call(t, "getBacklinksCount", tc.params); r.Status != 200 || string(r.Raw) != tc.want {
					t.Errorf("%v: %d %s, want %s", tc.params, r.Status, r.Raw, tc.want)
				}
			}
		})

		t.Run("distinct accounts", func(t *testing.T) {
			var got []string
			params := with("limit", "50")
			for page := 0; ; page++ {
				if page > 2 {
					t.Fatal("the cursor does not end")
				}
				m := fields(t, e.call(t, "getBacklinkDids", params), "total", "linking_dids", "cursor")
				var total int64
				var dids []string
				var cursor *string
				if json.Unmarshal(m["total"], &total) != nil || json.Unmarshal(m["linking_dids"], &dids) != nil ||
					json.Unmarshal(m["cursor"], &cursor) != nil || total != numLikers {
					t.Fatalf("page %d: %v", page, m)
				}
				got = append(got, dids...)
				if cursor == nil {
					break
				}
				params.Set("cursor", *cursor)
			}
			want := make([]string, numLikers)
			for i := range want {
				want[i] = liker(i)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("dids %v, want every liker once in DID order", got)
			}
			if r := e.call(t, "getBacklinkDids", likes); !strings.HasPrefix(string(r.Raw), fmt.Sprintf(`{"total":%d,"linking_dids":["%s",`, numLikers, liker(0))) {
				t.Fatalf("default page: %s", r.Raw)
			}
		})

		t.Run("refusals", func(t *testing.T) {
			for _, tc := range []struct {
				method string
				params url.Values
				want   string
			}{
				{"getBacklinks", url.Values{"source": {likeSource}}, "subject is required"},
				{"getBacklinks", url.Values{"subject": {"alice"}, "source": {likeSource}}, "subject must be an AT URI, a DID or a URI"},
				{"getBacklinks", url.Values{"subject": {likedPost}}, "source is required"},
				{"getBacklinks", url.Values{"subject": {likedPost}, "source": {"app.bsky.feed.like"}}, "source must be collection:path"},
				{"getBacklinks", url.Values{"subject": {likedPost}, "source": {"like:subject.uri"}}, "is not an NSID"},
				{"getBacklinks", with("limit", "0"), "limit must be an integer between 1 and 100"},
				{"getBacklinks", with("limit", "101"), "limit must be an integer between 1 and 100"},
				{"getBacklinks", with("limit", "ten"), "limit must be an integer between 1 and 100"},
				{"getBacklinks", with("cursor", "not-a-cursor"), "invalid"},
				{"getBacklinks", with("did", "alice"), `did "alice" is not a DID`},
				{"getBacklinksCount", url.Values{"subject": {likedPost}, "source": {"nope"}}, "source must be collection:path"},
				{"getBacklinksCount", url.Values{"source": {likeSource}}, "subject is required"},
				{"getBacklinkDids", with("limit", "101"), "limit must be an integer between 1 and 100"},
				{"getBacklinkDids", with("cursor", "not-a-cursor"), "invalid"},
			} {
				r := e.call(t, tc.method, tc.params)
				var body map[string]string
				r.JSON(t, &body)
				if r.Status != http.StatusBadRequest || len(body) != 1 || !strings.Contains(body["error"], tc.want) {
					t.Errorf("%s %v: %d %s, want 400 {\"error\": ...%s...}", tc.method, tc.params, r.Status, r.Raw, tc.want)
				}
			}
		})

		t.Run("client identification", func(t *testing.T) {
			r := env.Do(t, http.MethodGet, "/xrpc/blue.microcosm.links.getBacklinksCount?"+likes.Encode(), nil)
			if r.Status != http.StatusUnauthorized || r.Error(t) != "Missing client identification" {
				t.Fatalf("without a client key: %d %s", r.Status, r.Raw)
			}
			r = env.Do(t, http.MethodGet, "/xrpc/blue.microcosm.links.getBacklinksCount?"+likes.Encode()+"&client_key="+client.Key, nil)
			if r.Status != http.StatusOK {
				t.Fatalf("with client_key: %d %s", r.Status, r.Raw)
			}
			slow, _ := env.NewClient(t, apiclients.NewClient{RateLimitCapacity: new(2), RateLimitRefillRate: new(1e-6)})
			s := backlinksEnv{env, slow.Key}
			for i := range 2 {
				if r := s.call(t, "getBacklinksCount", likes); r.Status != http.StatusOK {
					t.Fatalf("call %d within the bucket: %d %s", i+1, r.Status, r.Raw)
				}
			}
			if r := s.call(t, "getBacklinks", likes); r.Status != http.StatusTooManyRequests {
				t.Fatalf("past the bucket: %d %s", r.Status, r.Raw)
			}
		})

		t.Run("other methods", func(t *testing.T) {
			r := env.Do(t, http.MethodPost, "/xrpc/blue.microcosm.links.getBacklinks?"+likes.Encode(), []byte("{}"), "X-Client-Key", client.Key)
			if r.Status != http.StatusNotFound || r.Error(t) != "method not found" {
				t.Fatalf("POST: %d %s", r.Status, r.Raw)
			}
			r = e.call(t, "getManyToManyCounts", likes)
			if r.Status != http.StatusNotFound || r.Error(t) != "method not found" {
				t.Fatalf("getManyToManyCounts: %d %s", r.Status, r.Raw)
			}
		})

		t.Run("an uploaded lexicon of the same NSID", func(t *testing.T) {
			res, err := env.App.Lexicons().Put(context.Background(), lexicon.Upload{
				Document: json.RawMessage(`{"lexicon":1,"id":"blue.microcosm.links.getBacklinksCount","defs":{"main":{"type":"query"}}}`),
				Script:   `function handle() return {hijacked = true} end`,
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "built-in method") {
				t.Fatalf("warnings %q", res.Warnings)
			}
			if r := e.call(t, "getBacklinksCount", likes); string(r.Raw) != fmt.Sprintf(`{"total":%d}`, numLikes) {
				t.Fatalf("the built-in must answer: %d %s", r.Status, r.Raw)
			}
		})
	})
}
