package luascript

import (
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// guardStrings replaces the string functions that can build large strings
// with checked versions and adds the guarded concatenation and the guard
// of table constructors (values).
func (v *vm) guardStrings(str *lua.LTable) {
	L := v.L
	str.RawSetString(concatKey, L.NewFunction(v.concat))
	str.RawSetString(valuesKey, L.NewFunction(v.values))
	str.RawSetString("rep", L.NewFunction(v.rep))
	str.RawSetString("byte", L.NewFunction(v.guardResults(str.RawGetString("byte").(*lua.LFunction), "string slice too long")))
	format := str.RawGetString("format").(*lua.LFunction)
	str.RawSetString("format", L.NewFunction(func(L *lua.LState) int { return v.format(L, format) }))
	// Pattern functions on the budgeted matcher (patternlib.go).
	str.RawSetString("find", L.NewFunction(v.strFind))
	str.RawSetString("match", L.NewFunction(v.strMatch))
	str.RawSetString("gmatch", L.NewFunction(v.strGmatch))
	str.RawSetString("gsub", L.NewFunction(v.strGsub))
	// gopher-lua's lower and upper map runes, not bytes: an invalid byte
	// becomes U+FFFD, three bytes; reverse copies its argument twice.
	for _, name := range []string{"lower", "upper", "reverse"} {
		orig := str.RawGetString(name).(*lua.LFunction).GFunction
		str.RawSetString(name, L.NewFunction(v.chargeResult(orig, func(L *lua.LState) int64 {
			return mulSize(3, int64(len(L.CheckString(1))))
		})))
	}
	char := str.RawGetString("char").(*lua.LFunction).GFunction
	str.RawSetString("char", L.NewFunction(v.chargeResult(char, func(L *lua.LState) int64 { return int64(L.GetTop()) })))
	for _, name := range []string{"dump", "gfind"} {
		str.RawSetString(name, lua.LNil)
	}
}

// maxResults bounds the values one unpack or string.byte call returns.
const maxResults = 8000

// guardResults wraps unpack(t [, i [, j]]) or string.byte(s [, i [, j]])
// so that asking for more than maxResults values raises msg instead of
// filling the stack; the values pushed are charged.
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
		if j >= i {
			// j-i can overflow an int; as unsigned it cannot.
			count := uint64(j) - uint64(i)
			if count >= maxResults {
				L.RaiseError("%s", msg)
			}
			v.charge(int64(count+1) * valueCost)
		}
		return orig.GFunction(L)
	}
}

// concat implements `a .. b` (see rewrite.go).
func (v *vm) concat(L *lua.LState) int {
	a, b := L.Get(1), L.Get(2)
	if lua.LVCanConvToString(a) && lua.LVCanConvToString(b) {
		as, bs := lua.LVAsString(a), lua.LVAsString(b)
		v.alloc(int64(len(as)) + int64(len(bs)))
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

// rep is string.rep(s, n [, sep]) with the size checked before building;
// the size saturates instead of overflowing, so any count too large for
// the limits is refused.
func (v *vm) rep(L *lua.LState) int {
	s := L.CheckString(1)
	count := float64(L.CheckNumber(2))
	sep := L.OptString(3, "")
	if !(count >= 1) { // NaN too
		L.Push(lua.LString(""))
		return 1
	}
	n := int64(math.MaxInt64)
	if count < math.MaxInt64 {
		n = int64(count)
	}
	size := addSize(mulSize(int64(len(s)), n), mulSize(int64(len(sep)), n-1))
	v.alloc(size)
	switch {
	case size == 0:
		L.Push(lua.LString(""))
	case sep == "":
		L.Push(lua.LString(strings.Repeat(s, int(n))))
	default:
		// size is within the string limit, and so is n.
		var sb strings.Builder
		sb.Grow(int(size))
		for i := int64(0); i < n; i++ {
			if i > 0 {
				sb.WriteString(sep)
			}
			sb.WriteString(s)
		}
		L.Push(lua.LString(sb.String()))
	}
	return 1
}

// formatVerbs are the conversions of Lua 5.1's string.format.
const formatVerbs = "cdiouxXeEfgGqs"

// maxFormatted bounds what one conversion writes besides the bytes of a
// string argument: %99.99f of 1e308 writes about 410 bytes.
const maxFormatted = 512

// format is string.format with Lua 5.1's conversions only (gopher-lua
// hands the format to Go's fmt, whose argument indexes such as %[1]s and
// * widths would let a short format repeat a long argument), Lua 5.4's
// two-digit limit on widths and precisions, and the result size bounded
// before formatting.
func (v *vm) format(L *lua.LState, orig *lua.LFunction) int {
	f := L.CheckString(1)
	size := int64(len(f))
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
		if i >= len(f) || strings.IndexByte(formatVerbs, f[i]) < 0 {
			bad := "%"
			if i < len(f) {
				bad += string(f[i])
			}
			L.RaiseError("invalid option '%s' to 'format'", bad)
		}
		size = addSize(size, maxFormatted)
		// Go's fmt writes a string argument under any conversion; % #x
		// takes five bytes a byte (%q at most four).
		if s, ok := L.Get(arg).(lua.LString); ok {
			size = addSize(size, mulSize(5, int64(len(s))))
		}
		arg++
	}
	v.reserveString(size)
	n := orig.GFunction(L)
	if s, ok := L.Get(-1).(lua.LString); ok {
		v.alloc(int64(len(s)))
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
	size, room := int64(0), v.strRoom()
	for k := i; k <= j && k >= i; k++ { // k >= i: stop should k overflow
		val := t.RawGetInt(k)
		if !lua.LVCanConvToString(val) {
			L.RaiseError("invalid value (at index %d) in table for 'concat'", k)
		}
		s := lua.LVAsString(val)
		size += int64(len(s))
		if k > i {
			size += int64(len(sep))
		}
		if size > room {
			v.alloc(size) // raises
		}
		parts = append(parts, s)
	}
	v.alloc(size)
	L.Push(lua.LString(strings.Join(parts, sep)))
	return 1
}
