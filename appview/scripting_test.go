package appview_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
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

// scriptEnv is a started instance with a note collection, a feed query
// over it, an admin and an API client.
type scriptEnv struct {
	*testenv.Env
	admin *testenv.Admin
	key   string
	did   string
}

const (
	noteLexicon = `{"lexicon":1,"id":"app.test.note","defs":{"main":{"type":"record","key":"tid","record":{"type":"object","required":["text"],"properties":{"text":{"type":"string"},"likes":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}}}}}}}`
	feedLexicon = `{"lexicon":1,"id":"app.test.feed","defs":{"main":{"type":"query"}}}`
)

func newScriptEnv(t testing.TB, store storage.Store) *scriptEnv {
	t.Helper()
	env := testenv.New(t, store, appview.Config{})
	ctx := context.Background()
	for _, up := range []lexicon.Upload{
		{Document: json.RawMessage(noteLexicon)},
		{Document: json.RawMessage(feedLexicon), TargetCollection: "app.test.note"},
		{Document: json.RawMessage(`{"lexicon":1,"id":"app.test.count","defs":{"main":{"type":"query"}}}`), TargetCollection: "app.test.note"},
	} {
		if _, err := env.App.Lexicons().Put(ctx, up); err != nil {
			t.Fatal(err)
		}
	}
	client, _ := env.NewClient(t, apiclients.NewClient{RateLimitCapacity: ptr(100000)})
	return &scriptEnv{Env: env, admin: env.Bootstrap(t), key: client.Key, did: "did:plc:scriptauthor"}
}

// seed indexes n notes through the batch writer: note i has likes i and
// text "note i".
func (e *scriptEnv) seed(t *testing.T, n int) {
	t.Helper()
	var changes []storage.Change
	for i := 1; i <= n; i++ {
		rec, _ := json.Marshal(map[string]any{"$type": "app.test.note", "text": fmt.Sprintf("note %d", i), "likes": i,
			"tags": []string{"t" + fmt.Sprint(i%3)}})
		changes = append(changes, storage.Change{Op: storage.OpCreate, DID: e.did, Collection: "app.test.note",
			RKey: fmt.Sprintf("3k%05d", i), CID: fmt.Sprintf("bafyreinote%d", i), Record: rec})
	}
	if _, err := e.App.Writer().Write(context.Background(), "test", changes); err != nil {
		t.Fatal(err)
	}
}

// eventDetails is the detail of each event GET /admin/events lists for
// query (its query string), newest first.
func eventDetails(t testing.TB, admin *testenv.Admin, query string) []map[string]any {
	t.Helper()
	var events struct {
		Events []struct {
			Detail map[string]any `json:"detail"`
		} `json:"events"`
	}
	admin.Do(t, "GET", "/admin/events?"+query, nil).JSON(t, &events)
	out := make([]map[string]any, len(events.Events))
	for i, ev := range events.Events {
		out[i] = ev.Detail
	}
	return out
}

// setScript installs a trigger-keyed script through the admin API.
func (e *scriptEnv) setScript(t testing.TB, trigger, source string) {
	t.Helper()
	r := e.admin.Do(t, "POST", "/admin/scripts", map[string]any{"trigger": trigger, "source": source})
	if r.Status != 200 && r.Status != 201 {
		t.Fatalf("install %s: %d %s", trigger, r.Status, r.Raw)
	}
}

func (e *scriptEnv) get(t *testing.T, path string) testenv.Response {
	t.Helper()
	return e.Do(t, "GET", path, nil, "X-Client-Key", e.key)
}

