package appview_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

const (
	// searchLexicon is a scripted query declaring parameters of each kind.
	searchLexicon = `{"lexicon":1,"id":"app.test.search","defs":{"main":{"type":"query","parameters":{"type":"params",
		"required":["q"],"properties":{
		"q":{"type":"string","maxGraphemes":10},
		"limit":{"type":"integer","minimum":1,"maximum":50},
		"sort":{"type":"string","enum":["new","top"]},
		"tags":{"type":"array","items":{"type":"string"},"maxLength":2},
		"since":{"type":"string","format":"datetime"},
		"actor":{"type":"string","format":"at-identifier"},
		"mine":{"type":"boolean"}}}}}}`
	// paramsListLexicon is a default query declaring the default query's own
	// parameters, with other constraints, and one of its own.
	paramsListLexicon = `{"lexicon":1,"id":"app.test.list","defs":{"main":{"type":"query","parameters":{"type":"params",
		"required":["tag"],"properties":{
		"tag":{"type":"string","knownValues":["a"]},
		"limit":{"type":"integer","maximum":5},
		"did":{"type":"string","format":"handle"}}}}}}`
)

// TestXRPCParams: a method's declared parameters are checked before it
// runs, over HTTP and from a script's xrpc.query: a refused call answers
// 400 naming the parameter and does not run the script; undeclared
// parameters pass, and the script sees every parameter as a string. The
// default query keeps the interface's answers for its own parameters.
func TestXRPCParams(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		e := newScriptEnv(t, open(t))
		e.seed(t, 8)
		for _, up := range []lexicon.Upload{
			{Document: json.RawMessage(searchLexicon), TargetCollection: "app.test.note"},
			{Document: json.RawMessage(paramsListLexicon), TargetCollection: "app.test.note"},
		} {
			if _, err := e.App.Lexicons().Put(context.Background(), up); err != nil {
				t.Fatal(err)
			}
		}
		e.setScript(t, "xrpc.query:app.test.search", `function handle()
			log("search ran for " .. params.q)
			return {q = params.q, limit = params.limit, limit_type = type(params.limit), tags = params.tags,
				all_tags = param_values("tags"), none = param_values("none"), mine = params.mine, extra = params.extra}
		end`)
		e.setScript(t, "xrpc.query:app.test.feed", `function handle()
			local ok = xrpc.query("app.test.search", {q = "local", limit = 3})
			local bad, err, status = xrpc.query("app.test.search", {q = "local", limit = "abc"})
			local two = xrpc.query("app.test.search", {q = "two", tags = {"a", "b"}})
			local _, many = xrpc.query("app.test.search", {q = "many", tags = {"a", "b", "c"}})
			local _, keyed = pcall(xrpc.query, "app.test.search", {q = {a = 1}})
			return {ok = ok.limit, bad = bad == nil, err = err, status = status, two = two.tags, many = many,
				keyed = string.find(tostring(keyed), "a table must be a non%-empty list of values") ~= nil}
		end`)

		r := e.get(t, "/xrpc/app.test.search?q=hi&limit=5&tags=a&tags=b&since=2024-01-02T03:04:05Z&actor=alice.test&mine=true&extra=x")
		if r.Status != 200 {
			t.Fatalf("valid call: %d %s", r.Status, r.Raw)
		}
		if got := string(r.Raw); !strings.Contains(got, `"q":"hi"`) || !strings.Contains(got, `"limit":"5"`) ||
			!strings.Contains(got, `"limit_type":"string"`) || !strings.Contains(got, `"tags":"a"`) ||
			!strings.Contains(got, `"mine":"true"`) || !strings.Contains(got, `"extra":"x"`) ||
			!strings.Contains(got, `"all_tags":["a","b"]`) || !strings.Contains(got, `"none":[]`) {
			t.Errorf("the script's params (strings, first values, undeclared ones kept): %s", got)
		}
		for _, tc := range []struct{ query, err string }{
			{"limit=5", "missing required parameter q"},
			{"q=hi&limit=abc", "invalid parameter limit: must be an integer"},
			{"q=hi&limit=0", "invalid parameter limit: must be at least 1"},
			{"q=hi&limit=51", "invalid parameter limit: must be at most 50"},
			{"q=" + url.QueryEscape("eleven char"), "invalid parameter q: must be at most 10 characters long"},
			{"q=hi&sort=old", `invalid parameter sort: must be one of "new", "top"`},
			{"q=hi&tags=a&tags=b&tags=c", "invalid parameter tags: must be given at most 2 times"},
			{"q=hi&since=yesterday", "invalid parameter since: must be a valid datetime"},
			{"q=hi&actor=" + url.QueryEscape("not an actor"), "invalid parameter actor: must be a valid at-identifier"},
			{"q=hi&mine=yes", "invalid parameter mine: must be true or false"},
		} {
			r := e.get(t, "/xrpc/app.test.search?"+tc.query)
			if r.Status != 400 || string(r.Raw) != `{"error":`+jsonString(tc.err)+`}` {
				t.Errorf("%s: %d %s, want 400 %q", tc.query, r.Status, r.Raw, tc.err)
			}
		}

		// A script's in-process call is checked the same way.
		r = e.get(t, "/xrpc/app.test.feed")
		if string(r.Raw) != `{"bad":true,"err":"invalid parameter limit: must be an integer","keyed":true,`+
			`"many":"invalid parameter tags: must be given at most 2 times","ok":"3","status":400,"two":"a"}` {
			t.Errorf("xrpc.query from a script: %d %s", r.Status, r.Raw)
		}

		// The script ran for the two valid calls only.
		ran := []string{}
		for _, d := range eventDetails(t, e.admin, "event_type=script.log&subject=xrpc.query:app.test.search") {
			ran = append(ran, fmt.Sprint(d["message"]))
		}
		if got := strings.Join(ran, "|"); got != "search ran for two|search ran for local|search ran for hi" {
			t.Errorf("the script ran: %q", got)
		}

		// The default query: its own parameters keep the interface's
		// answers whatever the lexicon declares; the others are checked.
		for _, tc := range []struct {
			query  string
			status int
			err    string
		}{
			{"tag=a&limit=8&other=1", 200, ""},
			{"tag=b&did=" + e.did, 200, ""},
			{"limit=2", 400, "missing required parameter tag"},
			{"tag=a&limit=500", 400, "limit must be an integer between 1 and 100"},
			{"tag=a&did=nope", 400, "invalid did"},
			{"tag=a&cursor=nope", 400, "invalid cursor"},
		} {
			r := e.get(t, "/xrpc/app.test.list?"+tc.query)
			if r.Status != tc.status || (tc.err != "" && r.Error(t) != tc.err) {
				t.Errorf("default query %s: %d %s, want %d %q", tc.query, r.Status, r.Raw, tc.status, tc.err)
			}
		}
		var page struct {
			Records []any `json:"records"`
		}
		e.get(t, "/xrpc/app.test.list?tag=a&limit=8").JSON(t, &page)
		if len(page.Records) != 8 {
			t.Errorf("default query limit=8 (the lexicon's maximum 5 is not the interface's): %d records", len(page.Records))
		}
	})
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
