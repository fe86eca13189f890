package luascript

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	lua "github.com/yuin/gopher-lua"
)

// maxJSONDepth bounds nesting when converting between JSON and Lua.
const maxJSONDepth = 64

// fromJSON decodes JSON into a Lua value. Arrays are marked so that they
// encode back as arrays, empty ones included; null becomes json.null.
func (v *vm) fromJSON(raw []byte) (lua.LValue, error) {
	if len(raw) == 0 {
		return lua.LNil, nil
	}
	p := parser{v: v, s: raw}
	return p.parse()
}

// newArray returns an empty table marked as a JSON array.
func (v *vm) newArray(n int) *lua.LTable {
	t := v.L.CreateTable(n, 0)
	t.Metatable = v.arrayMT
	return t
}

// appendJSON appends the JSON encoding of a Lua value to dst, failing
// past maxBytes (the buffer stops growing soon after). Tables
// marked as arrays (JSON input, json.empty_array, db results) and tables
// whose keys are exactly 1..n encode as arrays; other tables as objects
// with sorted keys (number keys become strings); an empty unmarked table
// is {}. A lazy record the script has not changed is written as its
// stored JSON with uri and cid added (see encoder.splice).
func (v *vm) appendJSON(dst []byte, val lua.LValue, maxBytes int) ([]byte, error) {
	out, err := v.encode(val, maxBytes)
	if err != nil {
		return nil, err
	}
	return append(dst, out...), nil
}

// encodeCharged encodes val as JSON for fn (a script function), within
// the string limit and the memory left, and charges the bytes; failures
// are raised. The result is valid until the next encode.
func (v *vm) encodeCharged(fn string, val lua.LValue) []byte {
	room := v.strRoom()
	out, err := v.encode(val, int(room))
	if err != nil && !errors.Is(err, errTooLarge) {
		v.L.RaiseError("%s: %s", fn, err.Error())
	}
	// Output too large is longer than room: alloc raises "string too
	// large" or the memory error.
	v.alloc(int64(len(out)))
	return out
}

// maxKeptBuffer is the largest encoding buffer a VM keeps between uses.
const maxKeptBuffer = 1 << 20

// encode is appendJSON into the VM's reusable buffer: the result is valid
// until the next encode.
func (v *vm) encode(val lua.LValue, maxBytes int) ([]byte, error) {
	e := encoder{v: v, buf: v.encBuf[:0], fields: v.encFields[:0], max: maxBytes}
	// Deferred: decoding a lazy record the encoder meets may raise the
	// memory error.
	defer func() {
		clear(e.fields[:e.high]) // drop the references to Lua values
		v.encFields = e.fields[:0]
		if cap(e.buf) <= maxKeptBuffer {
			v.encBuf = e.buf[:0]
		}
	}()
	err := e.value(val, 0)
	if err == nil && len(e.buf) > e.max {
		err = errTooLarge
	}
	return e.buf, err
}

// kv is one field of an object being encoded.
type kv struct {
	k string
	v lua.LValue
}

// encoder writes JSON. Its buffers belong to the VM: encoding runs no Lua
// code and so never re-enters itself.
type encoder struct {
	v      *vm
	buf    []byte
	fields []kv // a stack: each object being written owns a segment
	high   int  // the longest fields has been
	max    int
}

var errTooLarge = errors.New("JSON output too large")

func (e *encoder) value(val lua.LValue, depth int) error {
	if len(e.buf) > e.max {
		return errTooLarge
	}
	if depth > maxJSONDepth {
		return errors.New("value nested too deeply (or a table contains itself)")
	}
	switch x := val.(type) {
	case *lua.LNilType:
		e.buf = append(e.buf, "null"...)
	case lua.LBool:
		e.buf = strconv.AppendBool(e.buf, bool(x))
	case lua.LNumber:
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return errors.New("NaN and infinity have no JSON form")
		}
		if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			e.buf = strconv.AppendInt(e.buf, int64(f), 10)
		} else {
			e.buf = strconv.AppendFloat(e.buf, f, 'g', -1, 64)
		}
	case lua.LString:
		e.str(string(x))
	case *lua.LUserData:
		switch x.Value {
		case "null":
			e.buf = append(e.buf, "null"...)
		case "empty_array":
			e.buf = append(e.buf, "[]"...)
		default:
			return errors.New("cannot encode userdata")
		}
	case *lua.LTable:
		return e.table(x, depth)
	default:
		return fmt.Errorf("cannot encode a %s", val.Type().String())
	}
	return nil
}

