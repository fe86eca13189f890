package luascript

import (
	"strings"
	"testing"

	"github.com/lexview/lexview/storage"
)

// gapKeys are integer keys far past the end of an empty table's array
// part: 2^22 slots are a quarter of a GiB with gopher-lua's growth, 6e7
// (measured: 4.7 GB allocated, 30 s) and 2^26-1, the largest index
// gopher-lua keeps in the array part.
var gapKeys = []string{"2^22", "6e7", "2^26 - 1"}

// Index assignments, rawset and table.insert to an integer key far past
// the end of an array part made gopher-lua fill the gap with nils in one
// instruction, unseen by the memory cap and the deadline. Each path now
// charges the gap first: the run fails with the memory error (not the
// deadline, which the fill used to overrun) and the heap stays bounded.
func TestMemoryArrayGap(t *testing.T) {
	forms := []struct{ name, src string }{
		{"literal key", `local t = {} t[$N] = 1`},
		{"computed key", `local t = {} t[n] = 1`},
		{"nil value over an element", `local t = {} t[n] = 1 t[n] = nil`},
		{"compound target", `local t = {a = {}} t.a[n] = 1`},
		{"call target", `local t = {} local function f() return t end f()[n] = 1`},
		{"multiple assignment", `local t, x = {} x, t[n] = 1, 2`},
		{"constructor key", `local t = {[n] = 1}`},
		{"rawset", `local t = {} rawset(t, n, 1)`},
		{"table.insert", `local t = {} table.insert(t, n, 1)`},
		{"__newindex table", `local back = {} local t = setmetatable({}, {__newindex = back}) t[n] = 1`},
		{"__newindex function", `local t = setmetatable({}, {__newindex = function(t, k, v) rawset(t, k, v) end}) t[n] = 1`},
		{"global table", `_G[n] = 1`},
		{"copy of a sparse table", `local t = {} t[math.floor(n / 64)] = 1 local keep = {} for i = 1, 100 do keep[i] = Record("com.example.x", t) end`},
	}
	for _, key := range gapKeys {
		for _, f := range forms {
			t.Run(f.name+" "+key, func(t *testing.T) {
				src := "function handle() local n = " + key + " " + strings.ReplaceAll(f.src, "$N", key) + " return 1 end"
				wantMemoryError(t, runCapped(t, nil, 0, src))
			})
		}
	}
	// A lazy record materializes and is then assigned to like any table.
	host := recHost{recs: []storage.Record{rec("a", `{"text":"x"}`)}}
	res := runCapped(t, host, 0, `function handle()
		local r = db.query{collection = "app.bsky.feed.post", limit = 1}.records[1]
		r[6e7] = 1
	end`)
	wantMemoryError(t, res)
}

// Ordinary table building is unaffected: sequential stores, appends,
// small gaps, filling from the end; a store that only revisits a part
// already charged is not charged again; keys outside the array part go
// to the hash part as before.
func TestArrayStoresStillWork(t *testing.T) {
	res := runCapped(t, nil, 0, `function handle()
		local a, b, c, d = {}, {}, {}, {}
		for i = 1, 5e4 do a[i] = i end
		for i = 1, 5e4 do b[#b + 1] = i end
		for i = 100, 1, -1 do c[i] = i end
		for i = 1, 100, 3 do d[i] = i end
		-- marking and unmarking a sparse set charges its gap once
		local seen = {}
		for i = 1, 20000 do seen[4000] = true seen[4000] = nil end
		seen[4000] = true
		-- storing nil past the end changes nothing and costs nothing
		local e = {}
		for i = 1, 1000 do e[2^25 + i] = nil rawset(e, 2^25 + i, nil) table.insert(e, 2^25, nil) end
		-- outside the array part: the hash part
		local h = {}
		h[2^26] = 1 h[-5] = 2 h[0] = 3 h[1.5] = 4 h[2^53] = 5 rawset(h, 2^40, 6) table.insert(h, -1, 7)
		local n = 0 for _ in pairs(h) do n = n + 1 end
		return {#a, a[5e4], #b, b[5e4], #c, c[1], d[100], seen[4000], next(e) == nil, n, h[2^26], h[-5], h[0], h[1.5]}
	end`)
	if res.err != nil || res.out != `[50000,50000,50000,50000,100,1,100,true,true,7,1,2,3,4]` {
		t.Fatalf("%s %v", res.out, res.err)
	}
	// The gaps charged: c's 99 slots, d's 33 gaps of 2, seen's 3999, each
	// with its table's entry; nothing for the sequential stores.
	if res.mem.used > 1<<20 {
		t.Fatalf("charged %d bytes", res.mem.used)
	}
}

