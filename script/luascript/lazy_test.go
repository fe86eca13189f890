package luascript

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strconv"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"

	"github.com/lexview/lexview/script"
	"github.com/lexview/lexview/storage"
)

// recHost serves a fixed set of records to db.query, db.get and
// Record.load_all.
type recHost struct {
	nopHost
	recs []storage.Record
}

func (h recHost) QueryRecords(context.Context, storage.RecordQuery) (storage.RecordQueryPage, error) {
	return storage.RecordQueryPage{Records: h.recs, Cursor: "c1"}, nil
}

func (h recHost) GetRecord(_ context.Context, uri string) (storage.Record, error) {
	for _, r := range h.recs {
		if r.URI == uri {
			return r, nil
		}
	}
	return storage.Record{}, storage.ErrNotFound
}

func (h recHost) GetRecords(_ context.Context, uris []string) (map[string]storage.Record, error) {
	out := map[string]storage.Record{}
	for _, u := range uris {
		if r, err := h.GetRecord(context.Background(), u); err == nil {
			out[u] = r
		}
	}
	return out, nil
}

func rec(rkey, value string) storage.Record {
	return storage.Record{URI: "at://did:plc:abc/app.bsky.feed.post/" + rkey, CID: "bafy" + rkey, Value: json.RawMessage(value)}
}

// lazyRecords are the records of the equivalence tests: ordinary posts,
// and stored JSON that cannot be spliced as it is.
var lazyRecords = []storage.Record{
	rec("a", `{"$type":"app.bsky.feed.post","text":"first","createdAt":"2024-01-01T00:00:00.000Z","langs":["en"],
		"reply":{"root":{"uri":"at://did:plc:x/app.bsky.feed.post/r","cid":"bafyroot"},"parent":{"uri":"at://p","cid":"bafyp"}}}`),
	rec("b", `{"$type":"app.bsky.feed.post","text":"second <b>&amp;</b> \u00e9\u2028 \"q\" \\ \n","n":1.50,"big":12345678901234567,"e":1e3,"neg":-0.25,
		"empty":{},"list":[],"nested":[[1,[2,{}]],null,true,false],"nil":null}`),
	rec("c", ` { } `),
	rec("d", `{"uri":"at://stored/uri","cid":"storedcid","text":"own uri and cid"}`),
	rec("e", `{"text":"dup","text":"dup wins"}`),
	rec("f", `{"n":01,"text":"leading zero"}`),
	rec("g", "{\"text\":\"bad utf8 \xff\"}"),
	rec("h", `{"text":"lone \ud800 surrogate"}`),
	rec("i", `not json`),
	rec("j", `[1,2,3]`),
	rec("k", `{"__index":{"fallback":"from record"},"year":2020,"month":5,"day":17,"hour":12}`),
	rec("l", ``),
	rec("m", `{"k\u0065y":"escaped key","key":"plain key"}`),
}

// runBoth runs src with lazy records and with eager ones and returns both
// outputs (or errors).
func runBoth(t *testing.T, src string) (lazy, eager string, lazyErr, eagerErr error) {
	t.Helper()
	run := func(eagerRecords bool) (string, error) {
		e := New(Options{PoolSize: 1})
		e.eagerRecords = eagerRecords
		p, err := e.Compile("test", src)
		if err != nil {
			t.Fatal(err)
		}
		inv := &script.Invocation{Host: recHost{recs: lazyRecords}, Kind: script.KindQuery, Method: "com.example.test", Collection: "app.bsky.feed.post"}
		var out json.RawMessage
		for range 2 { // the second run reuses the pooled VM
			if out, err = p.Run(context.Background(), inv); err != nil {
				return "", err
			}
		}
		return string(out), nil
	}
	lazy, lazyErr = run(false)
	eager, eagerErr = run(true)
	return lazy, eager, lazyErr, eagerErr
}

// decode decodes JSON, then any string in it that holds JSON itself (the
// results of json.encode), so that key order does not matter.
func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("invalid JSON %q: %v", s, err)
	}
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case string:
			if strings.HasPrefix(x, "{") || strings.HasPrefix(x, "[") {
				var inner any
				if json.Unmarshal([]byte(x), &inner) == nil {
					return walk(inner)
				}
			}
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
		case map[string]any:
			for k := range x {
				x[k] = walk(x[k])
			}
		}
		return v
	}
	return walk(v)
}

