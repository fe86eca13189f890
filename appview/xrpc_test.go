package appview_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/bluesky-social/indigo/atproto/identity"
	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

type testEnv struct {
	app *appview.App
	url string
	key string // an API client key
}

// newEnv starts an instance whose PLC stand-in knows the given DIDs, each
// hosted on pds.
func newEnv(t *testing.T, store storage.Store, pds string, dids ...string) *testEnv {
	t.Helper()
	env := testenv.New(t, store, appview.Config{})
	for _, did := range dids {
		env.PLC.Register(did, strings.TrimPrefix(did, "did:plc:")+".test", pds)
	}
	client, _ := env.NewClient(t, apiclients.NewClient{RateLimitCapacity: ptr(100000)})
	return &testEnv{app: env.App, url: env.URL, key: client.Key}
}

func ptr[T any](v T) *T { return &v }

func (e *testEnv) putLexicon(t *testing.T, doc string, target string) *lexicon.Lexicon {
	t.Helper()
	res, err := e.app.Lexicons().Put(context.Background(), lexicon.Upload{Document: json.RawMessage(doc), TargetCollection: target})
	if err != nil {
		t.Fatalf("put lexicon: %v", err)
	}
	return res.Lexicon
}

// call makes a request with a client key and decodes the JSON answer.
func (e *testEnv) call(t *testing.T, method, path string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, e.url+path, nil)
	req.Header.Set("X-Client-Key", e.key)
	return do(t, req)
}

func do(t *testing.T, req *http.Request) (int, map[string]any) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatalf("%s %s: body is not a JSON object (%d): %q", req.Method, req.URL, resp.StatusCode, body)
	}
	return resp.StatusCode, out
}

const (
	postLexicon = `{"lexicon":1,"id":"app.test.post","defs":{"main":{"type":"record","key":"tid","record":{"type":"object","properties":{"text":{"type":"string"},"image":{"type":"blob"}}}}}}`
	listLexicon = `{"lexicon":1,"id":"app.test.listPosts","defs":{"main":{"type":"query","parameters":{"type":"params","properties":{"limit":{"type":"integer"}}}}}}`
	bareQuery   = `{"lexicon":1,"id":"app.test.noTarget","defs":{"main":{"type":"query"}}}`
	procLexicon = `{"lexicon":1,"id":"app.test.createPost","defs":{"main":{"type":"procedure","input":{"encoding":"application/json"}}}}`
)

func seed(t *testing.T, s storage.Store, n int, dids ...string) []storage.Record {
	t.Helper()
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	var ops []storage.RecordOp
	var recs []storage.Record
	for i := range n {
		r := storagetest.Rec(dids[i%len(dids)], "app.test.post", fmt.Sprintf("3k%05d", i), base.Add(time.Duration(i)*time.Second),
			map[string]any{"text": fmt.Sprintf("post %d", i)})
		ops = append(ops, storage.RecordOp{Record: r})
		recs = append(recs, r)
	}
	if err := s.ApplyBatch(context.Background(), storage.Batch{Ops: ops}); err != nil {
		t.Fatal(err)
	}
	return recs
}

