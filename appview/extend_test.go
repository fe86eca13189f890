package appview_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// A Go method handler answers its method after client identification,
// instead of a Lua script or the default behaviour; procedures still need
// an authenticated user.
func TestGoXRPCMethods(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			did, ok := appview.CallerDID(r)
			if !ok {
				did = "anonymous"
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]string{"caller": did, "name": r.URL.Query().Get("name")})
		})
		env := testenv.New(t, open(t), appview.Config{XRPCMethods: map[string]http.Handler{
			"app.test.hello": hello, "app.test.poke": hello, "app.test.unrouted": hello,
		}})
		ctx := context.Background()
		for _, up := range []lexicon.Upload{
			{Document: json.RawMessage(`{"lexicon":1,"id":"app.test.hello","defs":{"main":{"type":"query"}}}`),
				Script: `function handle() return {from = "lua"} end`},
			{Document: json.RawMessage(`{"lexicon":1,"id":"app.test.poke","defs":{"main":{"type":"procedure"}}}`)},
		} {
			if _, err := env.App.Lexicons().Put(ctx, up); err != nil {
				t.Fatal(err)
			}
		}
		client, _ := env.NewClient(t, apiclients.NewClient{})

		r := env.Do(t, "GET", "/xrpc/app.test.hello?name=ada", nil, "X-Client-Key", client.Key)
		if r.Status != 200 || r.Object(t)["caller"] != "anonymous" || r.Object(t)["name"] != "ada" {
			t.Fatalf("Go method (over the lexicon's Lua script): %d %s", r.Status, r.Raw)
		}
		if r := env.Do(t, "GET", "/xrpc/app.test.hello", nil); r.Status != 401 {
			t.Fatalf("without a client key: %d %s", r.Status, r.Raw)
		}
		if r := env.Do(t, "POST", "/xrpc/app.test.poke", map[string]any{}, "X-Client-Key", client.Key); r.Status != 401 || r.Error(t) != "authentication required" {
			t.Fatalf("anonymous procedure: %d %s", r.Status, r.Raw)
		}
		if r := env.Do(t, "GET", "/xrpc/app.test.unrouted", nil, "X-Client-Key", client.Key); r.Status != 404 {
			t.Fatalf("a Go method without its lexicon: %d %s", r.Status, r.Raw)
		}
	})
}

// Go record hooks run in the writer on every change, in order: they can
// rewrite a record and skip a change.
func TestGoRecordHooks(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		var seen []string
		shout := func(_ context.Context, c *storage.Change) bool {
			seen = append(seen, c.RKey)
			c.Record = bytes.ReplaceAll(c.Record, []byte("hello"), []byte("HELLO"))
			return true
		}
		skipDrafts := func(_ context.Context, c *storage.Change) bool {
			return !bytes.Contains(c.Record, []byte("draft"))
		}
		env := testenv.New(t, open(t), appview.Config{RecordHooks: []appview.RecordHook{shout, skipDrafts}})
		ctx := context.Background()
		doc := `{"lexicon":1,"id":"app.test.note","defs":{"main":{"type":"record","key":"tid","record":{"type":"object","properties":{"text":{"type":"string"}}}}}}`
		if _, err := env.App.Lexicons().Put(ctx, lexicon.Upload{Document: json.RawMessage(doc), Backfill: new(false)}); err != nil {
			t.Fatal(err)
		}
		note := func(rkey, text string) storage.Change {
			return storage.Change{Op: storage.OpCreate, DID: "did:plc:hooks", Collection: "app.test.note", RKey: rkey,
				CID: "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm", Record: json.RawMessage(`{"text":"` + text + `"}`)}
		}
		res, err := env.App.Writer().Write(ctx, "test", []storage.Change{note("3kaaaaaaaaaa2", "hello"), note("3kaaaaaaaaaa3", "a draft")})
		if err != nil || res.Accepted != 2 {
			t.Fatalf("write: %+v %v", res, err)
		}
		got, err := env.Store.GetRecord(ctx, "at://did:plc:hooks/app.test.note/3kaaaaaaaaaa2")
		var rec struct{ Text string }
		if err != nil || json.Unmarshal(got.Value, &rec) != nil || rec.Text != "HELLO" {
			t.Fatalf("rewritten record: %s %v", got.Value, err)
		}
		if _, err := env.Store.GetRecord(ctx, "at://did:plc:hooks/app.test.note/3kaaaaaaaaaa3"); err != storage.ErrNotFound {
			t.Fatalf("skipped record: %v", err)
		}
		if len(seen) != 2 {
			t.Fatalf("first hook saw %v", seen)
		}
	})
}