// checkNoDuplicateKeys fails if any object in s repeats a key.
func checkNoDuplicateKeys(t *testing.T, s string) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	type frame struct {
		object bool
		keys   map[string]bool
		isKey  bool
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatalf("invalid JSON %s: %v", s, err)
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if top != nil && top.object {
				top.isKey = true
			}
			stack = append(stack, &frame{object: tok == json.Delim('{'), keys: map[string]bool{}, isKey: true})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			continue
		}
		if top != nil && top.object {
			if top.isKey {
				k := tok.(string)
				if top.keys[k] {
					t.Fatalf("duplicate key %q in %s", k, s)
				}
				top.keys[k] = true
			}
			top.isKey = !top.isKey
		}
	}
}

// TestLazyRecordsMatchEager runs scripts that use records in every way
// scripts can, with lazy and with eager records, and compares the results.
func TestLazyRecordsMatchEager(t *testing.T) {
	for _, tc := range []struct{ name, src string }{
		{"untouched", `function handle() return db.query{} end`},
		{"untouched twice", `function handle() local r = db.query{} return {r, r.records[1], json.encode(r)} end`},
		{"fields", `function handle()
			local out = {}
			for i, r in ipairs(db.query{}.records) do
				out[i] = {r.uri, r.cid, r.text or json.null, r["$type"] or json.null, r.missing == nil, #r}
			end
			return out
		end`},
		{"nested", `function handle()
			local r = db.query{}.records[1]
			return {r.reply.root.uri, r.reply.parent.cid, r.langs[1], #r.langs}
		end`},
		{"pairs order", `function handle()
			local out = {}
			for i, r in ipairs(db.query{}.records) do
				local keys = {}
				for k, v in pairs(r) do keys[#keys + 1] = k .. "=" .. type(v) end
				out[i] = keys
			end
			return out
		end`},
		{"next", `function handle()
			local out = {}
			for i, r in ipairs(db.query{}.records) do
				local n, k = 0, next(r)
				while k ~= nil do n = n + 1 k = next(r, k) end
				out[i] = n
			end
			return out
		end`},
		{"pairs iterator reused", `function handle()
			local it = pairs({})
			local out = {}
			for i, r in ipairs(db.query{}.records) do
				local n, k = 0, it(r, nil)
				while k ~= nil do n = n + 1 k = it(r, k) end
				out[i] = n
			end
			return out
		end`},
		{"rawget rawset", `function handle()
			local recs = db.query{}.records
			for _, r in ipairs(recs) do
				r.seen = {rawget(r, "text") or false, rawget(r, "uri"), rawequal(r, r)}
				rawset(r, "raw", 1)
			end
			rawset(recs[2], "text", nil)
			return recs
		end`},
		{"modify and return", `function handle()
			local recs = db.query{}.records
			recs[1].text = "changed"
			recs[2].uri = "at://did:plc:other/app.bsky.feed.post/z"
			recs[3].cid = 42
			recs[4].uri = nil
			recs[5].cid = nil
			recs[6].uri = nil recs[6].uri = "again"
			recs[7][1] = "one"
			return recs
		end`},
		{"uri removed then read", `function handle()
			local recs = db.query{}.records
			for _, r in ipairs(recs) do r.uri = nil end
			local out = {}
			for i, r in ipairs(recs) do out[i] = {r.uri or false, r.text or false} end
			return {out, recs}
		end`},
		{"table library", `function handle()
			local recs = db.query{}.records
			table.insert(recs[1], "appended")
			table.insert(recs[2], 0, "at zero")
			table.insert(recs[3], 1, "first")
			table.insert(recs[3], "second")
			table.remove(recs[3], 1)
			local out = {#recs[1], #recs[4], table.concat(recs[3], ","), select("#", unpack(recs[5]))}
			return {out, recs[1], recs[2], recs[3]}
		end`},
		{"sort", `function handle()
			local recs = db.query{}.records
			table.sort(recs, function(a, b) return (a.text or "") < (b.text or "") end)
			local out = {}
			for i, r in ipairs(recs) do out[i] = r.uri end
			return out
		end`},
		{"metatables", `function handle()
			local recs = db.query{}.records
			local out = {getmetatable(recs[1]) == nil, getmetatable(recs[3]) == nil, os.time(db.query{}.records[11])}
			setmetatable(recs[1], {__index = function(t, k) return "default " .. k end})
			out[#out + 1] = recs[1].nope
			out[#out + 1] = recs[1].text
			out[#out + 1] = getmetatable(recs[1]) ~= nil
			local child = setmetatable({}, recs[11])
			out[#out + 1] = child.fallback or false
			local inherit = setmetatable({}, {__index = recs[2]})
			out[#out + 1] = inherit.text
			out[#out + 1] = os.time(recs[11])
			setmetatable(recs[2], nil)
			return {out, recs[2]}
		end`},
		{"json", `function handle()
			local out = {}
			for i, r in ipairs(db.query{}.records) do out[i] = json.encode(r) end
			return out
		end`},
		{"json array", `function handle() local r = db.query{}.records[1] json.array(r) return {r, json.encode(r)} end`},
		{"Record", `function handle()
			local out = {}
			for i, r in ipairs(db.query{}.records) do out[i] = Record("app.bsky.feed.like", r) end
			return out
		end`},
		{"db.get", `function handle()
			local out = {}
			for _, k in ipairs({"a", "b", "c", "d", "i", "j", "l", "zz"}) do
				out[#out + 1] = db.get("at://did:plc:abc/app.bsky.feed.post/" .. k) or json.null
			end
			out[#out + 1] = out[1].text
			return out
		end`},
		{"load_all", `function handle()
			local uris = {}
			for _, k in ipairs({"a", "b", "zz", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"}) do
				uris[#uris + 1] = "at://did:plc:abc/app.bsky.feed.post/" .. k
			end
			local recs = Record.load_all(uris)
			return {recs[1], recs[2], recs[3] == nil, recs[4], recs[5], recs[6].text, recs}
		end`},
		{"same record twice", `function handle()
			local a = db.get("at://did:plc:abc/app.bsky.feed.post/a")
			local b = db.get("at://did:plc:abc/app.bsky.feed.post/a")
			b.text = "b"
			return {a, b, a == b, rawequal(a, b)}
		end`},
		{"errors", `function handle()
			local r = db.query{}.records[1]
			local ok1, e1 = pcall(function() r[nil] = 1 end)
			local r2 = db.query{}.records[2]
			local ok2 = pcall(function() return r2 .. "x" end)
			local ok3 = pcall(function() return r2 < r end)
			local ok4 = pcall(function() return r2() end)
			return {ok1, ok2, ok3, ok4, tostring(r):sub(1, 6)}
		end`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lazy, eager, lazyErr, eagerErr := runBoth(t, tc.src)
			if lazyErr != nil || eagerErr != nil {
				t.Fatalf("lazy: %v\neager: %v", lazyErr, eagerErr)
			}
			checkNoDuplicateKeys(t, lazy)
			if l, e := decode(t, lazy), decode(t, eager); !reflect.DeepEqual(l, e) {
				t.Fatalf("lazy and eager records differ\nlazy:  %s\neager: %s", lazy, eager)
			}
		})
	}
}