func TestDefaultQueries(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		store := open(t)
		env := newEnv(t, store, "https://pds.example.com")
		env.putLexicon(t, postLexicon, "")
		env.putLexicon(t, listLexicon, "app.test.post")
		env.putLexicon(t, bareQuery, "")
		env.putLexicon(t, procLexicon, "app.test.post")
		recs := seed(t, store, 45, "did:plc:alice", "did:plc:bob", "did:plc:carol")

		t.Run("health", func(t *testing.T) {
			resp, err := http.Get(env.url + "/health")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || string(body) != "ok" {
				t.Fatalf("health: %d %q", resp.StatusCode, body)
			}
		})

		t.Run("list pages newest first", func(t *testing.T) {
			var got []string
			path := "/xrpc/app.test.listPosts"
			for page := 0; ; page++ {
				status, body := env.call(t, "GET", path)
				if status != 200 {
					t.Fatalf("page %d: %d %v", page, status, body)
				}
				records := body["records"].([]any)
				if page == 0 && len(records) != 20 {
					t.Fatalf("default page size: %d", len(records))
				}
				for _, r := range records {
					m := r.(map[string]any)
					if m["$type"] != "app.test.post" || m["text"] == nil || m["cid"] != recs[0].CID {
						t.Fatalf("record fields missing: %v", m)
					}
					got = append(got, m["uri"].(string))
				}
				cursor, has := body["cursor"]
				if !has {
					break
				}
				path = "/xrpc/app.test.listPosts?cursor=" + url.QueryEscape(cursor.(string))
			}
			if len(got) != len(recs) {
				t.Fatalf("listed %d of %d records", len(got), len(recs))
			}
			for i, uri := range got {
				if want := recs[len(recs)-1-i].URI; uri != want {
					t.Fatalf("position %d: %s, want %s", i, uri, want)
				}
			}
		})

		t.Run("limit and did filter", func(t *testing.T) {
			status, body := env.call(t, "GET", "/xrpc/app.test.listPosts?limit=100&did=did:plc:bob")
			if status != 200 {
				t.Fatalf("%d %v", status, body)
			}
			records := body["records"].([]any)
			if len(records) != 15 {
				t.Fatalf("bob has 15 records, got %d", len(records))
			}
			for _, r := range records {
				if !strings.HasPrefix(r.(map[string]any)["uri"].(string), "at://did:plc:bob/") {
					t.Fatalf("did filter leaked %v", r)
				}
			}
			if _, has := body["cursor"]; has {
				t.Fatal("cursor present on the last page")
			}
			status, body = env.call(t, "GET", "/xrpc/app.test.listPosts?limit=5&did=did:plc:bob")
			if status != 200 || len(body["records"].([]any)) != 5 || body["cursor"] == nil {
				t.Fatalf("limit=5: %d %v", status, body)
			}
			// The cursor belongs to bob's listing; it is foreign to alice's.
			foreign := url.QueryEscape(body["cursor"].(string))
			status, body = env.call(t, "GET", "/xrpc/app.test.listPosts?did=did:plc:alice&cursor="+foreign)
			if status != 400 || body["error"] != "invalid cursor" {
				t.Fatalf("foreign cursor: %d %v", status, body)
			}
		})

		t.Run("bad list parameters", func(t *testing.T) {
			for _, q := range []string{"limit=0", "limit=101", "limit=abc", "limit=1.5", "limit=", "limit=-3",
				"did=notadid", "did=", "cursor=%%%", "cursor=AAAA", "cursor=" + strings.Repeat("x", 2000)} {
				status, body := env.call(t, "GET", "/xrpc/app.test.listPosts?"+q)
				if status != 400 || body["error"] == nil || body["error"] == "" {
					t.Errorf("%s: %d %v", q, status, body)
				}
			}
		})

		t.Run("single record", func(t *testing.T) {
			r := recs[7]
			status, body := env.call(t, "GET", "/xrpc/app.test.listPosts?uri="+url.QueryEscape(r.URI))
			if status != 200 {
				t.Fatalf("%d %v", status, body)
			}
			rec := body["record"].(map[string]any)
			if rec["uri"] != r.URI || rec["cid"] != r.CID || rec["$type"] != "app.test.post" || rec["text"] != "post 7" {
				t.Fatalf("record: %v", rec)
			}
			for q, want := range map[string]int{
				"uri=at://did:plc:alice/app.test.post/nope":  404,
				"uri=at://did:plc:alice/app.test.other/3k00": 404,
				"uri=not-a-uri":                        400,
				"uri=at://did:plc:alice":               400,
				"uri=at://did:plc:alice/app.test.post": 400,
			} {
				status, body := env.call(t, "GET", "/xrpc/app.test.listPosts?"+q)
				if status != want || body["error"] == nil {
					t.Errorf("%s: %d %v, want %d", q, status, body, want)
				}
			}
		})

		t.Run("routing", func(t *testing.T) {
			for _, c := range []struct {
				method, path string
				status       int
				err          string
			}{
				{"GET", "/xrpc/app.test.unknown", 404, "method not found"},
				{"GET", "/xrpc/app.test.post", 404, "method not found"},         // record lexicon
				{"POST", "/xrpc/app.test.listPosts", 404, "method not found"},   // query via POST
				{"GET", "/xrpc/app.test.createPost", 404, "method not found"},   // procedure via GET
				{"DELETE", "/xrpc/app.test.listPosts", 404, "method not found"}, // no such method
				{"POST", "/xrpc/app.test.createPost", 401, "authentication required"},
				{"GET", "/nowhere", 404, "not found"},
			} {
				status, body := env.call(t, c.method, c.path)
				if status != c.status || body["error"] != c.err {
					t.Errorf("%s %s: %d %v, want %d %q", c.method, c.path, status, body, c.status, c.err)
				}
			}
			status, body := env.call(t, "GET", "/xrpc/app.test.noTarget?limit=3")
			if status != 200 || len(body["records"].([]any)) != 0 {
				t.Fatalf("query without target_collection: %d %v", status, body)
			}
		})

		t.Run("client identification", func(t *testing.T) {
			req, _ := http.NewRequest("GET", env.url+"/xrpc/app.test.listPosts", nil)
			status, body := do(t, req)
			if status != 401 || body["error"] != "Missing client identification" {
				t.Fatalf("no key: %d %v", status, body)
			}
			req, _ = http.NewRequest("GET", env.url+"/xrpc/app.test.listPosts?limit=1&client_key="+env.key, nil)
			if status, body = do(t, req); status != 200 {
				t.Fatalf("client_key parameter: %d %v", status, body)
			}
			req, _ = http.NewRequest("GET", env.url+"/xrpc/app.test.listPosts?limit=1", nil)
			req.Header.Set("X-Client-Key", env.key)
			req.Header.Set("Authorization", "Bearer hv_someadminkey")
			if status, body = do(t, req); status != 401 || body["error"] == nil {
				t.Fatalf("admin key on XRPC: %d %v", status, body)
			}
			req, _ = http.NewRequest("GET", env.url+"/xrpc/app.test.listPosts?limit=1", nil)
			req.Header.Set("X-Client-Key", "hvc_unknown")
			if status, body = do(t, req); status != 401 || body["error"] != "Invalid client" {
				t.Fatalf("unknown key: %d %v", status, body)
			}
		})

		t.Run("routes follow the registry", func(t *testing.T) {
			env.putLexicon(t, `{"lexicon":1,"id":"app.test.later","defs":{"main":{"type":"query"}}}`, "app.test.post")
			if status, body := env.call(t, "GET", "/xrpc/app.test.later?limit=1"); status != 200 {
				t.Fatalf("new route: %d %v", status, body)
			}
			if err := env.app.Lexicons().Delete(context.Background(), "app.test.later"); err != nil {
				t.Fatal(err)
			}
			if status, _ := env.call(t, "GET", "/xrpc/app.test.later"); status != 404 {
				t.Fatalf("deleted route answers %d", status)
			}
		})
	})
}

