package luascript

import (
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// string.find, match, gmatch and gsub on the budgeted matcher (pattern.go),
// with Lua 5.1's semantics where gopher-lua's library departed from them
// (string.match answers nil when nothing matches; %f frontiers work;
// malformed patterns and replacement values are errors), and gopher-lua's
// anchored gmatch. gmatch finds one match per call (gopher-lua's collected
// every match up front), and gsub's result counts against the string
// limit and the memory budget as it grows.

// newMatcher starts a match of pat over src that stops when the run's
// instruction budget or deadline runs out.
func (v *vm) newMatcher(src, pat string) *matcher {
	return &matcher{src: src, pat: pat, check: v.patternCheck}
}

// patternCheck charges a quarter instruction per matcher step to the
// budget and reports an exhausted budget or a passed deadline.
func (v *vm) patternCheck() error {
	if v.run == nil {
		return nil
	}
	b := &v.run.budget
	if b.left -= patternCheckSteps / 4; b.left < 0 {
		b.exceeded = true
		return errBudget
	}
	return b.parent.Err()
}

// protect runs fn, turning a pattern error into an error (other panics,
// such as Lua errors raised by a replacement function, go on).
func protect(fn func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			pe, ok := r.(patternError)
			if !ok {
				panic(r)
			}
			err = pe.err
		}
	}()
	fn()
	return nil
}

// startIndex turns a 1-based, possibly negative init into an offset in
// [0, n].
func startIndex(init, n int) int {
	if init < 0 {
		init = max(n+init+1, 0)
	}
	return min(max(init-1, 0), n)
}

// pushCaptures pushes the captures of a match s..e (the whole match when
// there are none and whole is set) and returns how many.
func pushCaptures(L *lua.LState, m *matcher, s, e int, whole bool) int {
	n := m.level
	if n == 0 && whole {
		n = 1
	}
	for i := range n {
		L.Push(captureLValue(m, i, s, e))
	}
	return n
}

func captureLValue(m *matcher, i, s, e int) lua.LValue {
	str, pos, isPos := m.captureValue(i, s, e)
	if isPos {
		return lua.LNumber(pos)
	}
	return lua.LString(str)
}

func (v *vm) strFind(L *lua.LState) int  { return v.findAux(L, true) }
func (v *vm) strMatch(L *lua.LState) int { return v.findAux(L, false) }

func (v *vm) findAux(L *lua.LState, find bool) int {
	src, pat := L.CheckString(1), L.CheckString(2)
	init := startIndex(L.OptInt(3, 1), len(src))
	if find && (lua.LVAsBool(L.Get(4)) || !hasSpecials(pat)) {
		i := strings.Index(src[init:], pat)
		if i < 0 {
			L.Push(lua.LNil)
			return 1
		}
		L.Push(lua.LNumber(init + i + 1))
		L.Push(lua.LNumber(init + i + len(pat)))
		return 2
	}
	m := v.newMatcher(src, pat)
	n := 0
	err := protect(func() {
		start, end := m.find(init, len(pat) > 0 && pat[0] == '^')
		switch {
		case start < 0:
			L.Push(lua.LNil)
			n = 1
		case find:
			L.Push(lua.LNumber(start + 1))
			L.Push(lua.LNumber(end))
			n = 2 + pushCaptures(L, m, start, end, false)
		default:
			n = pushCaptures(L, m, start, end, true)
		}
	})
	if err != nil {
		L.RaiseError("%s", err.Error())
	}
	return n
}