// TestLazyRecordsAreSpliced checks that untouched records are copied from
// their stored JSON, and that the copy is refused where it would differ.
func TestLazyRecordsAreSpliced(t *testing.T) {
	lazy, _, err, _ := runBoth(t, `function handle() return db.query{} end`)
	if err != nil {
		t.Fatal(err)
	}
	var page struct{ Records []json.RawMessage }
	if err := json.Unmarshal([]byte(lazy), &page); err != nil {
		t.Fatal(err)
	}
	spliced := map[string]bool{"a": true, "b": true, "c": true, "k": true}
	for i, raw := range page.Records {
		r := lazyRecords[i]
		rkey := r.URI[strings.LastIndexByte(r.URI, '/')+1:]
		// What the splice writes: uri and cid, then the stored object.
		inner := bytes.TrimSpace(r.Value)
		want := `{"cid":"` + r.CID + `","uri":"` + r.URI + `"`
		if len(inner) > 1 && len(bytes.TrimSpace(inner[1:len(inner)-1])) == 0 {
			want += "}"
		} else if len(inner) > 1 {
			want += "," + string(inner[1:])
		}
		if isSpliced := string(raw) == want; isSpliced != spliced[rkey] {
			t.Errorf("record %s: spliced %v: %s", rkey, isSpliced, raw)
		}
	}
	if got := string(page.Records[2]); got != `{"cid":"bafyc","uri":"at://did:plc:abc/app.bsky.feed.post/c"}` {
		t.Errorf("empty record: %s", got)
	}
	if got := string(page.Records[3]); got != `{"cid":"bafyd","text":"own uri and cid","uri":"at://did:plc:abc/app.bsky.feed.post/d"}` {
		t.Errorf("record with its own uri and cid: %s", got)
	}
}

