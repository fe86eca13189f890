package luascript

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/script"
)

// run compiles src and runs it once with an empty invocation.
func runScript(t *testing.T, e *Engine, src string) (string, error) {
	t.Helper()
	p, err := e.Compile("test", src)
	if err != nil {
		return "", err
	}
	out, err := p.Run(context.Background(), &script.Invocation{Host: nopHost{}, Kind: script.KindQuery, Method: "com.example.test"})
	return string(out), err
}

func kindOf(err error) script.ErrorKind {
	var se *script.Error
	if errors.As(err, &se) {
		return se.Kind
	}
	return 0
}

func TestHandleResultBecomesJSON(t *testing.T) {
	e := New(Options{})
	out, err := runScript(t, e, `function handle() return {b = 1.5, a = "x", list = {1, 2, 3}, empty = json.empty_array, obj = {}, n = json.null} end`)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"a":"x","b":1.5,"empty":[],"list":[1,2,3],"n":null,"obj":{}}`
	if out != want {
		t.Fatalf("got %s, want %s", out, want)
	}
}

func TestErrorsAreClassified(t *testing.T) {
	e := New(Options{})
	for _, tc := range []struct {
		src  string
		kind script.ErrorKind
	}{
		{`function handle( return 1 end`, script.ErrSyntax},
		{`x = 1`, script.ErrNoHandle},
		{`function handle() error("boom") end`, script.ErrRuntime},
		{`function handle() return nil + 1 end`, script.ErrRuntime},
		{`function handle() return function() end end`, script.ErrRuntime},
		{`function handle() while true do end end`, script.ErrBudget},
	} {
		_, err := runScript(t, e, tc.src)
		if kindOf(err) != tc.kind {
			t.Errorf("%s: got %v (kind %d), want kind %d", tc.src, err, kindOf(err), tc.kind)
		}
	}
	if got := script.PublicMessage(&script.Error{Kind: script.ErrBudget}); got != "script exceeded execution time limit" {
		t.Fatal(got)
	}
	if got := script.PublicMessage(&script.Error{Kind: script.ErrRuntime, Msg: "secret detail"}); got != "script execution failed" {
		t.Fatal(got)
	}
}

// TestInstructionBudgetIsExact finds the instruction count of a script
// with a generous budget, then checks that exactly that budget passes and
// one instruction fewer fails.
func TestInstructionBudgetIsExact(t *testing.T) {
	src := `function handle() local s = 0 for i = 1, 1000 do s = s + i end return s end`
	lo, hi := int64(1), int64(DefaultInstructions)
	for lo < hi { // the smallest budget that passes
		mid := (lo + hi) / 2
		if _, err := runScript(t, New(Options{Limits: Limits{Instructions: mid}}), src); err == nil {
			hi = mid
		} else if kindOf(err) == script.ErrBudget {
			lo = mid + 1
		} else {
			t.Fatal(err)
		}
	}
	need := lo
	if need < 2000 || need > 6000 {
		t.Fatalf("a 1000-iteration loop needed %d instructions", need)
	}
	if out, err := runScript(t, New(Options{Limits: Limits{Instructions: need}}), src); err != nil || out != "500500" {
		t.Fatalf("budget %d: %s %v", need, out, err)
	}
	if _, err := runScript(t, New(Options{Limits: Limits{Instructions: need - 1}}), src); kindOf(err) != script.ErrBudget {
		t.Fatalf("budget %d: %v", need-1, err)
	}
	// The default budget is the specification's 1,000,000.
	if New(Options{}).Limits().Instructions != 1_000_000 {
		t.Fatal("default budget")
	}
}

func TestBudgetCannotBeCaughtWithPcall(t *testing.T) {
	e := New(Options{})
	src := `function handle()
		for i = 1, 100 do pcall(function() while true do end end) end
		return "escaped"
	end`
	if out, err := runScript(t, e, src); kindOf(err) != script.ErrBudget {
		t.Fatalf("got %q %v", out, err)
	}
}

func TestDeadlineStopsScripts(t *testing.T) {
	e := New(Options{Limits: Limits{Instructions: 1 << 62, Timeout: 50 * time.Millisecond}})
	start := time.Now()
	_, err := runScript(t, e, `function handle() while true do end end`)
	if kindOf(err) != script.ErrBudget || time.Since(start) > 5*time.Second {
		t.Fatalf("%v after %s", err, time.Since(start))
	}
}

func TestResourceExhaustionIsRefused(t *testing.T) {
	e := New(Options{})
	for _, tc := range []struct {
		name string
		kind script.ErrorKind
		src  string
	}{
		{"deep recursion", script.ErrRuntime, `local function f(n) return f(n + 1) + 1 end function handle() return f(1) end`},
		{"concat doubling", script.ErrMemory, `function handle() local s = "x" while true do s = s .. s end end`},
		{"concat unrolled", script.ErrMemory, `function handle() local s = ("x"):rep(1024) s = s..s s = s..s s = s..s s = s..s s = s..s s = s..s s = s..s s = s..s s = s..s s = s..s s = s..s s = s..s s = s..s s = s..s s = s..s end`},
		{"rep", script.ErrMemory, `function handle() return string.rep("x", 1e12) end`},
		{"rep method", script.ErrMemory, `function handle() return ("x"):rep(1e12) end`},
		{"rep separator", script.ErrMemory, `function handle() return ("x"):rep(1e8, "yyyyyyyy") end`},
		{"format width", script.ErrRuntime, `function handle() return string.format("%999999999d", 1) end`},
		{"gsub growth", script.ErrMemory, `function handle() local s = ("x"):rep(1e6) return (s:gsub("x", ("y"):rep(1000))) end`},
		{"gsub function", script.ErrMemory, `function handle() local s = ("x"):rep(1e6) local big = ("y"):rep(1e4) return (s:gsub("x", function() return big end)) end`},
		{"table.concat", script.ErrMemory, `function handle() local t = {} local s = ("x"):rep(1e6) for i = 1, 100 do t[i] = s end return table.concat(t) end`},
		{"many strings", script.ErrMemory, `function handle() local t = {} local s = ("x"):rep(1e7) for i = 1, 1000 do t[i] = s .. i end return #t end`},
		{"unpack", script.ErrRuntime, `function handle() local t = {} for i = 1, 200000 do t[i] = i end return {unpack(t)} end`},
		{"string.byte", script.ErrRuntime, `function handle() return {string.byte(("x"):rep(1e6), 1, -1)} end`},
		{"huge table", script.ErrBudget, `function handle() local t = {} local i = 0 while true do i = i + 1 t[i] = {i, i, i} end end`},
		{"upper growth", script.ErrMemory, `function handle() local t = {} local s = ("x"):rep(1e6) for i = 1, 1000 do t[i] = s:upper() end end`},
		{"json encode growth", script.ErrMemory, `function handle() local t = {} local s = ("x"):rep(1e6) for i = 1, 100 do t[i] = s end return json.encode(t) end`},
	} {
		start := time.Now()
		_, err := runScript(t, e, tc.src)
		if k := kindOf(err); k != tc.kind {
			t.Errorf("%s: got %v (kind %d), want kind %d", tc.name, err, k, tc.kind)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%s took %s", tc.name, d)
		}
	}
}

