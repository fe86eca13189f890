package luascript

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/internal/netguard"
	"github.com/lexview/lexview/script"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/sqlite"
)

// testCap is the memory cap of the tests in this file: small, so that what
// an unchecked path makes stands out against it.
const testCap = 8 << 20

// memResult is what a run under testCap left behind.
type memResult struct {
	out       string
	err       error
	mem       memory // the final accounting
	allocated uint64 // bytes the Go heap allocated during the run
}

// heapAllocs reads the bytes the Go heap has allocated so far: cumulative,
// so the difference over a run bounds how far the heap grew during it
// whatever the collector did meanwhile.
func heapAllocs() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// runCapped runs src once with host under an engine capped at testCap
// (and the given instruction budget, if any) and checks the accounting
// stayed within [0, cap].
func runCapped(t *testing.T, host script.Host, instructions int64, src string) memResult {
	t.Helper()
	e := New(Options{Limits: Limits{MaxAllocated: testCap, Instructions: instructions}})
	var res memResult
	e.afterRun = func(r *run) { res.mem = r.mem }
	p, err := e.Compile("mem", src)
	if err != nil {
		t.Fatal(err)
	}
	if host == nil {
		host = nopHost{}
	}
	before := heapAllocs()
	out, err := p.Run(context.Background(), &script.Invocation{Host: host, Kind: script.KindQuery, Method: "com.example.mem"})
	res.allocated = heapAllocs() - before
	res.out, res.err = string(out), err
	if res.mem.limit != testCap || res.mem.used < 0 || res.mem.used > res.mem.limit {
		t.Fatalf("accounting out of range: %+v", res.mem)
	}
	return res
}

// wantMemoryError checks that the run failed with the memory error and
// that the heap stayed within heapBound.
func wantMemoryError(t *testing.T, res memResult) {
	t.Helper()
	if kindOf(res.err) != script.ErrMemory || !res.mem.hit {
		t.Fatalf("got %q, %v (kind %d), want the memory error", res.out, res.err, kindOf(res.err))
	}
	if msg := res.err.Error(); !strings.Contains(msg, "memory limit exceeded") && !strings.Contains(msg, "string too large") {
		t.Fatalf("unclear error: %v", msg)
	}
	wantHeapWithinCap(t, res)
}

// heapBound bounds what the heap may allocate during a run under
// testCap. The accounting keeps what a run holds within the cap; what it
// allocates in all is more, because a growing slice or builder leaves
// copies of itself behind (Go grows large ones by a quarter, so up to
// four times the final size is garbage), but not more than a few times
// the cap. The paths the tests close allocated from 64 MiB to 1 GiB.
const heapBound = 8 * testCap

func wantHeapWithinCap(t *testing.T, res memResult) {
	t.Helper()
	if res.allocated > heapBound {
		t.Fatalf("the heap allocated %d MiB during a run under a %d MiB cap", res.allocated>>20, testCap>>20)
	}
}

// Finding 4.1: string.rep's size overflowed and drove the running total
// negative, lifting the cap for the rest of the run.
func TestMemoryRepCountCannotOverflow(t *testing.T) {
	for _, count := range []string{"2^62", "2^63", "2^64", "1e300", "1/0", "2^31 + 1"} {
		t.Run(count, func(t *testing.T) {
			res := runCapped(t, nil, 0, `function handle()
				local ok, err = pcall(string.rep, "ab", `+count+`)
				assert(not ok, "rep succeeded")
				local ok2 = pcall(string.rep, "abc", `+count+`, "--")
				assert(not ok2, "rep with a separator succeeded")
				local t = {}
				for i = 1, 64 do t[i] = ("x"):rep(2^20) .. i end -- 64 MiB
				return #t
			end`)
			wantMemoryError(t, res)
		})
	}
}