// TestScriptGlobals exercises every read-side global of a query script
// against real storage.
func TestScriptGlobals(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		e := newScriptEnv(t, open(t))
		e.seed(t, 30)
		if r := e.admin.Do(t, "POST", "/admin/script-variables", map[string]any{"key": "greeting", "value": "s3cret"}); r.Status != 200 {
			t.Fatalf("set variable: %d %s", r.Status, r.Raw)
		}
		e.setScript(t, "xrpc.query:app.test.count", `function handle()
			return {n = db.count{filter = {field = "likes", op = ">", value = tonumber(params.min or "0")}}}
		end`)
		e.setScript(t, "xrpc.query:app.test.feed", `function handle()
			local page = db.query{
				limit = 5, sort = "likes", sortDirection = "desc",
				filter = {AND = {
					{field = "likes", op = ">=", value = 10},
					{OR = {{field = "tags[0]", value = "t1"}, {field = "text", op = "LIKE", value = "NOTE 2%"}}},
				}},
			}
			local second = db.query{limit = 5, sort = "likes", sortDirection = "desc", cursor = page.cursor,
				filter = {AND = {{field = "likes", op = ">=", value = 10}, {OR = {{field = "tags[0]", value = "t1"}, {field = "text", op = "LIKE", value = "NOTE 2%"}}}}}}
			local likes = {}
			for _, r in ipairs(page.records) do likes[#likes + 1] = r.likes end
			for _, r in ipairs(second.records) do likes[#likes + 1] = r.likes end
			local first = page.records[1]
			local one = db.get(first.uri)
			local loaded = Record.load_all({first.uri, "at://did:plc:nobody/app.test.note/3kzzzzz", page.records[2].uri})
			local t = tid.now()
			local nested, err, status = xrpc.query("app.test.count", {min = "25"})
			local missing, merr, mstatus = xrpc.query("app.test.nothing", {})
			log("feed served for " .. tostring(params.viewer))
			return {
				params = params, method = method, collection = collection, anonymous = caller == nil,
				likes = likes, got = one.text, cid = one.cid,
				loaded = {loaded[1].text, loaded[2] == nil, loaded[3].text},
				secret = vars.greeting, tid_ok = tid.valid(t), tid_time = tid.to_time(tid.from_time("2024-01-02T03:04:05.000Z")),
				now_ok = now():match("^%d%d%d%d%-%d%d%-%d%dT") ~= nil,
				json_rt = json.decode(json.encode({a = {1, 2}, b = json.null, c = json.empty_array})),
				nested = nested.n, missing = {missing == nil, merr, mstatus},
				raw_count = db.raw("SELECT COUNT(*) AS n FROM records WHERE collection = ?", {"app.test.note"})[1].n,
			}
		end`)
		r := e.get(t, "/xrpc/app.test.feed?viewer=alice&limit=3")
		if r.Status != 200 {
			t.Fatalf("scripted query: %d %s; %s", r.Status, r.Raw, e.admin.Do(t, "GET", "/admin/events?event_type=script.error", nil).Raw)
		}
		var got struct {
			Params     map[string]string `json:"params"`
			Method     string            `json:"method"`
			Collection string            `json:"collection"`
			Anonymous  bool              `json:"anonymous"`
			Likes      []int             `json:"likes"`
			Got, CID   string
			Loaded     []any          `json:"loaded"`
			Secret     string         `json:"secret"`
			TIDOK      bool           `json:"tid_ok"`
			TIDTime    string         `json:"tid_time"`
			NowOK      bool           `json:"now_ok"`
			JSONRT     map[string]any `json:"json_rt"`
			Nested     int            `json:"nested"`
			Missing    []any          `json:"missing"`
			RawCount   int            `json:"raw_count"`
		}
		r.JSON(t, &got)
		// likes >= 10 and (tag t1 (likes % 3 == 1) or text LIKE "note 2%"): 28,
		// 25, 24..20, 19, 16, 13, 10 in descending order.
		want := []int{29, 28, 27, 26, 25, 24, 23, 22, 21, 20}
		if fmt.Sprint(got.Likes) != fmt.Sprint(want) {
			t.Errorf("likes %v, want %v", got.Likes, want)
		}
		if got.Params["viewer"] != "alice" || got.Params["limit"] != "3" || got.Method != "app.test.feed" ||
			got.Collection != "app.test.note" || !got.Anonymous {
			t.Errorf("invocation globals: %s", r.Raw)
		}
		if got.Got != "note 29" || got.CID != "bafyreinote29" || fmt.Sprint(got.Loaded) != "[note 29 true note 28]" {
			t.Errorf("db.get / Record.load_all: %s", r.Raw)
		}
		if got.Secret != "s3cret" || !got.TIDOK || got.TIDTime != "2024-01-02T03:04:05.000Z" || !got.NowOK {
			t.Errorf("vars / tid / now: %s", r.Raw)
		}
		if b, _ := json.Marshal(got.JSONRT); string(b) != `{"a":[1,2],"b":null,"c":[]}` {
			t.Errorf("json round trip: %s", b)
		}
		if got.Nested != 5 || fmt.Sprint(got.Missing) != "[true method not found 404]" || got.RawCount != 30 {
			t.Errorf("xrpc / db.raw: %s", r.Raw)
		}
		// log() wrote an event.
		ev := e.admin.Do(t, "GET", "/admin/events?event_type=script.log", nil)
		if !strings.Contains(string(ev.Raw), "feed served for alice") {
			t.Errorf("script.log event missing: %s", ev.Raw)
		}
		// The result of a script that returns db.query as is: the default shape.
		e.setScript(t, "xrpc.query:app.test.feed", `function handle() return db.query{limit = 2, did = params.did} end`)
		r = e.get(t, "/xrpc/app.test.feed?did="+e.did)
		var page struct {
			Records []map[string]any `json:"records"`
			Cursor  string           `json:"cursor"`
		}
		r.JSON(t, &page)
		if len(page.Records) != 2 || page.Cursor == "" || page.Records[0]["uri"] == nil || page.Records[0]["text"] == nil {
			t.Errorf("pass-through page: %s", r.Raw)
		}
	})
}

