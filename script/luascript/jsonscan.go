package luascript

import (
	"bytes"
	"strconv"
	"unicode/utf8"
)

// maxSpliceKeys is the most keys an object may have for its record to be
// spliced: duplicate keys are looked for pairwise.
const maxSpliceKeys = 64

// scanner checks, without building anything, that a lazy record's stored
// JSON can be copied into encoder output as it is (see encoder.splice).
// One lives in each VM and its key stack is reused.
type scanner struct {
	s     []byte
	pos   int
	keys  [][2]int // spans in s of the keys of the objects being scanned
	depth int      // the deepest value seen; the record's fields are at 1
}

// spliceable reports whether raw is one JSON object that can be copied
// into the output unchanged: valid JSON in valid UTF-8, with no top-level
// "uri" or "cid" key (the record's own uri and cid win over those, so the
// record must be decoded), no duplicate or escaped keys, no surrogate
// escapes, no leading zeros and no numbers out of range. Anything else is
// left to the decoding path, which settles it exactly as the eager
// conversion does. It returns what follows the opening brace (through
// the closing one), whether the object is empty, and the deepest nesting
// in it.
func (sc *scanner) spliceable(raw []byte) (body []byte, empty bool, depth int, ok bool) {
	sc.s, sc.pos, sc.keys, sc.depth = raw, 0, sc.keys[:0], 0
	sc.ws()
	open := sc.pos
	ok = open < len(raw) && raw[open] == '{' && sc.object(0)
	end := sc.pos
	if ok {
		sc.ws()
		ok = sc.pos == len(raw)
	}
	sc.s = nil // the VM keeps the scanner, not the record
	if !ok {
		return nil, false, 0, false
	}
	return raw[open+1 : end], sc.depth == 0, sc.depth, true
}

func (sc *scanner) ws() {
	for sc.pos < len(sc.s) {
		switch sc.s[sc.pos] {
		case ' ', '\t', '\n', '\r':
			sc.pos++
		default:
			return
		}
	}
}

