package luascript

import (
	"context"

	lua "github.com/yuin/gopher-lua"

	"github.com/lexview/lexview/script"
)

// vm is one pooled gopher-lua state with the sandboxed globals prepared.
//
// Every run gets a fresh environment table whose metatable falls back to
// base, which holds the allowed functions and one read-only proxy per
// library. Whatever a script assigns lands in its own environment and dies
// with the run; library tables cannot be assigned to, and a proxy changed
// with rawset marks the VM unfit for reuse (see clean).
type vm struct {
	e     *Engine
	L     *lua.LState
	run   *run // the execution using the VM (&state), nil while idle
	state run  // the state of the current execution, reused

	base        *lua.LTable                // globals shared by every run
	proxies     []*lua.LTable              // the library proxies in base
	libs        map[string]*lua.LTable     // library contents being assembled (newVM only)
	envMeta     *lua.LTable                // metatable of every run's environment
	arrayMT     *lua.LTable                // marks tables that encode as JSON arrays
	null        *lua.LUserData             // json.null
	empty       *lua.LUserData             // json.empty_array
	recordClass *lua.LTable                // metatable of the Record proxy (adds __call)
	recordMT    *lua.LTable                // metatable of Record objects
	lazyMT      *lua.LTable                // metatable of lazy records (lazy.go)
	spareLazy   map[*lua.LTable]lazyRecord // an emptied lazy map for the next run
	scan        scanner                    // checks stored JSON for splicing
	encBuf      []byte                     // encode's output buffer, reused
	encFields   []kv                       // encode's field stack, reused
	keys        map[string]string          // object keys the parser has seen (parser.key)
	validNSID   string                     // the collection recordQuery last found valid
}

// run is the state of one execution.
type run struct {
	ctx context.Context // the request's context with the deadline; never the budget
	inv *script.Invocation
	env *lua.LTable
	mem memory // the memory budget (memory.go)
	// lazy holds the stored JSON of the run's lazy records (lazy.go);
	// lazyBytes is its total size.
	lazy      map[*lua.LTable]lazyRecord
	lazyBytes int
	// rkeys are the record keys given to Record(collection, fields, rkey).
	rkeys  map[*lua.LTable]string
	budget budget // the LState's context while the script runs
	// extents are the lengths up to which tables' array parts were
	// charged (tables.go).
	extents map[*lua.LTable]int
	logs    int // log() calls so far
	// lines counts the lines of output written (log() and print()),
	// dropped those the output bounds dropped (output.go).
	lines, dropped int
}

// Base functions scripts keep. Everything else in gopher-lua's base
// library (load, loadstring, dofile, loadfile, require, module, getfenv,
// setfenv, collectgarbage, newproxy, print, ...) is left out.
var baseAllowed = []string{
	"assert", "error", "ipairs", "next", "pairs", "pcall", "rawequal", "rawget", "rawset",
	"select", "setmetatable", "getmetatable", "tonumber", "tostring", "type", "unpack", "xpcall", "_VERSION",
}

// Library members scripts keep, by library.
var libAllowed = map[string][]string{
	lua.StringLibName: {"byte", "char", "find", "format", "gmatch", "gsub", "len", "lower", "match", "rep", "reverse", "sub", "upper"},
	lua.TabLibName:    {"concat", "insert", "maxn", "remove", "sort"},
	lua.MathLibName: {"abs", "acos", "asin", "atan", "atan2", "ceil", "cos", "cosh", "deg", "exp", "floor", "fmod", "frexp",
		"huge", "ldexp", "log", "log10", "max", "min", "modf", "pi", "pow", "rad", "random", "sin", "sinh", "sqrt", "tan", "tanh"},
	lua.OsLibName: {"clock", "date", "difftime", "time"},
}

