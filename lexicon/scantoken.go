package lexicon

import (
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// The JSON tokens of the fast validation path (scan.go): strings with
// their escapes, integer literals, booleans, and the look-ahead a union
// needs to find its $type.

// string reads the JSON string at i. The result aliases the record (or
// the scratch buffer when the string has escapes) and is only valid until
// the next string is read. Invalid UTF-8, which encoding/json would
// silently replace, sends the record to the slow path.
func (s *scanner) string(i int) (int, string, bool) {
	start := i + 1
	ascii, escaped := true, false
	j := start
	for ; j < len(s.data); j++ {
		c := s.data[j]
		switch {
		case c == '"':
			raw := s.data[start:j]
			if !ascii && !utf8.Valid(raw) {
				return i, "", false
			}
			if !escaped {
				return j + 1, unsafe.String(unsafe.SliceData(raw), len(raw)), true
			}
			v, ok := s.unescape(raw)
			return j + 1, v, ok
		case c == '\\':
			escaped = true
			j++
			if j >= len(s.data) {
				return i, "", false
			}
			switch s.data[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(s.data)-j < 5 {
					return i, "", false
				}
				for _, h := range s.data[j+1 : j+5] {
					if !isHex(h) {
						return i, "", false
					}
				}
				j += 4
			default:
				return i, "", false
			}
		case c < 0x20:
			return i, "", false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return i, "", false
}

func isHex(c byte) bool { return isDigit(c) || c|0x20 >= 'a' && c|0x20 <= 'f' }

// unescape decodes a string's escapes (already checked for syntax) into
// the scratch buffer. Lone surrogates, which encoding/json replaces, send
// the record to the slow path.
func (s *scanner) unescape(raw []byte) (string, bool) {
	b := s.buf[:0]
	for k := 0; k < len(raw); k++ {
		c := raw[k]
		if c != '\\' {
			b = append(b, c)
			continue
		}
		k++
		switch raw[k] {
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r := hex4(raw[k+1 : k+5])
			k += 4
			if r >= 0xd800 && r < 0xdc00 {
				if len(raw)-k < 7 || raw[k+1] != '\\' || raw[k+2] != 'u' {
					return "", false
				}
				lo := hex4(raw[k+3 : k+7])
				if lo < 0xdc00 || lo >= 0xe000 {
					return "", false
				}
				r = 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00)
				k += 6
			} else if r >= 0xdc00 && r < 0xe000 {
				return "", false
			}
			b = utf8.AppendRune(b, r)
		default: // '"', '\\', '/'
			b = append(b, raw[k])
		}
	}
	s.buf = b
	return string(b), true
}

// hex4 decodes four hex digits.
func hex4(h []byte) rune {
	var r rune
	for _, c := range h {
		r <<= 4
		switch {
		case isDigit(c):
			r |= rune(c - '0')
		default:
			r |= rune(c|0x20-'a') + 10
		}
	}
	return r
}

// integer reads a JSON number that is a safe integer literal. Fractions,
// exponents and long numbers take the slow path (atdata accepts some,
// such as 1.0).
func (s *scanner) integer(i int) (int, int64, bool) {
	j := i
	if s.data[j] == '-' {
		j++
	}
	digits := j
	for j < len(s.data) && isDigit(s.data[j]) {
		j++
	}
	n := j - digits
	if n == 0 || n > maxSafeDigits || (n > 1 && s.data[digits] == '0') {
		return i, 0, false
	}
	if j < len(s.data) && (s.data[j] == '.' || s.data[j] == 'e' || s.data[j] == 'E') {
		return i, 0, false
	}
	v, err := strconv.ParseInt(unsafe.String(unsafe.SliceData(s.data[i:j]), j-i), 10, 64)
	return j, v, err == nil
}

// boolean reads true or false.
func (s *scanner) boolean(i int) (int, bool, bool) {
	rest := s.data[i:]
	switch {
	case len(rest) >= 4 && string(rest[:4]) == "true":
		return i + 4, true, true
	case len(rest) >= 5 && string(rest[:5]) == "false":
		return i + 5, false, true
	}
	return i, false, false
}

// peekType returns the string $type of the object at i without checking
// the object, or false when it has none.
func (s *scanner) peekType(i int) (string, bool) {
	i = s.ws(i + 1)
	for i < len(s.data) && s.data[i] == '"' {
		end, key, ok := s.string(i)
		if !ok {
			return "", false
		}
		isType := key == "$type"
		i = s.ws(end)
		if i >= len(s.data) || s.data[i] != ':' {
			return "", false
		}
		i = s.ws(i + 1)
		if isType {
			if i >= len(s.data) || s.data[i] != '"' {
				return "", false
			}
			_, v, ok := s.string(i)
			if !ok {
				return "", false
			}
			return v, true
		}
		if i, ok = s.skip(i); !ok {
			return "", false
		}
		i = s.ws(i)
		if i >= len(s.data) || s.data[i] != ',' {
			return "", false
		}
		i = s.ws(i + 1)
	}
	return "", false
}

// skip steps over the value at i without checking it (the real pass
// checks it later).
func (s *scanner) skip(i int) (int, bool) {
	depth := 0
	for i < len(s.data) {
		switch s.data[i] {
		case '"':
			end, _, ok := s.string(i)
			if !ok {
				return i, false
			}
			i = end
		case '{', '[':
			depth++
			i++
		case '}', ']':
			if depth--; depth < 0 {
				return i, false
			}
			i++
		default:
			if depth == 0 { // a scalar: up to the next delimiter
				for i < len(s.data) && !strings.ContainsRune(",}] \t\r\n", rune(s.data[i])) {
					i++
				}
				return i, true
			}
			i++
		}
		if depth == 0 {
			return i, true
		}
	}
	return i, false
}
