package luascript

import (
	"errors"
	"strings"
)

// Lua patterns with a step budget. gopher-lua's matcher backtracks without
// ever looking at the script's deadline or instruction budget, and a
// pattern such as "a-a-a-a-b" costs polynomial time of high degree in the
// subject's length: one call could hold a VM (and a core) far past the
// time limit, and with a pattern taken from a request parameter any client
// could. This matcher follows Lua 5.1's reference implementation
// (lstrlib.c) and calls check every patternCheckSteps steps; its error
// aborts the match.

const (
	patternMaxCaptures = 32
	patternMaxDepth    = 200 // nested matches (captures, ?, expansions)
	patternCheckSteps  = 1024
	capUnfinished      = -1
	capPosition        = -2
)

// patternError aborts a match: a malformed pattern or an exhausted budget.
type patternError struct{ err error }

// matcher is one match attempt over src with pat.
type matcher struct {
	src, pat string
	level    int
	capture  [patternMaxCaptures]struct{ init, len int }
	depth    int
	steps    int
	check    func() error
}

func (m *matcher) fail(msg string) {
	panic(patternError{errors.New(msg)})
}

// step counts work and consults the budget now and then.
func (m *matcher) step() {
	if m.steps++; m.steps%patternCheckSteps == 0 && m.check != nil {
		if err := m.check(); err != nil {
			panic(patternError{err})
		}
	}
}

// classEnd returns the index after the single-character class at p.
func (m *matcher) classEnd(p int) int {
	c := m.pat[p]
	p++
	switch c {
	case '%':
		if p >= len(m.pat) {
			m.fail("malformed pattern (ends with '%')")
		}
		return p + 1
	case '[':
		if p < len(m.pat) && m.pat[p] == '^' {
			p++
		}
		for { // the first character is part of the set, even ']'
			if p >= len(m.pat) {
				m.fail("malformed pattern (missing ']')")
			}
			c := m.pat[p]
			p++
			if c == '%' && p < len(m.pat) {
				p++
			}
			if p >= len(m.pat) {
				m.fail("malformed pattern (missing ']')")
			}
			if m.pat[p] == ']' {
				return p + 1
			}
		}
	}
	return p
}

// matchClass reports whether c is in the class %cl (C locale).
func matchClass(c, cl byte) bool {
	var res bool
	switch cl | 0x20 {
	case 'a':
		res = isLetter(c)
	case 'c':
		res = c < 32 || c == 127
	case 'd':
		res = c >= '0' && c <= '9'
	case 'l':
		res = c >= 'a' && c <= 'z'
	case 'p':
		res = c > 32 && c < 127 && !isLetter(c) && !(c >= '0' && c <= '9')
	case 's':
		res = c == ' ' || (c >= '\t' && c <= '\r')
	case 'u':
		res = c >= 'A' && c <= 'Z'
	case 'w':
		res = isLetter(c) || (c >= '0' && c <= '9')
	case 'x':
		res = (c >= '0' && c <= '9') || (c|0x20 >= 'a' && c|0x20 <= 'f')
	case 'z':
		res = c == 0
	default:
		return cl == c
	}
	if cl >= 'A' && cl <= 'Z' {
		return !res
	}
	return res
}

func isLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

// matchBracket reports whether c is in the set [..] from p ('[') to ec (']').
func (m *matcher) matchBracket(c byte, p, ec int) bool {
	sig := true
	if m.pat[p+1] == '^' {
		sig = false
		p++
	}
	for p++; p < ec; p++ {
		switch {
		case m.pat[p] == '%':
			p++
			if matchClass(c, m.pat[p]) {
				return sig
			}
		case m.pat[p+1] == '-' && p+2 < ec:
			p += 2
			if m.pat[p-2] <= c && c <= m.pat[p] {
				return sig
			}
		case m.pat[p] == c:
			return sig
		}
	}
	return !sig
}

// singleMatch reports whether src[s] matches the class from p to ep.
func (m *matcher) singleMatch(s, p, ep int) bool {
	if s >= len(m.src) {
		return false
	}
	c := m.src[s]
	switch m.pat[p] {
	case '.':
		return true
	case '%':
		return matchClass(c, m.pat[p+1])
	case '[':
		return m.matchBracket(c, p, ep-1)
	}
	return m.pat[p] == c
}

