package luascript

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

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

	base        *lua.LTable                     // globals shared by every run
	proxies     []*lua.LTable                   // the library proxies in base
	libs        map[string]*lua.LTable          // library contents being assembled (newVM only)
	envMeta     *lua.LTable                     // metatable of every run's environment
	arrayMT     *lua.LTable                     // marks tables that encode as JSON arrays
	null        *lua.LUserData                  // json.null
	empty       *lua.LUserData                  // json.empty_array
	recordClass *lua.LTable                     // metatable of the Record proxy (adds __call)
	recordMT    *lua.LTable                     // metatable of Record objects
	lazyMT      *lua.LTable                     // metatable of lazy records (lazy.go)
	spareLazy   map[*lua.LTable]json.RawMessage // an emptied lazy map for the next run
	scan        scanner                         // checks stored JSON for splicing
	encBuf      []byte                          // encode's output buffer, reused
	encFields   []kv                            // encode's field stack, reused
	keys        map[string]string               // object keys the parser has seen (parser.key)
	validNSID   string                          // the collection recordQuery last found valid
}

// run is the state of one execution.
type run struct {
	ctx       context.Context // the request's context with the deadline; never the budget
	inv       *script.Invocation
	env       *lua.LTable
	limits    Limits
	allocated int64
	memoryHit bool
	// lazy holds the stored JSON of the run's lazy records (lazy.go);
	// lazyBytes is its total size.
	lazy      map[*lua.LTable]json.RawMessage
	lazyBytes int
	// rkeys are the record keys given to Record(collection, fields, rkey).
	rkeys  map[*lua.LTable]string
	budget budget // the LState's context while the script runs
	logs   int    // log() calls so far
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

	// The VM's own string table backs string methods ("x"):rep(...)
	// through the string metatable; guard it in place, add the guarded
	// concatenation, and protect the metatable so scripts cannot reach
	// the table.
	str := g.RawGetString(lua.StringLibName).(*lua.LTable)
	v.guardStrings(str)
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
	v.lib(lua.TabLibName).RawSetString("pack", L.NewFunction(tablePack))

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

// newEnv builds the global environment of one run.
func (v *vm) newEnv(inv *script.Invocation) *lua.LTable {
	env := v.L.CreateTable(0, envSize(inv))
	env.RawSetString("_G", env)
	v.setInvocationGlobals(env, inv)
	env.Metatable = v.envMeta
	v.run.env = env
	return env
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

// alloc accounts n bytes of new string data against the limits.
func (v *vm) alloc(n int) {
	r := v.run
	if r == nil {
		return
	}
	if n > r.limits.MaxString {
		r.memoryHit = true
		v.L.RaiseError("string too large: %d bytes (at most %d)", n, r.limits.MaxString)
	}
	r.allocated += int64(n)
	if r.allocated > r.limits.MaxAllocated {
		r.memoryHit = true
		v.L.RaiseError("memory limit exceeded: the script built more than %d bytes of strings", r.limits.MaxAllocated)
	}
}

// guardStrings replaces the string functions that can build large strings
// with checked versions and adds the guarded concatenation.
func (v *vm) guardStrings(str *lua.LTable) {
	L := v.L
	str.RawSetString(concatKey, L.NewFunction(v.concat))
	str.RawSetString("rep", L.NewFunction(v.rep))
	str.RawSetString("byte", L.NewFunction(v.guardResults(str.RawGetString("byte").(*lua.LFunction), "string slice too long")))
	format := str.RawGetString("format").(*lua.LFunction)
	str.RawSetString("format", L.NewFunction(func(L *lua.LState) int { return v.format(L, format) }))
	// Pattern functions on the budgeted matcher (patternlib.go).
	str.RawSetString("find", L.NewFunction(v.strFind))
	str.RawSetString("match", L.NewFunction(v.strMatch))
	str.RawSetString("gmatch", L.NewFunction(v.strGmatch))
	str.RawSetString("gsub", L.NewFunction(v.strGsub))
	for _, name := range []string{"lower", "upper", "reverse", "char"} {
		orig := str.RawGetString(name).(*lua.LFunction)
		str.RawSetString(name, L.NewFunction(func(L *lua.LState) int {
			n := orig.GFunction(L)
			if s, ok := L.Get(-1).(lua.LString); ok {
				v.alloc(len(s))
			}
			return n
		}))
	}
	for _, name := range []string{"dump", "gfind"} {
		str.RawSetString(name, lua.LNil)
	}
}

// maxResults bounds the values one unpack or string.byte call returns.
const maxResults = 8000

// guardResults wraps unpack(t [, i [, j]]) or string.byte(s [, i [, j]])
// so that asking for more than maxResults values raises msg instead of
// filling the stack.
func (v *vm) guardResults(orig *lua.LFunction, msg string) lua.LGFunction {
	return func(L *lua.LState) int {
		n := 0
		switch x := L.Get(1).(type) {
		case *lua.LTable:
			n = x.Len()
		case lua.LString:
			n = len(x)
		}
		i := L.OptInt(2, 1)
		j := n
		if L.GetTop() >= 3 && L.Get(3) != lua.LNil {
			j = L.CheckInt(3)
		}
		if _, isStr := L.Get(1).(lua.LString); isStr {
			// string.byte: j defaults to i; negative positions count from the end.
			if L.GetTop() < 3 || L.Get(3) == lua.LNil {
				j = i
			}
			if i < 0 {
				i = n + i + 1
			}
			if j < 0 {
				j = n + j + 1
			}
			j = min(j, n)
			i = max(i, 1)
		}
		if j-i+1 > maxResults {
			L.RaiseError("%s", msg)
		}
		return orig.GFunction(L)
	}
}

// concat implements `a .. b` (see rewriteConcat).
func (v *vm) concat(L *lua.LState) int {
	a, b := L.Get(1), L.Get(2)
	if lua.LVCanConvToString(a) && lua.LVCanConvToString(b) {
		as, bs := lua.LVAsString(a), lua.LVAsString(b)
		v.alloc(len(as) + len(bs))
		L.Push(lua.LString(as + bs))
		return 1
	}
	mm := L.GetMetaField(a, "__concat")
	if mm == lua.LNil {
		mm = L.GetMetaField(b, "__concat")
	}
	if mm == lua.LNil {
		bad := a
		if lua.LVCanConvToString(a) {
			bad = b
		}
		L.RaiseError("attempt to concatenate a %s value", bad.Type().String())
	}
	L.Push(mm)
	L.Push(a)
	L.Push(b)
	L.Call(2, 1)
	return 1
}

// rep is string.rep(s, n [, sep]) with the size checked before building.
func (v *vm) rep(L *lua.LState) int {
	s := L.CheckString(1)
	n := L.CheckInt(2)
	sep := L.OptString(3, "")
	if n <= 0 {
		L.Push(lua.LString(""))
		return 1
	}
	size := int64(len(s))*int64(n) + int64(len(sep))*int64(n-1)
	if size > int64(v.e.limits.MaxString) {
		v.alloc(v.e.limits.MaxString + 1)
	}
	v.alloc(int(size))
	if sep == "" {
		L.Push(lua.LString(strings.Repeat(s, n)))
		return 1
	}
	var sb strings.Builder
	sb.Grow(int(size))
	for i := 0; i < n; i++ {
		if i > 0 {
			sb.WriteString(sep)
		}
		sb.WriteString(s)
	}
	L.Push(lua.LString(sb.String()))
	return 1
}

// format is string.format with Lua 5.4's two-digit limit on widths and
// precisions, and the result size bounded before formatting.
func (v *vm) format(L *lua.LState, orig *lua.LFunction) int {
	f := L.CheckString(1)
	size := len(f)
	arg := 2
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			continue
		}
		i++
		if i < len(f) && f[i] == '%' {
			continue
		}
		for i < len(f) && strings.IndexByte("-+ #0", f[i]) >= 0 {
			i++
		}
		digits := 0
		for i < len(f) && f[i] >= '0' && f[i] <= '9' {
			i, digits = i+1, digits+1
		}
		if i < len(f) && f[i] == '.' {
			i++
			p := 0
			for i < len(f) && f[i] >= '0' && f[i] <= '9' {
				i, p = i+1, p+1
			}
			digits = max(digits, p)
		}
		if digits > 2 {
			L.RaiseError("invalid format (width or precision too long)")
		}
		size += 100
		if i < len(f) && (f[i] == 's' || f[i] == 'q') {
			size += 2 * len(lua.LVAsString(L.Get(arg)))
		}
		arg++
	}
	if size > v.e.limits.MaxString {
		v.alloc(size)
	}
	n := orig.GFunction(L)
	if s, ok := L.Get(-1).(lua.LString); ok {
		v.alloc(len(s))
	}
	return n
}