// TestScriptFailures checks the wire errors and the script.error event.
func TestScriptFailures(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		e := newScriptEnv(t, open(t))
		// A syntax error is refused at upload.
		r := e.admin.Do(t, "POST", "/admin/scripts", map[string]any{"trigger": "xrpc.query:app.test.feed", "source": "function handle( end"})
		if r.Status != 400 {
			t.Fatalf("syntax error upload: %d %s", r.Status, r.Raw)
		}
		for _, tc := range []struct{ src, want string }{
			{`function handle() error("the secret detail") end`, "script execution failed"},
			{`x = 1`, "script execution failed"},
			{`function handle() while true do end end`, "script exceeded execution time limit"},
			{`function handle() return db.raw("SELECT did FROM admin_users") end`, "script execution failed"},
		} {
			e.setScript(t, "xrpc.query:app.test.feed", tc.src)
			r := e.get(t, "/xrpc/app.test.feed?x=1&client_key="+e.key)
			if r.Status != 500 || r.Error(t) != tc.want || strings.Contains(string(r.Raw), "secret detail") {
				t.Errorf("%s: %d %s", tc.src, r.Status, r.Raw)
			}
		}
		details := eventDetails(t, e.admin, "event_type=script.error")
		if len(details) == 0 {
			t.Fatal("no script.error event")
		}
		d := details[len(details)-1]
		for _, k := range []string{"error", "script_source", "input", "caller_did", "method"} {
			if _, ok := d[k]; !ok {
				t.Errorf("script.error detail lacks %s: %v", k, d)
			}
		}
		if !strings.Contains(fmt.Sprint(d["error"]), "the secret detail") || d["method"] != "app.test.feed" || d["input"] != "x=1" {
			t.Errorf("script.error detail: %v", d)
		}
		// Sensitive tables cannot be read by a script, whatever the spelling.
		for _, q := range []string{
			`SELECT * FROM admin_users`, `select * from "admin_api_keys"`, `SELECT * FROM records, script_variables`,
			`SELECT * FROM records WHERE did IN (SELECT did FROM device_sessions)`, `DELETE FROM lexicons`,
			`SELECT 1; DELETE FROM records`,
		} {
			e.setScript(t, "xrpc.query:app.test.feed", `function handle()
				local ok, err = pcall(db.raw, params.q)
				return {ok = ok, err = tostring(err)}
			end`)
			r := e.get(t, "/xrpc/app.test.feed?q="+urlQuery(q))
			var out struct {
				OK  bool   `json:"ok"`
				Err string `json:"err"`
			}
			r.JSON(t, &out)
			if out.OK {
				t.Errorf("db.raw(%q) was allowed", q)
			}
		}
	})
}

// TestScriptRawSQLAllowList: db.raw reads only the records table, the
// record tombstones and the documented views; another lexicon's script or
// a trigger-keyed script's source cannot be read, however the statement is
// spelt (security finding 9).
func TestScriptRawSQLAllowList(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		e := newScriptEnv(t, open(t))
		e.seed(t, 3)
		const secret = "inline-secret-4711"
		if _, err := e.App.Lexicons().Put(context.Background(), lexicon.Upload{
			Document:         json.RawMessage(`{"lexicon":1,"id":"app.test.count","defs":{"main":{"type":"query"}}}`),
			TargetCollection: "app.test.note",
			Script:           `local token = "` + secret + `" function handle() return {} end`,
		}); err != nil {
			t.Fatal(err)
		}
		e.setScript(t, "xrpc.query:app.test.nothing", `local token = "`+secret+`" function handle() return {} end`)
		e.setScript(t, "xrpc.query:app.test.feed", `function handle()
			local ok, res = pcall(db.raw, params.q)
			if ok then return {ok = true, rows = res} end
			return {ok = false, err = tostring(res)}
		end`)
		run := func(q string) (bool, string, string) {
			t.Helper()
			r := e.get(t, "/xrpc/app.test.feed?q="+urlQuery(q))
			var out struct {
				OK  bool   `json:"ok"`
				Err string `json:"err"`
			}
			r.JSON(t, &out)
			return out.OK, out.Err, string(r.Raw)
		}
		for _, q := range []string{
			`SELECT script FROM lexicons`,
			`SELECT * FROM lexicons`,
			`select "script" from "LEXICONS"`,
			`SELECT id FROM lexicons WHERE script LIKE '%secret%'`,
			`SELECT uri FROM records UNION ALL SELECT script FROM lexicons`,
			`WITH l AS (SELECT * FROM lexicons) SELECT * FROM l`,
			`SELECT * FROM records WHERE uri IN (SELECT script FROM /* x */ lexicons)`,
			`SELECT source FROM scripts`,
			`SELECT * FROM script_variables`,
			`SELECT * FROM dead_letters`,
			`SELECT * FROM main.lexicons`,
			`SELECT * FROM public.lexicons`,
			`SELECT * FROM sqlite_master`,
			`SELECT * FROM pg_catalog.pg_proc`,
			`SELECT * FROM information_schema.columns`,
		} {
			ok, msg, raw := run(q)
			if ok || !strings.Contains(msg, "raw SQL refused") || strings.Contains(raw, secret) {
				t.Errorf("db.raw(%q): %s", q, raw)
			}
		}
		if ok, msg, raw := run(`SELECT id, target_collection FROM lexicon_info WHERE id = 'app.test.count'`); !ok ||
			!strings.Contains(raw, `"target_collection":"app.test.note"`) || strings.Contains(raw, secret) {
			t.Errorf("lexicon_info: %s %s", msg, raw)
		}
		if ok, msg, raw := run(`SELECT COUNT(*) AS n FROM records r LEFT JOIN record_tombstones t ON t.uri = r.uri`); !ok ||
			!strings.Contains(raw, `"n":3`) {
			t.Errorf("records: %s %s", msg, raw)
		}
	})
}

