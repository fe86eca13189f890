package luascript

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"

	"github.com/lexview/lexview/script"
)

// serializeLua is a Lua function both runs of the differential test use
// to turn a result into a string.
const serializeLua = `
local function ser(v)
	if type(v) == "function" then return "function" end
	if type(v) ~= "table" then return type(v) .. ":" .. tostring(v) end
	local keys = {}
	for k in pairs(v) do keys[#keys + 1] = k end
	table.sort(keys, function(a, b) return type(a) .. tostring(a) < type(b) .. tostring(b) end)
	local parts = {}
	for _, k in ipairs(keys) do parts[#parts + 1] = ser(k) .. "=" .. ser(rawget(v, k)) end
	return "{" .. table.concat(parts, ",") .. "}"
end
`

// rewritePrograms are run rewritten (by the engine) and as they are (by
// a plain gopher-lua state): each handle() returns what its statements
// did, serialized, and errors are caught with their messages, positions
// included.
var rewritePrograms = []string{
	// Index assignments of every shape.
	`local t, k = {}, "k" t[1] = 1 t[k] = 2 t.x = 3 t["y"] = 4 t[2^5] = 5 t[40] = 6 t[k .. k] = 7 t[#t + 1] = 8
	 t[-1], t[0], t[1.5], t[2^26], t[2^53] = 9, 10, 11, 12, 13 return t`,
	`local t = {a = {b = {}}} local k = 3 t.a.b[k] = 1 t.a["b"][k + 1] = 2 local function f() return t.a end f().b[k + 2] = 3
	 f()["c"] = 4 return t`,
	`local t = {} local i = 1 i, t[i] = i + 1, "old i" return {t, i}`,
	`local t = {} local i, j = 1, 2 t[i], t[j] = t[j], t[i] t[i], t[j] = "a", "b" t[i], t[j] = t[j], t[i] return t`,
	`local t = {} local k = 1 t[k], t[k] = "first", "second" return t`,
	`local function f() return 1, 2, 3 end local t, x, y = {} t[1], x, t[3], y = f() t[4], t[5] = (f()) return {t, x, y}`,
	`local function f() end local t = {} local k = 1 t[k], t[k + 1] = f() t[k + 2] = f() return {t, #t}`,
	`local log = {} local function o(x) log[#log + 1] = x return x end local t = {}
	 t[o(1)], t[o(2)], t[o(3)] = o("a"), o("b"), o("c"), o("d") return {t, log}`,
	`local function g(...) local t = {} local k = 1 t[k], t[k + 1] = ... t[k + 2] = ... return t end return g(7, 8, 9)`,
	`local t, a = {}, nil a, t[1] = {}, 1 t[2], a = 2, 3 return {t, a}`,
	// Metamethods.
	`local log = {} local mt = {__newindex = function(t, k, v) log[#log + 1] = tostring(k) .. "=" .. tostring(v) rawset(t, k, v) end}
	 local t = setmetatable({}, mt) local k = 1 t[k] = "x" t[k] = "y" t[k + 1], t.z = "p", "q" return {t, log}`,
	`local back = {} local t = setmetatable({}, {__newindex = back}) local k = 5 t[k] = 1 t[k + 1] = nil return {rawget(t, 5) or "absent", back}`,
	`local chain2 = {} local chain1 = setmetatable({}, {__newindex = chain2}) local t = setmetatable({}, {__newindex = chain1})
	 local k = 4 t[k] = "deep" return {rawget(t, 4) or "no", rawget(chain1, 4) or "no", chain2}`,
	`local t = setmetatable({}, {__index = function(t, k) return k * 2 end}) local k = 3 t[k] = t[k] + 1 return {rawget(t, 3), t[4]}`,
	`local t = setmetatable({}, {__len = function() return 10 end}) t[#t + 1] = "eleven" return rawget(t, 11)`,
	// Constructors.
	`local k, f = 3, function() return 1, 2, 3 end
	 return {[k] = "a", [k + 1] = "b", [2^6] = "c", [f()] = "d", ["s" .. k] = "e", 9, 8, f()}`,
	`local function g(...) return {[select("#", ...)] = "n", ...} end return g(5, 6, 7)`,
	// Errors, positions included.
	`local t, k = {}, nil return {pcall(function() t[k] = 1 end)}`,
	`local t, k = {}, 0/0 return {pcall(function() t[k] = 1 end)}`,
	`local t, k = nil, 1 return {pcall(function() t[k] = 1 end)}`,
	`local t, k = "str", 1 return {pcall(function() t[k] = 1 end)}`,
	`local t, x, k = nil, nil, 1 return {pcall(function() x, t[k] = 1, 2 end)}`,
	`local k = nil return {pcall(function() return {[k] = 1} end)}`,
	`return {pcall(function() local t, k = {}, 1 t[k] = nil + 1 end)}`,
	`return {pcall(function() local t, k = {}, 1 t[k], t[k + 1] = 1, nil + 1 end)}`,
	// Blocks, loops, goto, nested functions and methods.
	`local t = {} for i = 1, 5 do if i % 2 == 0 then t[i] = i else t[i * 10] = i end end
	 local j = 0 while j < 3 do j = j + 1 t[j + 100] = j end repeat t[j + 200] = j j = j - 1 until j == 0
	 for k, v in pairs({a = 1}) do t[k .. "!"] = v end do local n = 7 t[n] = n end return t`,
	`local t = {} for i = 1, 3 do if i == 2 then goto continue end t[i] = i ::continue:: end return t`,
	`local obj = {items = {}} function obj:add(x) self.items[#self.items + 1] = x return self end obj:add(1):add(2)
	 function obj.items.last(t) return t[#t] end return {obj.items, obj.items.last(obj.items)}`,
	`local function mk() local t = {} return function(k, v) t[k] = v return t end end local set = mk() set(1, "a") return set(3, "c")`,
}

// TestRewriteKeepsSemantics runs every program rewritten and as it is and
// compares what they return.
func TestRewriteKeepsSemantics(t *testing.T) {
	e := New(Options{})
	for _, prog := range rewritePrograms {
		src := serializeLua + "function handle() return ser((function() " + prog + " end)()) end"
		p, err := e.Compile("diff", src)
		if err != nil {
			t.Fatalf("%v\n%s", err, prog)
		}
		out, err := p.Run(context.Background(), &script.Invocation{Host: nopHost{}, Kind: script.KindQuery})
		if err != nil {
			t.Errorf("rewritten: %v\n%s", err, prog)
			continue
		}
		var got string
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		if want := plainLua(t, src); got != want {
			t.Errorf("%s\nrewritten: %s\nplain:     %s", prog, got, want)
		}
	}
}

// plainLua runs src's handle() in a plain gopher-lua state.
func plainLua(t *testing.T, src string) string {
	t.Helper()
	L := lua.NewState()
	defer L.Close()
	fn, err := L.Load(strings.NewReader(src), "diff")
	if err != nil {
		t.Fatal(err)
	}
	L.Push(fn)
	if err := L.PCall(0, 0, nil); err != nil {
		t.Fatal(err)
	}
	if err := L.CallByParam(lua.P{Fn: L.GetGlobal("handle"), NRet: 1, Protect: true}); err != nil {
		t.Fatal(err)
	}
	return L.Get(-1).String()
}