// The guarded assignment keeps the VM's semantics: metamethods, the order
// of evaluation of multiple assignments, errors and their positions.
func TestGuardedAssignmentSemantics(t *testing.T) {
	e := New(Options{})
	for _, tc := range []struct{ src, want string }{
		// __newindex runs for absent keys only; a table __newindex is
		// stored into; a lazy record materializes.
		{`local log = {}
		  local t = setmetatable({}, {__newindex = function(t, k, v) log[#log + 1] = k rawset(t, k, v * 10) end})
		  local k = 5 t[k] = 1 t[k] = 2
		  local back = {} local u = setmetatable({}, {__newindex = back}) u[k] = 3
		  return {log, t[5], rawget(u, 5) == nil, back[5]}`, `[[5],2,true,3]`},
		// Values are all evaluated before any store, stores run last
		// target first, and the value list is adjusted to the targets.
		{`local a, i = {}, 3 i, a[i] = i + 1, 20 return {a[3], i}`, `[20,4]`},
		{`local t = {} local k = 1 t[k], t[k] = 1, 2 return t[1]`, `1`},
		{`local function f() return 1, 2, 3 end local t, x = {} t[1], x, t[#t + 5] = f() return {t[1], x, t[5]}`, `[1,2,3]`},
		{`local t = {} local k = 2 t[k], t[k + 1], t[k + 2] = 1 return {t[2], t[3] == nil, t[4] == nil}`, `[1,true,true]`},
		{`local calls = 0 local function f() calls = calls + 1 return calls end local t = {} local k = 1 t[k] = f(), f() return {t[1], calls}`, `[1,2]`},
		{`local t, order = {a = {}}, {}
		  local function o(x) order[#order + 1] = type(x) == "table" and "t" or x return x end
		  local k = 1 o(t).a[o(k)], o(t)[o("b")] = o(10), o(20) return {order, t.a[1], t.b}`, `[["t",1,"t","b",10,20],10,20]`},
		// A call target is called once, a vararg value keeps one value.
		{`local t, calls = {}, 0 local function f() calls = calls + 1 return t end local k = 7 f()[k] = 1 return {calls, t[7]}`, `[1,1]`},
		{`local function g(...) local t = {} local k = 1 t[k] = ... return t[1] end return g(4, 5)`, `4`},
		// Storing nil removes a key.
		{`local t = {1, 2, 3} local k = 3 t[k] = nil return #t`, `2`},
	} {
		src := "function handle() " + tc.src + " end"
		if out, err := runScript(t, e, src); err != nil || out != tc.want {
			t.Errorf("%s\ngot %s %v, want %s", tc.src, out, err, tc.want)
		}
	}
	// Errors name the line of the assignment, as the VM's do.
	for _, tc := range []struct{ src, want string }{
		{"local t = {}\nlocal k\nt[k] = 1", "test:4: table index is nil"},
		{"local t = {}\nlocal k = 0/0\nt[k] = 1", "test:4: table index is NaN"},
		{"local t\nlocal k = 1\nt[k] = 1", "test:4: attempt to index a non-table object(nil) with key '1'"},
		{"local t, x = nil\nlocal k = 1\nx, t[k] = 1, 2", "test:4: attempt to index a non-table object(nil) with key '1'"},
		{"local k = 1\nlocal t = {[k] = 1, [nil] = 2}", "test:3: table index is nil"},
		{"local k = 1\nstring[k] = 1", "test:3: library tables are read-only"},
	} {
		_, err := runScript(t, e, "function handle()\n"+tc.src+"\nend")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.src, err, tc.want)
		}
	}
}

// A script that stores little is charged nothing for it.
func TestArrayStoresChargeNothingOrdinary(t *testing.T) {
	res := runCapped(t, nil, 0, `function handle() local t = {} t[1] = 1 t[2] = 2 t.x = 3 t[32] = 4 return #t end`)
	if res.err != nil || res.out != "32" || res.mem.used != 0 {
		t.Fatalf("%s %v, charged %d", res.out, res.err, res.mem.used)
	}
}