func (e *encoder) table(t *lua.LTable, depth int) error {
	if e.v.isLazy(t) {
		if done, err := e.splice(t, depth); done {
			return err
		}
		e.v.materialize(t)
	}
	n := t.Len()
	if t.Metatable == lua.LValue(e.v.arrayMT) || (n > 0 && countKeys(t) == n) {
		e.buf = append(e.buf, '[')
		for i := 1; i <= n; i++ {
			if i > 1 {
				e.buf = append(e.buf, ',')
			}
			if err := e.value(t.RawGetInt(i), depth+1); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, ']')
		return nil
	}
	start := len(e.fields)
	var err error
	// Next, unlike ForEach, hands out the keys the table already holds
	// as interface values instead of boxing each one again.
	for k, val := t.Next(lua.LNil); k != lua.LNil; k, val = t.Next(k) {
		switch k := k.(type) {
		case lua.LString:
			e.fields = append(e.fields, kv{string(k), val})
		case lua.LNumber:
			e.fields = append(e.fields, kv{k.String(), val})
		default:
			err = fmt.Errorf("cannot encode a table key of type %s", k.Type().String())
		}
	}
	e.high = max(e.high, len(e.fields))
	if err == nil {
		// Nested tables push their fields after these (and may move the
		// stack); this segment stays as it is until it is popped.
		fields := e.fields[start:]
		slices.SortFunc(fields, func(a, b kv) int { return strings.Compare(a.k, b.k) })
		err = e.object(fields, depth)
	}
	e.fields = e.fields[:start]
	return err
}

// object writes sorted fields as a JSON object.
func (e *encoder) object(fields []kv, depth int) error {
	e.buf = append(e.buf, '{')
	for i, f := range fields {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		e.str(f.k)
		e.buf = append(e.buf, ':')
		if err := e.value(f.v, depth+1); err != nil {
			return err
		}
	}
	e.buf = append(e.buf, '}')
	return nil
}

// splice writes a lazy record the script has not changed (nothing was
// added to its table) as its stored JSON
// with uri and cid put first, without decoding it: {"cid":..,"uri":..,
// then the rest of the stored object. It reports false, having written
// nothing, when the record must be materialized and encoded as a table:
// when the stored JSON is not one spliceable object (scanner.spliceable),
// or when copying it would nest deeper than the encoder allows.
func (e *encoder) splice(t *lua.LTable, depth int) (bool, error) {
	r := e.v.run
	if r == nil {
		return false, nil
	}
	rec, ok := r.lazy[t]
	if !ok || !isEmpty(t) {
		return false, nil
	}
	body, empty, deepest, ok := e.v.scan.spliceable(rec.raw)
	if !ok || depth+max(deepest, 1) > maxJSONDepth {
		return false, nil
	}
	e.buf = append(e.buf, `{"cid":`...)
	e.str(rec.cid)
	e.buf = append(e.buf, `,"uri":`...)
	e.str(rec.uri)
	if empty {
		e.buf = append(e.buf, '}')
	} else {
		e.buf = append(e.buf, ',')
		e.buf = append(e.buf, body...)
	}
	if len(e.buf) > e.max {
		return true, errTooLarge
	}
	return true, nil
}

// countKeys counts the entries of t without boxing keys: the array part
// by index, then the hash part with Next from the end of the array.
func countKeys(t *lua.LTable) int {
	n, m := 0, t.MaxN()
	for i := 1; i <= m; i++ {
		if t.RawGetInt(i) != lua.LNil {
			n++
		}
	}
	k := lua.LNil
	if m > 0 {
		k = lua.LNumber(m)
	}
	for k, _ = t.Next(k); k != lua.LNil; k, _ = t.Next(k) {
		n++
	}
	return n
}

// isEmpty reports whether a lazy record's table holds nothing raw: a
// lazy table gains entries only from the array operations of the table
// library, in its array part or (number keys) its hash part.
func isEmpty(t *lua.LTable) bool {
	k, _ := t.Next(lua.LNil)
	return k == lua.LNil
}

const hexDigits = "0123456789abcdef"

// plainASCII marks the bytes str copies as they are.
var plainASCII = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// str appends s as a JSON string; invalid UTF-8 becomes U+FFFD. It stops
// early, leaving the buffer over max, when the string does not fit (an
// escape takes up to six bytes a byte).
func (e *encoder) str(s string) {
	if len(e.buf)+len(s) > e.max {
		// Too large whatever the escapes: only make the buffer say so.
		if len(e.buf) <= e.max {
			e.buf = append(e.buf, s[:e.max-len(e.buf)+1]...)
		}
		return
	}
	e.buf = append(e.buf, '"')
	for i := 0; i < len(s); {
		if len(e.buf) > e.max {
			return
		}
		if plainASCII[s[i]] {
			j := i + 1
			for j < len(s) && plainASCII[s[j]] {
				j++
			}
			e.buf = append(e.buf, s[i:j]...)
			i = j
			continue
		}
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				e.buf = append(e.buf, '\\', c)
			case c >= 0x20 && c != '<' && c != '>' && c != '&':
				e.buf = append(e.buf, c)
			case c == '\n':
				e.buf = append(e.buf, '\\', 'n')
			case c == '\r':
				e.buf = append(e.buf, '\\', 'r')
			case c == '\t':
				e.buf = append(e.buf, '\\', 't')
			default:
				e.buf = append(e.buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			e.buf = append(e.buf, `\ufffd`...)
		} else if r == '\u2028' || r == '\u2029' {
			e.buf = append(e.buf, `\u202`...)
			e.buf = append(e.buf, hexDigits[r&0xf])
		} else {
			e.buf = append(e.buf, s[i:i+size]...)
		}
		i += size
	}
	e.buf = append(e.buf, '"')
}