// TestLazyRecordNestingLimit checks that splicing keeps the encoder's
// nesting limit.
func TestLazyRecordNestingLimit(t *testing.T) {
	deep := func(n int) string { return `{"a":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}` }
	for n := maxJSONDepth - 4; n <= maxJSONDepth+2; n++ {
		host := recHost{recs: []storage.Record{rec("a", deep(n))}}
		var outs [2]string
		var errs [2]error
		for i, eager := range []bool{false, true} {
			e := New(Options{})
			e.eagerRecords = eager
			p, _ := e.Compile("test", `function handle() return db.query{} end`)
			out, err := p.Run(context.Background(), &script.Invocation{Host: host, Kind: script.KindQuery, Collection: "app.bsky.feed.post"})
			outs[i], errs[i] = string(out), err
		}
		if (errs[0] == nil) != (errs[1] == nil) {
			t.Fatalf("depth %d: lazy %v, eager %v", n, errs[0], errs[1])
		}
		if errs[0] == nil && !reflect.DeepEqual(decode(t, outs[0]), decode(t, outs[1])) {
			t.Fatalf("depth %d:\n%s\n%s", n, outs[0], outs[1])
		}
	}
}

// TestLazySplicedRecordNestingLimit puts spliceable records, empty ones
// included, at the encoder's nesting limit.
func TestLazySplicedRecordNestingLimit(t *testing.T) {
	src := `function handle() local x = db.query{}.records[tonumber(params.i)] for i = 1, tonumber(params.n) do x = {x} end return x end`
	host := recHost{recs: []storage.Record{rec("a", `{}`), rec("b", `{"a":1}`), rec("c", `{"a":[{}]}`)}}
	for i := 1; i <= 3; i++ {
		for n := maxJSONDepth - 4; n <= maxJSONDepth+1; n++ {
			var outs [2]string
			var errs [2]error
			for j, eager := range []bool{false, true} {
				e := New(Options{})
				e.eagerRecords = eager
				p, _ := e.Compile("test", src)
				out, err := p.Run(context.Background(), &script.Invocation{Host: host, Kind: script.KindQuery, Collection: "app.bsky.feed.post",
					Params: map[string][]string{"i": {strconv.Itoa(i)}, "n": {strconv.Itoa(n)}}})
				outs[j], errs[j] = string(out), err
			}
			if (errs[0] == nil) != (errs[1] == nil) {
				t.Fatalf("record %d at depth %d: lazy %v, eager %v", i, n, errs[0], errs[1])
			}
			if errs[0] == nil && !reflect.DeepEqual(decode(t, outs[0]), decode(t, outs[1])) {
				t.Fatalf("record %d at depth %d:\n%s\n%s", i, n, outs[0], outs[1])
			}
		}
	}
}

// TestLazyMetatableIsUnreachable tries the routes to the shared lazy
// metatable and checks that changing a record's metatable does not touch
// the other records.
func TestLazyMetatableIsUnreachable(t *testing.T) {
	e := New(Options{PoolSize: 1})
	p, err := e.Compile("test", `function handle()
		local recs = db.query{}.records
		local a, b = recs[1], recs[2]
		assert(getmetatable(a) == nil)
		assert(select("#", getmetatable(a)) == 1)
		assert(not pcall(function() return getmetatable(a).__index end))
		setmetatable(a, {__index = function() return "hijacked" end})
		assert(b.nope == nil, "another record saw the change")
		assert(getmetatable(b) == nil)
		return {a.nope, b.text, recs[3]}
	end`)
	if err != nil {
		t.Fatal(err)
	}
	inv := &script.Invocation{Host: recHost{recs: lazyRecords}, Kind: script.KindQuery, Collection: "app.bsky.feed.post"}
	for range 3 {
		out, err := p.Run(context.Background(), inv)
		if err != nil {
			t.Fatal(err)
		}
		got := decode(t, string(out)).([]any)
		if got[0] != "hijacked" || !strings.HasPrefix(got[1].(string), "second <b>") {
			t.Fatalf("%s", out)
		}
	}
	v := e.get()
	if len(v.spareLazy) != 0 || v.run != nil {
		t.Fatal("the pooled VM kept the run's lazy records")
	}
	for _, name := range []string{"__index", "__newindex"} {
		if _, ok := v.lazyMT.RawGetString(name).(*lua.LFunction); !ok {
			t.Fatalf("the lazy metatable lost %s", name)
		}
	}
}