func TestSandboxHasNoWayOut(t *testing.T) {
	e := New(Options{})
	for _, expr := range []string{
		"io", "debug", "package", "require", "dofile", "loadfile", "load", "loadstring", "collectgarbage",
		"module", "getfenv", "setfenv", "newproxy", "coroutine", "channel", "os.execute", "os.exit", "os.getenv",
		"os.remove", "os.rename", "os.tmpname", "os.setenv", "string.dump", "math.randomseed", "getmetatable('').__index",
		"getmetatable(_G)",
	} {
		src := `function handle() local ok, v = pcall(function() return ` + expr + ` end) if ok and v ~= nil and v ~= false then return "reachable" end return "gone" end`
		out, err := runScript(t, e, src)
		if err != nil || out != `"gone"` {
			t.Errorf("%s: %s %v", expr, out, err)
		}
	}
	// The time functions of os stay.
	if out, err := runScript(t, e, `function handle() return type(os.time()) .. type(os.clock()) .. type(os.date("%Y")) end`); err != nil || out != `"numbernumberstring"` {
		t.Fatalf("%s %v", out, err)
	}
}

// TestNothingLeaksBetweenRuns mutates every shared thing a script can
// touch and checks that the next run on the same pooled VM sees none of it.
func TestNothingLeaksBetweenRuns(t *testing.T) {
	e := New(Options{PoolSize: 1})
	dirty := `function handle()
		leaked_global = "yes"
		rawset(_G, "raw_leak", 1)
		assert(not pcall(function() string.upper = function() return "hijacked" end end))
		assert(not pcall(function() table.insert = nil end))
		assert(not pcall(function() math.pi = 3 end))
		assert(not pcall(function() json.encode = nil end))
		assert(not pcall(function() db.query = nil end))
		assert(not pcall(function() Record.load_all = nil end))
		rawset(string, "upper", function() return "hijacked" end)
		rawset(db, "query", nil)
		rawset(Record, "load_all", false)
		return "ok"
	end`
	if _, err := runScript(t, e, dirty); err != nil {
		t.Fatal(err)
	}
	clean := `function handle()
		return {
			leaked = leaked_global == nil and raw_leak == nil,
			upper = ("a"):upper() == "A" and string.upper("b") == "B",
			insert = table.insert ~= nil, pi = math.pi > 3.14, encode = json.encode ~= nil,
			query = db.query ~= nil, load_all = Record.load_all ~= nil,
		}
	end`
	out, err := runScript(t, e, clean)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]bool
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(out, err)
	}
	for k, ok := range got {
		if !ok {
			t.Errorf("%s leaked into the next run: %s", k, out)
		}
	}
	if len(got) != 7 {
		t.Fatal(out)
	}
}