// Finding 4.2: print joined its arguments uncounted; now it builds at
// most the 8 KiB that log keeps.
func TestMemoryPrintIsCut(t *testing.T) {
	res := runCapped(t, nil, 0, `function handle()
		local s = ("x"):rep(2^16)
		local t = {}
		for i = 1, 8000 do t[i] = s end
		print(unpack(t)) -- 500 MiB joined
		print(s, s, s, setmetatable({}, {__tostring = function() return s end}))
		return "printed"
	end`)
	if res.err != nil || res.out != `"printed"` {
		t.Fatalf("%s %v", res.out, res.err)
	}
	wantHeapWithinCap(t, res)
}

// Finding 4.3: os.date expanded a long format uncounted.
func TestMemoryOsDateFormat(t *testing.T) {
	for _, f := range []string{`("%c"):rep(2^20)`, `("%c"):rep(2^17)`} {
		res := runCapped(t, nil, 0, `function handle()
			local t = {}
			for i = 1, 20 do t[i] = os.date(`+f+`) end
			return #t
		end`)
		wantMemoryError(t, res)
	}
	// An ordinary format is unaffected.
	if res := runCapped(t, nil, 0, `function handle() return os.date("!%Y-%m-%dT%H:%M:%S %c", 0) end`); res.err != nil || res.out != `"1970-01-01T00:00:00 01 Jan 70 00:00 UTC"` {
		t.Fatalf("%s %v", res.out, res.err)
	}
}

// Finding 4.4: json.decode built tables uncounted, a hundred times the
// size of the JSON.
func TestMemoryJSONDecode(t *testing.T) {
	for _, doc := range []string{
		`"[" .. ("{},"):rep(2e5) .. "{}]"`,
		`"[" .. ("[],"):rep(2e5) .. "[]]"`,
		`"[" .. ('{"a":1},'):rep(1e5) .. "1]"`,
		`"[" .. ("1,"):rep(1e6) .. "1]"`,
	} {
		res := runCapped(t, nil, 0, `function handle() local t = json.decode(`+doc+`) return #t end`)
		wantMemoryError(t, res)
	}
}

// rawHost answers db.raw from a real SQLite database.
type rawHost struct {
	nopHost
	store *sqlite.Store
}

func (h rawHost) RawQuery(ctx context.Context, sql string, args []any, maxRows int, maxBytes int64) (storage.RawResult, error) {
	return h.store.RawQuery(ctx, sql, args, maxRows, maxBytes)
}

func openSQLite(t *testing.T) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "raw.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// Finding 4.5: the rows of db.raw were not counted. A recursive query
// repeats a 64 KiB parameter into 64 MiB of rows; the storage stops
// reading them once they pass the memory left.
func TestMemoryDBRawRows(t *testing.T) {
	host := rawHost{store: openSQLite(t)}
	res := runCapped(t, host, 0, `function handle()
		local rows = db.raw("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000) SELECT ? AS v FROM n",
			{("x"):rep(2^16)})
		return #rows
	end`)
	wantMemoryError(t, res)
	if !strings.Contains(res.err.Error(), "db.raw: memory limit exceeded") {
		t.Fatal(res.err)
	}
	// Small results still come through.
	res = runCapped(t, host, 0, `function handle() return db.raw("SELECT ? AS a, 2 AS b", {"x"}) end`)
	if res.err != nil || res.out != `[{"a":"x","b":2}]` {
		t.Fatalf("%s %v", res.out, res.err)
	}
}