func (v *vm) strGmatch(L *lua.LState) int {
	src, pat := L.CheckString(1), L.CheckString(2)
	// A leading '^' anchors the iteration to the start, as gopher-lua's
	// gmatch did: one match at most.
	anchored, p := len(pat) > 0 && pat[0] == '^', 0
	if anchored {
		p = 1
	}
	pos := 0
	L.Push(L.NewFunction(func(L *lua.LState) int {
		m := v.newMatcher(src, pat)
		n := 0
		err := protect(func() {
			for s := pos; s <= len(src); s++ {
				m.level, m.depth = 0, 0
				if anchored && s > 0 {
					break
				}
				if e := m.match(s, p); e != -1 {
					pos = e
					if e == s {
						pos++ // an empty match: move on
					}
					n = pushCaptures(L, m, s, e, true)
					return
				}
			}
			pos = len(src) + 1
		})
		if err != nil {
			L.RaiseError("%s", err.Error())
		}
		return n
	}))
	return 1
}

func (v *vm) strGsub(L *lua.LState) int {
	src, pat := L.CheckString(1), L.CheckString(2)
	repl := L.Get(3)
	switch repl.(type) {
	case lua.LString, lua.LNumber, *lua.LTable, *lua.LFunction:
	default:
		L.ArgError(3, "string/function/table expected")
	}
	maxN := len(src) + 1
	if L.GetTop() >= 4 {
		maxN = L.CheckInt(4)
	}
	anchored := len(pat) > 0 && pat[0] == '^'
	p := 0
	if anchored {
		p = 1
	}
	m := v.newMatcher(src, pat)
	b := gsubOut{v: v}
	count := 0
	err := protect(func() {
		s := 0
		for count < maxN {
			m.level, m.depth = 0, 0
			e := m.match(s, p)
			if e != -1 {
				count++
				v.addReplacement(L, m, &b, s, e, repl)
			}
			if e != -1 && e > s {
				s = e
			} else if s < len(src) {
				b.write(src[s : s+1])
				s++
			} else {
				break
			}
			if anchored {
				break
			}
		}
		b.write(src[s:])
	})
	if err != nil {
		L.RaiseError("%s", err.Error())
	}
	v.alloc(int64(b.b.Len()))
	L.Push(lua.LString(b.b.String()))
	L.Push(lua.LNumber(count))
	return 2
}

// gsubOut is gsub's result being built: it never grows past the longest
// string that can still be built (vm.strRoom), which the replacement
// function, if any, makes shorter as it builds strings of its own.
type gsubOut struct {
	v *vm
	b strings.Builder
}

func (o *gsubOut) write(s string) {
	if n := int64(o.b.Len()) + int64(len(s)); n > o.v.strRoom() {
		o.v.alloc(n) // raises
	}
	o.b.WriteString(s)
}

// addReplacement appends what replaces the match s..e.
func (v *vm) addReplacement(L *lua.LState, m *matcher, b *gsubOut, s, e int, repl lua.LValue) {
	var val lua.LValue
	switch r := repl.(type) {
	case *lua.LTable:
		val = L.GetTable(r, captureLValue(m, 0, s, e))
	case *lua.LFunction:
		L.Push(r)
		L.Call(pushCaptures(L, m, s, e, true), 1)
		val = L.Get(-1)
		L.Pop(1)
	default: // a string (or number): %0-%9 and %%
		t := lua.LVAsString(repl)
		for i := 0; i < len(t); i++ {
			c := t[i]
			if c != '%' || i+1 == len(t) {
				b.write(t[i : i+1])
				continue
			}
			i++
			switch d := t[i]; {
			case d == '0':
				b.write(m.src[s:e])
			case d >= '1' && d <= '9':
				str, pos, isPos := m.captureValue(int(d-'1'), s, e)
				if isPos {
					b.write(strconv.Itoa(pos))
				} else {
					b.write(str)
				}
			default:
				b.write(t[i : i+1])
			}
		}
		return
	}
	switch {
	case val == lua.LNil || val == lua.LFalse:
		b.write(m.src[s:e]) // keep the original
	case lua.LVCanConvToString(val):
		b.write(lua.LVAsString(val))
	default:
		L.RaiseError("invalid replacement value (a %s)", val.Type().String())
	}
}