func TestConcatKeepsLuaSemantics(t *testing.T) {
	e := New(Options{})
	out, err := runScript(t, e, `
		local mt = {__concat = function(a, b) return "meta" end}
		function handle()
			local t = setmetatable({}, mt)
			return {"a" .. "b" .. 1 .. 2.5, t .. "x", "x" .. t, select(2, pcall(function() return "a" .. nil end))}
		end`)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, `["ab12.5","meta","meta","`) || !strings.Contains(out, "attempt to concatenate a nil value") {
		t.Fatal(out)
	}
}

func TestLua54Compatibility(t *testing.T) {
	e := New(Options{})
	out, err := runScript(t, e, `function handle()
		local p = table.pack(1, 2, 3)
		return {p.n, table.unpack({4, 5})}
	end`)
	if err != nil || out != `[3,4,5]` {
		t.Fatalf("%s %v", out, err)
	}
}

// TestVarargCompat checks Lua 5.1's vararg compatibility after Compile
// drops the main chunk's unreachable `arg` table: nested vararg functions
// still get theirs, and the main chunk sees `arg` as an ordinary global.
func TestVarargCompat(t *testing.T) {
	e := New(Options{})
	out, err := runScript(t, e, `
		local first = ...
		local mainArg = arg
		local function count(...) return arg.n end
		local function pass(...) return select("#", ...) end
		function handle() return {count(1, 2, 3), pass(1, 2), first == nil, mainArg == nil} end`)
	if err != nil || out != `[3,2,true,true]` {
		t.Fatalf("%s %v", out, err)
	}
}

// countingHost counts Log calls.
type countingHost struct {
	nopHost
	logs *int
}

func (h countingHost) Log(context.Context, *script.Invocation, string) { *h.logs++ }

// TestLogIsBoundedPerRun: a run writes at most maxLogEvents log()
// messages to the event log, plus one entry counting what was dropped.
func TestLogIsBoundedPerRun(t *testing.T) {
	n := 0
	p, err := New(Options{}).Compile("log", `function handle() for i = 1, 10000 do log("line " .. i) end return true end`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(context.Background(), &script.Invocation{Host: countingHost{logs: &n}, Kind: script.KindQuery}); err != nil {
		t.Fatal(err)
	}
	if n != maxLogEvents+1 {
		t.Fatalf("%d event-log entries, want %d and the count of the dropped", n, maxLogEvents+1)
	}
}