// One value SQLite would make far past the memory left fails inside
// SQLite (its length limit) instead of being built and copied; so does a
// value made along the way. Both are memory errors that can be caught.
func TestMemoryDBRawValueTooLong(t *testing.T) {
	host := rawHost{store: openSQLite(t)}
	for _, q := range []string{
		`db.raw("SELECT randomblob(?) AS b", {2e8})`,
		`db.raw("SELECT length(randomblob(?)) AS n", {2e8})`,
		`db.raw("SELECT length(group_concat(v)) AS n FROM (WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 400) SELECT printf('%.*c', 100000, 'x') AS v FROM c)")`,
	} {
		res := runCapped(t, host, 0, `function handle() return `+q+` end`)
		wantMemoryError(t, res)
		res = runCapped(t, host, 0, `function handle()
			local ok, err = pcall(function() return `+q+` end)
			assert(not ok and err:find("memory limit exceeded"), err)
			return db.raw("SELECT 1 AS one")
		end`)
		if res.err != nil || res.out != `[{"one":1}]` {
			t.Fatalf("%s: %s %v", q, res.out, res.err)
		}
	}
}

// A database call observes the run's deadline.
func TestMemoryDBRawObservesDeadline(t *testing.T) {
	e := New(Options{Limits: Limits{Timeout: 200 * time.Millisecond}})
	p, err := e.Compile("deadline", `function handle()
		return db.raw("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT COUNT(*) FROM c")
	end`)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Run(context.Background(), &script.Invocation{Host: rawHost{store: openSQLite(t)}, Kind: script.KindQuery})
	if kindOf(err) != script.ErrBudget {
		t.Fatalf("got %v", err)
	}
}

// Records from db.query count, with their stored JSON.
func TestMemoryDBQueryRecords(t *testing.T) {
	big := `{"text":"` + strings.Repeat("x", 100<<10) + `"}`
	recs := make([]storage.Record, 100)
	for i := range recs {
		recs[i] = rec("r"+string(rune('a'+i%26))+strings.Repeat("z", i/26), big)
	}
	res := runCapped(t, recHost{recs: recs}, 0, `function handle()
		local pages = {}
		for i = 1, 3 do pages[i] = db.query{collection = "app.bsky.feed.post", limit = 100} end
		return #pages
	end`)
	wantMemoryError(t, res)
}

// HTTP bodies count, and are read no further than the memory left.
func TestMemoryHTTPBody(t *testing.T) {
	body := strings.Repeat("y", 3<<20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(body)) }))
	defer srv.Close()
	client := &http.Client{Transport: netguard.NewTransport(netguard.Options{AllowPrivate: true})}
	res := runCapped(t, clientHost{client: client}, 0, `function handle()
		local keep = {}
		for i = 1, 4 do keep[i] = http.get("`+srv.URL+`").body end
		return #keep
	end`)
	wantMemoryError(t, res)
}

// Paths found while fixing finding 4: each built far past the cap in one
// call, or kept what it built out of sight of the accounting.
func TestMemoryOtherPaths(t *testing.T) {
	for _, tc := range []struct {
		name string
		kind script.ErrorKind
		src  string
	}{
		// Go's fmt, behind string.format, repeats an argument by index.
		{"format argument index", script.ErrRuntime, `function handle() return #string.format(("%[1]s"):rep(1000), ("x"):rep(2^16)) end`},
		{"format star width", script.ErrRuntime, `function handle() return #string.format("%*d", 1e9, 1) end`},
		// One match replaced by a thousand copies of itself.
		{"gsub repeated capture", script.ErrMemory, `function handle() return #(("x"):rep(2^16):gsub("^.*$", ("%0"):rep(1000))) end`},
		// Tables built from a variable number of values.
		{"vararg constructor", script.ErrMemory, `local function f(...) local keep = {} for i = 1, 2000 do keep[i] = {...} end return #keep end
			function handle() local t = {} for i = 1, 8000 do t[i] = i end return f(unpack(t)) end`},
		{"table.pack", script.ErrMemory, `function handle() local t, keep = {}, {} for i = 1, 8000 do t[i] = i end
			for i = 1, 2000 do keep[i] = table.pack(unpack(t)) end return #keep end`},
		// Caught error messages are new strings.
		{"caught errors", script.ErrMemory, `function handle() local s, keep = ("x"):rep(2^20), {}
			for i = 1, 100 do local ok, e = pcall(function() error(s) end) keep[i] = e end return #keep end`},
		// Record() copies its fields.
		{"Record copies", script.ErrMemory, `function handle() local f, keep = {}, {} for i = 1, 20000 do f["k" .. i] = i end
			for i = 1, 1000 do keep[i] = Record("com.example.x", f) end return #keep end`},
		// json.encode stops at the memory left, escapes included.
		{"json.encode escapes", script.ErrMemory, `function handle() return #json.encode({("\1"):rep(2^21)}) end`},
		// lower and upper turn an invalid byte into three.
		{"upper invalid UTF-8", script.ErrMemory, `function handle() local s, keep = ("\255"):rep(2^20), {} for i = 1, 4 do keep[i] = s:upper() end return #keep end`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runCapped(t, nil, 0, tc.src)
			if kindOf(res.err) != tc.kind {
				t.Fatalf("got %q, %v (kind %d), want kind %d", res.out, res.err, kindOf(res.err), tc.kind)
			}
			wantHeapWithinCap(t, res)
		})
	}
}