// match returns the end of a match of pat[p:] at src[s:], or -1.
func (m *matcher) match(s, p int) int {
	if m.depth++; m.depth > patternMaxDepth {
		m.fail("pattern too complex")
	}
	defer func() { m.depth-- }()
	for {
		m.step()
		if p == len(m.pat) {
			return s
		}
		switch m.pat[p] {
		case '(':
			if p+1 < len(m.pat) && m.pat[p+1] == ')' {
				return m.startCapture(s, p+2, capPosition)
			}
			return m.startCapture(s, p+1, capUnfinished)
		case ')':
			return m.endCapture(s, p+1)
		case '$':
			if p+1 == len(m.pat) {
				if s == len(m.src) {
					return s
				}
				return -1
			}
		case '%':
			if p+1 < len(m.pat) {
				switch c := m.pat[p+1]; {
				case c == 'b':
					if s = m.matchBalance(s, p+2); s == -1 {
						return -1
					}
					p += 4
					continue
				case c == 'f':
					p += 2
					if p >= len(m.pat) || m.pat[p] != '[' {
						m.fail("missing '[' after '%f' in pattern")
					}
					ep := m.classEnd(p)
					var prev, cur byte
					if s > 0 {
						prev = m.src[s-1]
					}
					if s < len(m.src) {
						cur = m.src[s]
					}
					if m.matchBracket(prev, p, ep-1) || !m.matchBracket(cur, p, ep-1) {
						return -1
					}
					p = ep
					continue
				case c >= '0' && c <= '9':
					if s = m.matchCapture(s, c); s == -1 {
						return -1
					}
					p += 2
					continue
				}
			}
		}
		ep := m.classEnd(p)
		ok := m.singleMatch(s, p, ep)
		if ep < len(m.pat) {
			switch m.pat[ep] {
			case '?':
				if ok {
					if res := m.match(s+1, ep+1); res != -1 {
						return res
					}
				}
				p = ep + 1
				continue
			case '*':
				return m.maxExpand(s, p, ep)
			case '+':
				if !ok {
					return -1
				}
				return m.maxExpand(s+1, p, ep)
			case '-':
				return m.minExpand(s, p, ep)
			}
		}
		if !ok {
			return -1
		}
		s, p = s+1, ep
	}
}

func (m *matcher) maxExpand(s, p, ep int) int {
	i := 0
	for m.singleMatch(s+i, p, ep) {
		m.step()
		i++
	}
	for ; i >= 0; i-- {
		if res := m.match(s+i, ep+1); res != -1 {
			return res
		}
	}
	return -1
}

func (m *matcher) minExpand(s, p, ep int) int {
	for {
		if res := m.match(s, ep+1); res != -1 {
			return res
		}
		if !m.singleMatch(s, p, ep) {
			return -1
		}
		s++
	}
}

func (m *matcher) startCapture(s, p, what int) int {
	if m.level >= patternMaxCaptures {
		m.fail("too many captures")
	}
	m.capture[m.level].init, m.capture[m.level].len = s, what
	m.level++
	res := m.match(s, p)
	if res == -1 {
		m.level--
	}
	return res
}

func (m *matcher) endCapture(s, p int) int {
	l := -1
	for i := m.level - 1; i >= 0; i-- {
		if m.capture[i].len == capUnfinished {
			l = i
			break
		}
	}
	if l < 0 {
		m.fail("invalid pattern capture")
	}
	m.capture[l].len = s - m.capture[l].init
	res := m.match(s, p)
	if res == -1 {
		m.capture[l].len = capUnfinished
	}
	return res
}

func (m *matcher) matchBalance(s, p int) int {
	if p+1 >= len(m.pat) {
		m.fail("missing arguments to '%b'")
	}
	if s >= len(m.src) || m.src[s] != m.pat[p] {
		return -1
	}
	open, close := m.pat[p], m.pat[p+1]
	depth := 1
	for s++; s < len(m.src); s++ {
		m.step()
		switch m.src[s] {
		case close:
			if depth--; depth == 0 {
				return s + 1
			}
		case open:
			depth++
		}
	}
	return -1
}

func (m *matcher) matchCapture(s int, c byte) int {
	l := int(c - '1')
	if l < 0 || l >= m.level || m.capture[l].len == capUnfinished {
		m.fail("invalid capture index")
	}
	n := m.capture[l].len
	if n == capPosition {
		n = 0 // a position capture refers back to the empty string, as in gopher-lua
	}
	if len(m.src)-s >= n && m.src[m.capture[l].init:m.capture[l].init+n] == m.src[s:s+n] {
		return s + n
	}
	return -1
}

// find looks for the first match at or after init; anchored patterns
// (leading '^') are tried at init only. It returns the match's bounds.
func (m *matcher) find(init int, anchored bool) (start, end int) {
	p := 0
	if anchored {
		p = 1
	}
	for s := init; s <= len(m.src); s++ {
		m.level, m.depth = 0, 0
		if e := m.match(s, p); e != -1 {
			return s, e
		}
		if anchored {
			break
		}
	}
	return -1, -1
}

// captureValue is capture i as a string, or as a position (1-based) when
// isPos; with no captures, i == 0 is the whole match s..e.
func (m *matcher) captureValue(i, s, e int) (str string, pos int, isPos bool) {
	if i >= m.level {
		if i != 0 {
			m.fail("invalid capture index")
		}
		return m.src[s:e], 0, false
	}
	c := m.capture[i]
	switch c.len {
	case capUnfinished:
		m.fail("unfinished capture")
	case capPosition:
		return "", c.init + 1, true
	}
	return m.src[c.init : c.init+c.len], 0, false
}

// hasSpecials reports whether a pattern needs the matcher at all.
func hasSpecials(pat string) bool { return strings.ContainsAny(pat, "^$*+?.([%-") }
