package luascript

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	lua "github.com/yuin/gopher-lua"
)

// maxJSONDepth bounds nesting when converting between JSON and Lua.
const maxJSONDepth = 64

// fromJSON decodes JSON into a Lua value. Arrays are marked so that they
// encode back as arrays, empty ones included.
func (v *vm) fromJSON(raw []byte) (lua.LValue, error) {
	if len(raw) == 0 {
		return lua.LNil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return lua.LNil, err
	}
	return v.toLua(x, 0)
}

// toLua converts a decoded JSON value (json.Number numbers) into Lua.
func (v *vm) toLua(x any, depth int) (lua.LValue, error) {
	if depth > maxJSONDepth {
		return lua.LNil, errors.New("JSON nested too deeply")
	}
	switch x := x.(type) {
	case nil:
		return v.null, nil
	case bool:
		return lua.LBool(x), nil
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return lua.LNil, err
		}
		return lua.LNumber(f), nil
	case float64:
		return lua.LNumber(x), nil
	case string:
		return lua.LString(x), nil
	case []any:
		t := v.L.CreateTable(len(x), 0)
		for i, e := range x {
			lv, err := v.toLua(e, depth+1)
			if err != nil {
				return lua.LNil, err
			}
			t.RawSetInt(i+1, lv)
		}
		t.Metatable = v.arrayMT
		return t, nil
	case map[string]any:
		t := v.L.CreateTable(0, len(x))
		for k, e := range x {
			lv, err := v.toLua(e, depth+1)
			if err != nil {
				return lua.LNil, err
			}
			t.RawSetString(k, lv)
		}
		return t, nil
	}
	return lua.LNil, fmt.Errorf("unsupported JSON value %T", x)
}

// newArray returns an empty table marked as a JSON array.
func (v *vm) newArray(n int) *lua.LTable {
	t := v.L.CreateTable(n, 0)
	t.Metatable = v.arrayMT
	return t
}

// encodeJSON encodes a Lua value as JSON, failing past maxBytes. Tables
// marked as arrays (JSON input, json.empty_array, db results) and tables
// whose keys are exactly 1..n encode as arrays; other tables as objects
// with sorted keys (number keys become strings); an empty unmarked table
// is {}.
func (v *vm) encodeJSON(val lua.LValue, maxBytes int) (json.RawMessage, error) {
	e := encoder{max: maxBytes, arrayMT: v.arrayMT}
	if err := e.value(val, 0); err != nil {
		return nil, err
	}
	return e.buf, nil
}

type encoder struct {
	buf     []byte
	max     int
	arrayMT lua.LValue
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
	n := t.Len()
	if t.Metatable == e.arrayMT || (n > 0 && countKeys(t) == n) {
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
	type kv struct {
		k string
		v lua.LValue
	}
	var fields []kv
	var err error
	t.ForEach(func(k, val lua.LValue) {
		switch k := k.(type) {
		case lua.LString:
			fields = append(fields, kv{string(k), val})
		case lua.LNumber:
			fields = append(fields, kv{k.String(), val})
		default:
			err = fmt.Errorf("cannot encode a table key of type %s", k.Type().String())
		}
	})
	if err != nil {
		return err
	}
	slices.SortFunc(fields, func(a, b kv) int {
		switch {
		case a.k < b.k:
			return -1
		case a.k > b.k:
			return 1
		}
		return 0
	})
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

func countKeys(t *lua.LTable) int {
	n := 0
	t.ForEach(func(lua.LValue, lua.LValue) { n++ })
	return n
}

const hexDigits = "0123456789abcdef"

// str appends s as a JSON string; invalid UTF-8 becomes U+FFFD.
func (e *encoder) str(s string) {
	e.buf = append(e.buf, '"')
	for i := 0; i < len(s); {
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