// Lua's string.format conversions keep working, and a caught memory error
// leaves the script able to go on within what is left.
func TestMemoryOrdinaryScriptsUnaffected(t *testing.T) {
	res := runCapped(t, nil, 0, `function handle()
		local ok = pcall(function() return ("x"):rep(2^40) end)
		local parts = {
			string.format("%5.2f|%-3d|%+d|% d|%x|%X|%o|%e|%g|%c|%q|%s|%%|%5s|%.2s", 1.5, 7, 3, 4, 255, 255, 8, 1e3, 0.5, 65, "a\nb", "s", "pad", "abc"),
			table.concat({1, 2, 3}, ","), ("ab"):rep(3, "-"), ("Hello"):upper(), ("Hello"):lower(), ("abc"):reverse(),
			tostring(12), tostring(nil), json.encode(json.decode('{"a":[1,2,{"b":"c"}]}')), #{unpack({1, 2, 3})}, select("#", table.pack(1, 2)),
		}
		return {ok = ok, parts = parts}
	end`)
	want := `{"ok":false,"parts":[" 1.50|7  |+3| 4|ff|FF|10|1.000000e+03|0.5|A|\"a\\nb\"|s|%|  pad|ab","1,2,3","ab-ab-ab","HELLO","hello","cba","12","nil","{\"a\":[1,2,{\"b\":\"c\"}]}",3,1]}`
	if res.err != nil || res.out != want {
		t.Fatalf("got %s %v\nwant %s", res.out, res.err, want)
	}
}

// A record whose fields do not fit stays lazy and whole when the memory
// error is caught; encoding it at the end fails cleanly when it must be
// decoded.
func TestMemoryLazyRecordSurvivesRefusedDecode(t *testing.T) {
	value := `{"items":[` + strings.Repeat("{},", 2e5) + `{}]}`
	host := recHost{recs: []storage.Record{rec("a", value)}}
	src := func(change string) string {
		return `function handle()
			local r = db.query{collection = "app.bsky.feed.post", limit = 1}.records[1]
			local ok, err = pcall(function() return r.items end)
			assert(not ok and err:find("memory limit exceeded"), err)
			` + change + `
			return r
		end`
	}
	res := runCapped(t, host, 0, src(""))
	if res.err != nil || !strings.HasPrefix(res.out, `{"cid":"bafya","uri":"at://did:plc:abc/app.bsky.feed.post/a","items":[{},{}`) {
		t.Fatalf("%.100s %v", res.out, res.err)
	}
	// table.insert leaves a record lazy, but then it cannot be spliced.
	res = runCapped(t, host, 0, src("table.insert(r, 1)"))
	if kindOf(res.err) != script.ErrMemory || strings.Contains(res.err.Error(), "internal error") {
		t.Fatalf("%.100s %v", res.out, res.err)
	}
}
