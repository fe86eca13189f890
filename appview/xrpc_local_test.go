package appview_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// TestScriptLocalCalls checks what docs/lua.md promises of xrpc.query and
// xrpc.procedure: the called method answers as over HTTP (the default
// list, a Go method handler, `method not found` for an unknown method or
// the wrong kind, `authentication required` for an anonymous procedure),
// the calls take no rate-limit token, and record scripts call with no
// caller.
func TestScriptLocalCalls(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		goMethod := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			did, ok := appview.CallerDID(r)
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"did": did, "known": ok, "x": r.URL.Query().Get("x")})
		})
		env := testenv.New(t, open(t), appview.Config{XRPCMethods: map[string]http.Handler{"app.test.go": goMethod}})
		ctx := context.Background()
		for _, up := range []lexicon.Upload{
			{Document: json.RawMessage(noteLexicon),
				IndexHook: `function handle()
					local p, perr, pstatus = xrpc.procedure("app.test.echo", {text = record.text})
					local q = xrpc.query("app.test.list", {})
					log("from a record script: " .. tostring(p) .. " " .. perr .. " " .. pstatus .. ", " .. #q.records .. " listed")
					return record
				end`},
			{Document: json.RawMessage(`{"lexicon":1,"id":"app.test.list","defs":{"main":{"type":"query"}}}`),
				TargetCollection: "app.test.note"},
			{Document: json.RawMessage(`{"lexicon":1,"id":"app.test.go","defs":{"main":{"type":"query"}}}`)},
			{Document: json.RawMessage(`{"lexicon":1,"id":"app.test.echo","defs":{"main":{"type":"procedure"}}}`),
				Script: `function handle() return {echo = input} end`},
			{Document: json.RawMessage(feedLexicon), TargetCollection: "app.test.note",
				Script: `function handle()
					local one = xrpc.query("app.test.list", {limit = "1"})
					local all = xrpc.query("app.test.list", {})
					local g, gerr, gstatus = xrpc.query("app.test.go", {x = "y"})
					local _, perr, pstatus = xrpc.procedure("app.test.echo", {v = 1})
					local _, kerr, kstatus = xrpc.procedure("app.test.list", {})
					local _, nerr, nstatus = xrpc.query("app.test.nothing", {})
					return {one = #one.records, all = #all.records, cursor = one.cursor ~= nil, go = g,
						procedure = {perr, pstatus}, kind = {kerr, kstatus}, missing = {nerr, nstatus}}
				end`},
		} {
			if _, err := env.App.Lexicons().Put(ctx, up); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := env.App.Writer().Write(ctx, "test", []storage.Change{
			noteChange("did:plc:alice", "3kaaa", "first"), noteChange("did:plc:alice", "3kbbb", "second"),
		}); err != nil {
			t.Fatal(err)
		}
		// One token, refilled once a day: the second request is refused,
		// so the first one's nested calls took none.
		refill := 1.0 / 86400
		client, _ := env.NewClient(t, apiclients.NewClient{RateLimitCapacity: ptr(1), RateLimitRefillRate: &refill})

		r := env.Do(t, "GET", "/xrpc/app.test.feed", nil, "X-Client-Key", client.Key)
		if r.Status != 200 {
			t.Fatalf("scripted query: %d %s", r.Status, r.Raw)
		}
		var got struct {
			One, All  int
			Cursor    bool
			Go        map[string]any
			Procedure []any
			Kind      []any
			Missing   []any
		}
		r.JSON(t, &got)
		if got.One != 1 || got.All != 2 || !got.Cursor {
			t.Errorf("default list through xrpc.query: %s", r.Raw)
		}
		if got.Go["did"] != "" || got.Go["known"] != false || got.Go["x"] != "y" {
			t.Errorf("Go method through xrpc.query: %s", r.Raw)
		}
		for _, tc := range []struct {
			name string
			got  []any
			want string
		}{
			{"anonymous procedure", got.Procedure, "[authentication required 401]"},
			{"query as a procedure", got.Kind, "[method not found 404]"},
			{"unknown method", got.Missing, "[method not found 404]"},
		} {
			if fmt.Sprint(tc.got) != tc.want {
				t.Errorf("%s: %v, want %s", tc.name, tc.got, tc.want)
			}
		}
		if r := env.Do(t, "GET", "/xrpc/app.test.feed", nil, "X-Client-Key", client.Key); r.Status != 429 {
			t.Fatalf("the client's one token was not spent: %d %s", r.Status, r.Raw)
		}

		// Record scripts call with no caller: procedures are refused,
		// queries run anonymously.
		admin := env.Bootstrap(t)
		details := eventDetails(t, admin, "event_type=script.log")
		if len(details) == 0 {
			t.Fatal("the record script logged nothing")
		}
		for _, d := range details {
			if msg, _ := d["message"].(string); !strings.HasPrefix(msg, "from a record script: nil authentication required 401, ") {
				t.Errorf("record script's calls: %q", msg)
			}
		}
	})
}
