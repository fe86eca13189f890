package luascript

import (
	"errors"
	"fmt"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// Memory accounting.
//
// Every Go function a script can call that makes memory in proportion to
// its arguments or to a host's answer charges the run's memory budget
// (run.mem, Limits.MaxAllocated) before it builds, or, when the size is
// known only afterwards, checks a bound on it before and charges what it
// built after: strings, decoded JSON, records and rows from the database,
// HTTP and XRPC responses, the values unpack and string.byte push and the
// tables built from a variable number of values. The budget is a running
// total that nothing gives back (a pcall does not reset it).
//
// What the VM does without calling Go (a table constructor with fixed
// fields, a store within or just past the end of an array part) is not
// counted: gopher-lua offers no hook for it, and the instruction budget
// bounds it (an instruction makes no more than a constructor's fields).
// A store to an integer key far past the end of an array part would make
// far more (gopher-lua fills the gap with nils: t[1e7] = 1 allocates
// 160 MB), so every such store is a call the rewriter puts in, or a
// library function, that charges the gap first (tables.go).

// What values cost when the host makes them, in bytes: what gopher-lua
// keeps for them on amd64, rounded up.
const (
	valueCost  = 16  // a value on the stack, or boxed in an interface
	stringCost = 16  // a string value, besides its bytes
	tableCost  = 160 // a table
	hashCost   = 512 // the hash part a table gets with its first string key
	fieldCost  = 112 // one string-keyed field
	elemCost   = 32  // one array element, with the slack of a growing array
)

// errMemory marks a refused charge.
var errMemory = errors.New("memory limit exceeded")

// memoryErr is the error of a refused charge.
func (v *vm) memoryErr() error {
	return fmt.Errorf("%w: the script built more than %d bytes of strings and data", errMemory, v.run.mem.limit)
}

// raise raises err in the script.
func (v *vm) raise(err error) {
	v.L.RaiseError("%s", err.Error())
}

// tryCharge charges n bytes to the run, or returns the memory error and
// charges nothing.
func (v *vm) tryCharge(n int64) error {
	r := v.run
	if r == nil || r.mem.take(n) {
		return nil
	}
	return v.memoryErr()
}

// charge charges n bytes to the run, raising the memory error when they
// do not fit.
func (v *vm) charge(n int64) {
	if err := v.tryCharge(n); err != nil {
		v.raise(err)
	}
}

// reserve raises the memory error unless n more bytes would fit; it
// charges nothing: the caller charges what it then builds.
func (v *vm) reserve(n int64) {
	if r := v.run; r != nil && !r.mem.fits(n) {
		r.mem.hit = true
		v.raise(v.memoryErr())
	}
}

// checkString raises "string too large" when a string of n bytes would
// be longer than the limit.
func (v *vm) checkString(n int64) {
	if max := int64(v.e.limits.MaxString); n > max {
		if v.run != nil {
			v.run.mem.hit = true
		}
		v.L.RaiseError("string too large: %d bytes (at most %d)", n, max)
	}
}

// alloc charges a new string of n bytes, which must also be within the
// string limit.
func (v *vm) alloc(n int64) {
	v.checkString(n)
	v.charge(n)
}

// reserveString is reserve for a string of at most n bytes.
func (v *vm) reserveString(n int64) {
	v.checkString(n)
	v.reserve(n)
}

// strRoom is the longest string that can still be built: a builder that
// grows past it calls alloc with its size, which raises.
func (v *vm) strRoom() int64 {
	room := int64(v.e.limits.MaxString)
	if v.run != nil {
		room = min(room, v.run.mem.left())
	}
	return room
}

// chargeResult wraps a string function whose result is at most bound(L)
// bytes: the bound is reserved before it runs, the string it returns
// charged after.
func (v *vm) chargeResult(orig lua.LGFunction, bound func(L *lua.LState) int64) lua.LGFunction {
	return func(L *lua.LState) int {
		v.reserveString(bound(L))
		n := orig(L)
		if s, ok := L.Get(-1).(lua.LString); ok && n > 0 {
			v.alloc(int64(len(s)))
		}
		return n
	}
}

// maxDateDirective bounds what os.date writes for one % directive (%c
// is the longest: a date, a time and the zone's name).
const maxDateDirective = 64

// guardBase replaces the base and os functions that make memory the VM
// does not see with charged versions. It runs before the libraries are
// copied from the state's globals.
func (v *vm) guardBase() {
	L := v.L
	g := L.G.Global
	orig := func(t *lua.LTable, name string) lua.LGFunction {
		return t.RawGetString(name).(*lua.LFunction).GFunction
	}

	// A caught error's message is usually a new string: gopher-lua puts
	// the position before the message of error(), and runtime errors
	// quote the values involved.
	for _, name := range []string{"pcall", "xpcall"} {
		call := orig(g, name)
		v.base.RawSetString(name, L.NewFunction(func(L *lua.LState) int {
			n := call(L)
			if n == 2 && L.Get(-2) == lua.LFalse {
				if s, ok := L.Get(-1).(lua.LString); ok {
					v.charge(stringCost + int64(len(s)))
				}
			}
			return n
		}))
	}
	tostring := orig(g, "tostring")
	v.base.RawSetString("tostring", L.NewFunction(func(L *lua.LState) int {
		arg := L.CheckAny(1)
		n := tostring(L)
		if _, isStr := arg.(lua.LString); !isStr && L.GetMetaField(arg, "__tostring") == lua.LNil {
			v.charge(stringCost + int64(len(lua.LVAsString(L.Get(-1)))))
		}
		return n
	}))
	osLib := g.RawGetString(lua.OsLibName).(*lua.LTable)
	osLib.RawSetString("date", L.NewFunction(v.chargeResult(orig(osLib, "date"), func(L *lua.LState) int64 {
		f, ok := L.Get(1).(lua.LString)
		if !ok {
			return 64 // the default format, or a number
		}
		return addSize(int64(len(f)), mulSize(int64(strings.Count(string(f), "%")), maxDateDirective))
	})))
}

// values is the guard the rewriter puts around the last field of a table
// constructor when that field is a call or `...` ({...}, {f()}): it
// charges an array slot for each value and returns them all.
func (v *vm) values(L *lua.LState) int {
	n := L.GetTop()
	v.charge(mulSize(int64(n), elemCost))
	return n
}

// tablePack is Lua 5.2's table.pack.
func (v *vm) tablePack(L *lua.LState) int {
	n := L.GetTop()
	v.charge(addSize(tableCost+hashCost+fieldCost, mulSize(int64(n), elemCost)))
	t := L.CreateTable(n, 1)
	for i := 1; i <= n; i++ {
		t.RawSetInt(i, L.Get(i))
	}
	t.RawSetString("n", lua.LNumber(n))
	L.Push(t)
	return 1
}

// maxLogMessage is where log and print cut their message.
const maxLogMessage = 8 << 10

// print writes its arguments to the debug log, cut at maxLogMessage
// bytes like log: the message is never built longer than that.
func (v *vm) print(L *lua.LState) int {
	var b strings.Builder
	for i := 1; i <= L.GetTop(); i++ {
		s := L.ToStringMeta(L.Get(i)).String()
		if i > 1 {
			b.WriteByte('\t')
		}
		if room := maxLogMessage - b.Len(); len(s) > room {
			b.WriteString(s[:max(room, 0)])
			b.WriteString("…")
			break
		}
		b.WriteString(s)
	}
	v.charge(int64(b.Len()))
	if !v.line() {
		return 0
	}
	method := ""
	if v.run != nil && v.run.inv != nil {
		method = v.run.inv.Method
	}
	v.e.log.Debug("script print", "method", method, "message", b.String())
	return 0
}