func newVM(e *Engine) *vm {
	L := lua.NewState(lua.Options{
		SkipOpenLibs:        true,
		CallStackSize:       e.limits.CallStack,
		RegistrySize:        1024 * 4,
		RegistryMaxSize:     1024 * 256,
		MinimizeStackMemory: true,
	})
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{
		{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable},
		{lua.StringLibName, lua.OpenString}, {lua.MathLibName, lua.OpenMath}, {lua.OsLibName, lua.OpenOs},
	} {
		L.Push(L.NewFunction(lib.open))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	v := &vm{e: e, L: L, base: L.NewTable(), libs: map[string]*lua.LTable{}}
	v.arrayMT = L.NewTable()
	v.arrayMT.RawSetString("__metatable", lua.LFalse)
	v.null = L.NewUserData()
	v.null.Value = "null"
	v.empty = L.NewUserData()
	v.empty.Value = "empty_array"

	g := L.G.Global
	for _, name := range baseAllowed {
		v.base.RawSetString(name, g.RawGetString(name))
	}
	v.base.RawSetString("print", L.NewFunction(v.print))
	v.installLazy()
	v.guardBase()

	// The VM's own string table backs string methods ("x"):rep(...)
	// through the string metatable; guard it in place, add the guarded
	// concatenation, and protect the metatable so scripts cannot reach
	// the table.
	str := g.RawGetString(lua.StringLibName).(*lua.LTable)
	v.guardStrings(str)
	v.guardTables(str)
	if mt, ok := L.GetMetatable(lua.LString("")).(*lua.LTable); ok {
		mt.RawSetString("__metatable", lua.LFalse)
	}
	tab := g.RawGetString(lua.TabLibName).(*lua.LTable)
	tab.RawSetString("concat", L.NewFunction(v.tableConcat))
	for lib, names := range libAllowed {
		t := g.RawGetString(lib).(*lua.LTable)
		for _, n := range names {
			v.lib(lib).RawSetString(n, t.RawGetString(n))
		}
	}
	// unpack and string.byte push one value per element: bound them, as
	// the C Lua stack limit does, so that one call cannot run for long.
	unpack := L.NewFunction(v.guardResults(g.RawGetString("unpack").(*lua.LFunction), "too many results to unpack"))
	v.base.RawSetString("unpack", unpack)
	// Lua 5.2+ names scripts from other AppViews use.
	v.lib(lua.TabLibName).RawSetString("unpack", unpack)
	v.lib(lua.TabLibName).RawSetString("pack", L.NewFunction(v.tablePack))

	v.installHostLibs()
	readOnly := L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("library tables are read-only (assign to a local copy instead)")
		return 0
	})
	for name, contents := range v.libs {
		proxy := L.NewTable()
		mt := v.recordClass
		if name != "Record" {
			mt = L.NewTable()
		}
		mt.RawSetString("__index", contents)
		mt.RawSetString("__newindex", readOnly)
		mt.RawSetString("__metatable", lua.LFalse)
		proxy.Metatable = mt
		v.base.RawSetString(name, proxy)
		v.proxies = append(v.proxies, proxy)
	}
	v.libs = nil
	baseMeta := L.NewTable()
	baseMeta.RawSetString("__index", L.NewFunction(v.lazyGlobal))
	v.base.Metatable = baseMeta
	v.envMeta = L.NewTable()
	v.envMeta.RawSetString("__index", v.base)
	v.envMeta.RawSetString("__metatable", lua.LFalse)
	// Nothing reaches the state's own globals: every run gets its own
	// environment (newEnv).
	for _, name := range []string{"io", "debug", "package", "require", "dofile", "loadfile", "load", "loadstring", "collectgarbage", "module", "channel", "coroutine"} {
		g.RawSetString(name, lua.LNil)
	}
	return v
}

// lib returns the contents table of a library being assembled.
func (v *vm) lib(name string) *lua.LTable {
	t, ok := v.libs[name]
	if !ok {
		t = v.L.NewTable()
		v.libs[name] = t
	}
	return t
}

// newEnv builds the global environment of one run. It fails only when
// decoding the invocation's JSON does not fit the memory budget.
func (v *vm) newEnv(inv *script.Invocation) (*lua.LTable, error) {
	env := v.L.CreateTable(0, envSize(inv))
	env.RawSetString("_G", env)
	if err := v.setInvocationGlobals(env, inv); err != nil {
		return nil, err
	}
	env.Metatable = v.envMeta
	v.run.env = env
	return env, nil
}

// clean reports whether the VM is as it was before the run: a script can
// change a library proxy only with rawset, and then the VM is dropped.
func (v *vm) clean() bool {
	for _, p := range v.proxies {
		if k, _ := p.Next(lua.LNil); k != lua.LNil {
			return false
		}
	}
	return true
}

// lazyGlobal resolves globals that are built on first use (vars).
func (v *vm) lazyGlobal(L *lua.LState) int {
	if key, ok := L.Get(2).(lua.LString); ok && key == "vars" && v.run != nil && v.run.env != nil {
		t := v.loadVars()
		v.run.env.RawSetString("vars", t)
		L.Push(t)
		return 1
	}
	L.Push(lua.LNil)
	return 1
}