func urlQuery(s string) string { return strings.ReplaceAll(httpEscape(s), "+", "%20") }

func httpEscape(s string) string {
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	q := req.URL.Query()
	q.Set("q", s)
	return strings.TrimPrefix(q.Encode(), "q=")
}

// waitFor polls cond for a few seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestLexiconScriptCompileError checks that a lexicon whose script does not
// compile is accepted, with the error in the answer and the event log.
func TestLexiconScriptCompileError(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		e := newScriptEnv(t, open(t))
		// A lexicon whose script does not compile is stored; the upload
		// names the compile error, the event log keeps it, and the method
		// answers 500 script execution failed until it is fixed.
		r := e.admin.Do(t, "POST", "/admin/lexicons", map[string]any{"lexicon_json": json.RawMessage(feedLexicon), "target_collection": "app.test.note", "script": "function handle( end"})
		var up struct {
			ID           string            `json:"id"`
			Revision     int               `json:"revision"`
			ScriptErrors map[string]string `json:"script_errors"`
		}
		r.JSON(t, &up)
		if r.Status != 200 || up.ID != "app.test.feed" || up.ScriptErrors["script"] == "" || len(up.ScriptErrors) != 1 {
			t.Fatalf("lexicon with a syntax error: %d %s", r.Status, r.Raw)
		}
		if got := e.get(t, "/xrpc/app.test.feed?x=1&client_key="+e.key); got.Status != 500 || got.Error(t) != "script execution failed" {
			t.Fatalf("method of a lexicon whose script does not compile: %d %s", got.Status, got.Raw)
		}
		var invalid struct {
			Events []struct {
				Subject string `json:"subject"`
				Detail  struct {
					Errors map[string]string `json:"errors"`
				} `json:"detail"`
			} `json:"events"`
		}
		e.admin.Do(t, "GET", "/admin/events?event_type=lexicon.script_invalid", nil).JSON(t, &invalid)
		if len(invalid.Events) != 1 || invalid.Events[0].Subject != "app.test.feed" ||
			invalid.Events[0].Detail.Errors["script"] != up.ScriptErrors["script"] {
			t.Fatalf("lexicon.script_invalid events: %+v", invalid)
		}
		// Fixed, the upload names no error.
		r = e.admin.Do(t, "POST", "/admin/lexicons", map[string]any{"lexicon_json": json.RawMessage(feedLexicon), "target_collection": "app.test.note"})
		if r.Status != 200 || strings.Contains(string(r.Raw), "script_errors") {
			t.Fatalf("lexicon without its script: %d %s", r.Status, r.Raw)
		}
	})
}

// A script's error text is cut before it reaches the log and the event log
// (issue 12, finding 10): a script chooses it and could fill the log.
func TestScriptErrorTextIsBounded(t *testing.T) {
	t.Parallel()
	e := newScriptEnv(t, storagetest.SQLite(t))
	e.setScript(t, "xrpc.query:app.test.feed", `function handle() error(string.rep("E", 100000)) end`)
	if r := e.get(t, "/xrpc/app.test.feed?client_key="+e.key); r.Status != 500 || r.Error(t) != "script execution failed" {
		t.Fatalf("failing script: %d %s", r.Status, r.Raw)
	}
	details := eventDetails(t, e.admin, "event_type=script.error")
	if len(details) != 1 {
		t.Fatalf("script.error events: %+v", details)
	}
	if msg := fmt.Sprint(details[0]["error"]); len(msg) > 5<<10 || !strings.Contains(msg, "EEEE") {
		t.Fatalf("error text of %d bytes in the event", len(msg))
	}
}