// value scans one value at the given depth, as parser.value decodes it.
func (sc *scanner) value(depth int) bool {
	if depth > maxJSONDepth {
		return false
	}
	sc.depth = max(sc.depth, depth)
	sc.ws()
	if sc.pos >= len(sc.s) {
		return false
	}
	switch c := sc.s[sc.pos]; {
	case c == '{':
		return sc.object(depth)
	case c == '[':
		return sc.array(depth)
	case c == '"':
		_, ok := sc.str()
		return ok
	case c == 't':
		return sc.lit("true")
	case c == 'f':
		return sc.lit("false")
	case c == 'n':
		return sc.lit("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return sc.number()
	}
	return false
}

func (sc *scanner) lit(word string) bool {
	if string(sc.s[sc.pos:min(len(sc.s), sc.pos+len(word))]) != word {
		return false
	}
	sc.pos += len(word)
	return true
}

// number scans a number as JSON writes them (the parser also takes
// leading zeros, which the output must not carry).
func (sc *scanner) number() bool {
	start := sc.pos
	if sc.s[sc.pos] == '-' {
		sc.pos++
	}
	digits := func() int {
		n := 0
		for sc.pos < len(sc.s) && sc.s[sc.pos] >= '0' && sc.s[sc.pos] <= '9' {
			sc.pos, n = sc.pos+1, n+1
		}
		return n
	}
	intStart := sc.pos
	if n := digits(); n == 0 || (n > 1 && sc.s[intStart] == '0') {
		return false
	}
	if sc.pos < len(sc.s) && sc.s[sc.pos] == '.' {
		sc.pos++
		if digits() == 0 {
			return false
		}
	}
	exp := false
	if sc.pos < len(sc.s) && (sc.s[sc.pos] == 'e' || sc.s[sc.pos] == 'E') {
		exp = true
		sc.pos++
		if sc.pos < len(sc.s) && (sc.s[sc.pos] == '+' || sc.s[sc.pos] == '-') {
			sc.pos++
		}
		if digits() == 0 {
			return false
		}
	}
	if exp || sc.pos-start > 300 { // only these can be out of range, which the parser refuses
		if _, err := strconv.ParseFloat(string(sc.s[start:sc.pos]), 64); err != nil {
			return false
		}
	}
	return true
}

// jsonASCII marks the bytes a JSON string holds as they are.
var jsonASCII = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// str scans a string; escaped reports a backslash in it.
func (sc *scanner) str() (escaped, ok bool) {
	sc.pos++
	for sc.pos < len(sc.s) {
		if jsonASCII[sc.s[sc.pos]] {
			sc.pos++
			continue
		}
		switch c := sc.s[sc.pos]; {
		case c == '"':
			sc.pos++
			return escaped, true
		case c == '\\':
			escaped = true
			if !sc.escape() {
				return escaped, false
			}
		case c < 0x20:
			return escaped, false
		default:
			r, size := utf8.DecodeRune(sc.s[sc.pos:])
			if r == utf8.RuneError && size == 1 {
				return escaped, false
			}
			sc.pos += size
		}
	}
	return escaped, false
}

// escape scans the escape sequence at pos. Surrogate escapes are refused:
// a lone one decodes to U+FFFD, which the copy would not carry.
func (sc *scanner) escape() bool {
	if sc.pos+1 >= len(sc.s) {
		return false
	}
	switch sc.s[sc.pos+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		sc.pos += 2
		return true
	case 'u':
		if sc.pos+6 > len(sc.s) {
			return false
		}
		r := 0
		for _, h := range sc.s[sc.pos+2 : sc.pos+6] {
			switch {
			case h >= '0' && h <= '9':
				r = r<<4 | int(h-'0')
			case h >= 'a' && h <= 'f':
				r = r<<4 | int(h-'a'+10)
			case h >= 'A' && h <= 'F':
				r = r<<4 | int(h-'A'+10)
			default:
				return false
			}
		}
		if r >= 0xd800 && r < 0xe000 {
			return false
		}
		sc.pos += 6
		return true
	}
	return false
}

func (sc *scanner) array(depth int) bool {
	sc.pos++
	sc.ws()
	if sc.pos < len(sc.s) && sc.s[sc.pos] == ']' {
		sc.pos++
		return true
	}
	for {
		if !sc.value(depth + 1) {
			return false
		}
		sc.ws()
		if sc.pos >= len(sc.s) {
			return false
		}
		switch sc.s[sc.pos] {
		case ',':
			sc.pos++
		case ']':
			sc.pos++
			return true
		default:
			return false
		}
	}
}

func (sc *scanner) object(depth int) bool {
	sc.pos++
	start := len(sc.keys)
	sc.ws()
	if sc.pos < len(sc.s) && sc.s[sc.pos] == '}' {
		sc.pos++
		return true
	}
	for {
		sc.ws()
		if sc.pos >= len(sc.s) || sc.s[sc.pos] != '"' {
			return false
		}
		k := [2]int{sc.pos + 1, 0}
		if escaped, ok := sc.str(); !ok || escaped {
			return false
		}
		k[1] = sc.pos - 1
		key := sc.s[k[0]:k[1]]
		if depth == 0 && (string(key) == "uri" || string(key) == "cid") {
			return false
		}
		if len(sc.keys)-start >= maxSpliceKeys {
			return false
		}
		for _, other := range sc.keys[start:] {
			if bytes.Equal(sc.s[other[0]:other[1]], key) {
				return false
			}
		}
		sc.keys = append(sc.keys, k)
		sc.ws()
		if sc.pos >= len(sc.s) || sc.s[sc.pos] != ':' {
			return false
		}
		sc.pos++
		if !sc.value(depth + 1) {
			return false
		}
		sc.ws()
		if sc.pos >= len(sc.s) {
			return false
		}
		switch sc.s[sc.pos] {
		case ',':
			sc.pos++
		case '}':
			sc.pos++
			sc.keys = sc.keys[:start]
			return true
		default:
			return false
		}
	}
}