func TestBlobURLsAndHandles(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		store := open(t)
		env := newEnv(t, store, "https://pds.alice.test/", "did:plc:alice")
		env.putLexicon(t, postLexicon, "")
		env.putLexicon(t, listLexicon, "app.test.post")
		cid := "bafkreibme22gw2h7y2h7tg2fhqotaqjucnbc24deqo72b6mkl2egezxhvy"
		blob := map[string]any{"$type": "blob", "ref": map[string]any{"$link": cid}, "mimeType": "image/png", "size": 1234}
		withBlob := storagetest.Rec("did:plc:alice", "app.test.post", "3kblob", time.Now(), map[string]any{
			"image": blob, "gallery": []any{map[string]any{"cid": cid, "mimeType": "image/jpeg"}},
		})
		noDoc := storagetest.Rec("did:plc:ghost", "app.test.post", "3kghost", time.Now(), map[string]any{"image": blob})
		if err := store.ApplyBatch(context.Background(), storage.Batch{Ops: []storage.RecordOp{{Record: withBlob}, {Record: noDoc}}}); err != nil {
			t.Fatal(err)
		}
		status, body := env.call(t, "GET", "/xrpc/app.test.listPosts?uri="+url.QueryEscape(withBlob.URI))
		if status != 200 {
			t.Fatalf("%d %v", status, body)
		}
		rec := body["record"].(map[string]any)
		want := "https://pds.alice.test/xrpc/com.atproto.sync.getBlob?did=did%3Aplc%3Aalice&cid=" + cid
		if got := rec["image"].(map[string]any)["url"]; got != want {
			t.Fatalf("blob url = %v, want %s", got, want)
		}
		if got := rec["gallery"].([]any)[0].(map[string]any)["url"]; got != want {
			t.Fatalf("legacy blob url = %v", got)
		}
		if size := rec["image"].(map[string]any)["size"]; size != float64(1234) {
			t.Fatalf("blob size changed: %v", size)
		}
		// An unresolvable author keeps the blob without a url.
		status, body = env.call(t, "GET", "/xrpc/app.test.listPosts?uri="+url.QueryEscape(noDoc.URI))
		if status != 200 {
			t.Fatalf("%d %v", status, body)
		}
		if _, has := body["record"].(map[string]any)["image"].(map[string]any)["url"]; has {
			t.Fatal("url invented for an unresolvable DID")
		}
		// The list view links blobs too.
		status, body = env.call(t, "GET", "/xrpc/app.test.listPosts?did=did:plc:alice")
		if status != 200 || body["records"].([]any)[0].(map[string]any)["image"].(map[string]any)["url"] != want {
			t.Fatalf("list blob url: %d %v", status, body)
		}
	})
}

