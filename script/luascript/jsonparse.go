package luascript

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	lua "github.com/yuin/gopher-lua"
)

// parser decodes JSON straight into Lua values (no intermediate Go
// values): records cross into scripts on every db.query, so this is a hot
// path. Each value is charged to the run's memory budget before it is
// made (memory.go); a charge that does not fit ends the parse with the
// memory error.
type parser struct {
	v   *vm
	s   []byte
	pos int
}

var errSyntax = errors.New("invalid JSON")

func (p *parser) ws() {
	for p.pos < len(p.s) {
		switch p.s[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) fail(what string) error {
	return fmt.Errorf("%w: %s at offset %d", errSyntax, what, p.pos)
}

// charge charges n bytes to the run (see vm.tryCharge).
func (p *parser) charge(n int64) error { return p.v.tryCharge(n) }

// parse decodes one value and requires nothing but whitespace after it.
func (p *parser) parse() (lua.LValue, error) {
	val, err := p.value(0)
	if err != nil {
		return lua.LNil, err
	}
	p.ws()
	if p.pos != len(p.s) {
		return lua.LNil, p.fail("trailing data")
	}
	return val, nil
}

func (p *parser) value(depth int) (lua.LValue, error) {
	if depth > maxJSONDepth {
		return lua.LNil, errors.New("JSON nested too deeply")
	}
	p.ws()
	if p.pos >= len(p.s) {
		return lua.LNil, p.fail("unexpected end")
	}
	switch c := p.s[p.pos]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		s, err := p.str()
		return lua.LString(s), err
	case c == 't':
		return lua.LTrue, p.lit("true")
	case c == 'f':
		return lua.LFalse, p.lit("false")
	case c == 'n':
		return p.v.null, p.lit("null")
	case c == '-' || (c >= '0' && c <= '9'):
		if err := p.charge(valueCost); err != nil {
			return lua.LNil, err
		}
		return p.number()
	}
	return lua.LNil, p.fail("unexpected character")
}

func (p *parser) lit(word string) error {
	if len(p.s)-p.pos < len(word) || string(p.s[p.pos:p.pos+len(word)]) != word {
		return p.fail("invalid literal")
	}
	p.pos += len(word)
	return nil
}

func (p *parser) number() (lua.LValue, error) {
	start := p.pos
	if p.s[p.pos] == '-' {
		p.pos++
	}
	digits := func() int {
		n := 0
		for p.pos < len(p.s) && p.s[p.pos] >= '0' && p.s[p.pos] <= '9' {
			p.pos, n = p.pos+1, n+1
		}
		return n
	}
	if digits() == 0 {
		return lua.LNil, p.fail("invalid number")
	}
	if p.pos < len(p.s) && p.s[p.pos] == '.' {
		p.pos++
		if digits() == 0 {
			return lua.LNil, p.fail("invalid number")
		}
	}
	if p.pos < len(p.s) && (p.s[p.pos] == 'e' || p.s[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.s) && (p.s[p.pos] == '+' || p.s[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return lua.LNil, p.fail("invalid number")
		}
	}
	f, err := strconv.ParseFloat(string(p.s[start:p.pos]), 64)
	if err != nil {
		return lua.LNil, p.fail("invalid number")
	}
	return lua.LNumber(f), nil
}

// str decodes a string; strings without escapes are sliced directly.
func (p *parser) str() (string, error) {
	return p.strWith(func(b []byte) string { return string(b) })
}

// strWith decodes a string, making the ones without escapes from their
// bytes with plain. The string is charged at its encoded length, which
// its decoded one never exceeds.
func (p *parser) strWith(plain func([]byte) string) (string, error) {
	start := p.pos
	p.pos++
	escaped := false
	for p.pos < len(p.s) {
		if jsonASCII[p.s[p.pos]] {
			p.pos++
			continue
		}
		switch c := p.s[p.pos]; {
		case c == '"':
			p.pos++
			if err := p.charge(stringCost + int64(p.pos-start-2)); err != nil {
				return "", err
			}
			if !escaped {
				return plain(p.s[start+1 : p.pos-1]), nil
			}
			var s string
			if err := json.Unmarshal(p.s[start:p.pos], &s); err != nil {
				return "", p.fail("invalid string")
			}
			return s, nil
		case c == '\\':
			escaped = true
			p.pos += 2
		case c < 0x20:
			return "", p.fail("control character in string")
		default:
			p.pos++
		}
	}
	return "", p.fail("unterminated string")
}

// Object keys repeat from record to record, so the parser keeps the ones
// it has seen (up to maxInterned of at most maxInternLen bytes, per VM)
// and hands out the same string instead of allocating it again.
const (
	maxInterned  = 1024
	maxInternLen = 64
)

// key decodes an object key.
func (p *parser) key() (string, error) { return p.strWith(p.v.intern) }

// intern returns b as a string, from the VM's table of keys when it can.
func (v *vm) intern(b []byte) string {
	if len(b) > maxInternLen {
		return string(b)
	}
	if s, ok := v.keys[string(b)]; ok {
		return s
	}
	s := string(b)
	if v.keys == nil || len(v.keys) >= maxInterned {
		v.keys = make(map[string]string, 64)
	}
	v.keys[s] = s
	return s
}

func (p *parser) array(depth int) (lua.LValue, error) {
	p.pos++
	if err := p.charge(tableCost); err != nil {
		return lua.LNil, err
	}
	t := p.v.newArray(0)
	p.ws()
	if p.pos < len(p.s) && p.s[p.pos] == ']' {
		p.pos++
		return t, nil
	}
	for i := 1; ; i++ {
		if err := p.charge(elemCost); err != nil {
			return lua.LNil, err
		}
		val, err := p.value(depth + 1)
		if err != nil {
			return lua.LNil, err
		}
		t.RawSetInt(i, val)
		p.ws()
		if p.pos >= len(p.s) {
			return lua.LNil, p.fail("unterminated array")
		}
		switch p.s[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return t, nil
		default:
			return lua.LNil, p.fail("expected , or ]")
		}
	}
}

func (p *parser) object(depth int) (lua.LValue, error) {
	p.pos++
	if err := p.charge(tableCost); err != nil {
		return lua.LNil, err
	}
	t := p.v.L.CreateTable(0, 8)
	p.ws()
	if p.pos < len(p.s) && p.s[p.pos] == '}' {
		p.pos++
		return t, nil
	}
	if err := p.charge(hashCost); err != nil {
		return lua.LNil, err
	}
	for {
		if err := p.charge(fieldCost); err != nil {
			return lua.LNil, err
		}
		p.ws()
		if p.pos >= len(p.s) || p.s[p.pos] != '"' {
			return lua.LNil, p.fail("expected a key")
		}
		k, err := p.key()
		if err != nil {
			return lua.LNil, err
		}
		p.ws()
		if p.pos >= len(p.s) || p.s[p.pos] != ':' {
			return lua.LNil, p.fail("expected :")
		}
		p.pos++
		val, err := p.value(depth + 1)
		if err != nil {
			return lua.LNil, err
		}
		t.RawSetString(k, val)
		p.ws()
		if p.pos >= len(p.s) {
			return lua.LNil, p.fail("unterminated object")
		}
		switch p.s[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			return t, nil
		default:
			return lua.LNil, p.fail("expected , or }")
		}
	}
}

// decodeObject decodes raw, which must hold one JSON object, into a new
// table (materialize moves the contents into the lazy record's table).
// It reports false when raw is not one JSON object, and the memory error
// when decoding does not fit the budget.
func (v *vm) decodeObject(raw []byte) (*lua.LTable, bool, error) {
	val, err := v.fromJSON(raw)
	if errors.Is(err, errMemory) {
		return nil, false, err
	}
	t, ok := val.(*lua.LTable)
	return t, err == nil && ok && t.Metatable == lua.LNil, nil
}