// tableConcat is table.concat with the size computed before joining.
func (v *vm) tableConcat(L *lua.LState) int {
	t := L.CheckTable(1)
	sep := L.OptString(2, "")
	i := L.OptInt(3, 1)
	j := L.OptInt(4, t.Len())
	var parts []string
	size := 0
	for k := i; k <= j; k++ {
		val := t.RawGetInt(k)
		if !lua.LVCanConvToString(val) {
			L.RaiseError("invalid value (at index %d) in table for 'concat'", k)
		}
		s := lua.LVAsString(val)
		size += len(s)
		if k > i {
			size += len(sep)
		}
		if size > v.e.limits.MaxString {
			v.alloc(size)
		}
		parts = append(parts, s)
	}
	v.alloc(size)
	L.Push(lua.LString(strings.Join(parts, sep)))
	return 1
}

// tablePack is Lua 5.2's table.pack.
func tablePack(L *lua.LState) int {
	n := L.GetTop()
	t := L.CreateTable(n, 1)
	for i := 1; i <= n; i++ {
		t.RawSetInt(i, L.Get(i))
	}
	t.RawSetString("n", lua.LNumber(n))
	L.Push(t)
	return 1
}

// print writes its arguments to the debug log.
func (v *vm) print(L *lua.LState) int {
	parts := make([]string, L.GetTop())
	for i := range parts {
		parts[i] = L.ToStringMeta(L.Get(i + 1)).String()
	}
	method := ""
	if v.run != nil && v.run.inv != nil {
		method = v.run.inv.Method
	}
	v.e.log.Debug("script print", "method", method, "message", fmt.Sprint(strings.Join(parts, "\t")))
	return 0
}