// failingDirectory fails every handle look-up as an unreachable resolver
// would.
type failingDirectory struct{ *identity.MockDirectory }

func (failingDirectory) LookupHandle(context.Context, syntax.Handle) (*identity.Identity, error) {
	return nil, fmt.Errorf("%w: dns: i/o timeout", identity.ErrHandleResolutionFailed)
}

// TestQueriesByHandle: `uri` and `did` name accounts by DID or handle; a
// handle that resolves to nothing, or could not be resolved, says so.
func TestQueriesByHandle(t *testing.T) {
	t.Parallel()
	dir := identity.NewMockDirectory()
	dir.Insert(identity.Identity{DID: "did:plc:alice", Handle: "alice.test"})
	env := testenv.New(t, storagetest.SQLite(t), appview.Config{Network: appview.NetworkConfig{Directory: dir}})
	client, _ := env.NewClient(t, apiclients.NewClient{})
	for _, up := range []string{postLexicon, listLexicon} {
		target := ""
		if up == listLexicon {
			target = "app.test.post"
		}
		if _, err := env.App.Lexicons().Put(context.Background(), lexicon.Upload{Document: json.RawMessage(up), TargetCollection: target}); err != nil {
			t.Fatal(err)
		}
	}
	rec := storagetest.Rec("did:plc:alice", "app.test.post", "3kalice", time.Now(), map[string]any{"text": "hi"})
	if err := env.Store.ApplyBatch(context.Background(), storage.Batch{Ops: []storage.RecordOp{{Record: rec}}}); err != nil {
		t.Fatal(err)
	}
	get := func(query string) testenv.Response {
		return env.Do(t, "GET", "/xrpc/app.test.listPosts?"+query, nil, "X-Client-Key", client.Key)
	}
	if r := get("uri=" + url.QueryEscape("at://alice.test/app.test.post/3kalice")); r.Status != 200 {
		t.Fatalf("uri by handle: %d %s", r.Status, r.Raw)
	}
	var page struct{ Records []map[string]any }
	if r := get("did=alice.test"); r.Status != 200 {
		t.Fatalf("did= by handle: %d %s", r.Status, r.Raw)
	} else if r.JSON(t, &page); len(page.Records) != 1 || page.Records[0]["uri"] != rec.URI {
		t.Fatalf("did= by handle: %s", r.Raw)
	}
	for _, q := range []string{"uri=" + url.QueryEscape("at://nobody.test/app.test.post/3kalice"), "did=nobody.test"} {
		if r := get(q); r.Status != 400 || r.Error(t) != "handle nobody.test does not resolve to a DID" {
			t.Errorf("%s: %d %s", q, r.Status, r.Raw)
		}
	}
	if r := get("did=not%20a%20handle"); r.Status != 400 || r.Error(t) != "invalid did" {
		t.Errorf("malformed did=: %d %s", r.Status, r.Raw)
	}

	down := testenv.New(t, storagetest.SQLite(t), appview.Config{Network: appview.NetworkConfig{Directory: failingDirectory{dir}}})
	downClient, _ := down.NewClient(t, apiclients.NewClient{})
	if _, err := down.App.Lexicons().Put(context.Background(), lexicon.Upload{Document: json.RawMessage(postLexicon)}); err != nil {
		t.Fatal(err)
	}
	if _, err := down.App.Lexicons().Put(context.Background(), lexicon.Upload{Document: json.RawMessage(listLexicon), TargetCollection: "app.test.post"}); err != nil {
		t.Fatal(err)
	}
	if r := down.Do(t, "GET", "/xrpc/app.test.listPosts?did=alice.test", nil, "X-Client-Key", downClient.Key); r.Status != 500 ||
		r.Error(t) != "handle alice.test could not be resolved" {
		t.Errorf("resolver down: %d %s", r.Status, r.Raw)
	}
}
