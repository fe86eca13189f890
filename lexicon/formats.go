package lexicon

import (
	"strings"
	"time"
)

// Hand-written versions of the string-format checks of indigo's syntax
// package, for the fast validation path. indigo matches most formats with
// regular expressions, which dominated ingestion's CPU profile. Each
// function here accepts a subset of what its indigo counterpart accepts
// (fuzzed in formats_test.go); a false answer only sends the value to
// indigo's own check.

func isAlpha(c byte) bool    { return c|0x20 >= 'a' && c|0x20 <= 'z' }
func isDigit(c byte) bool    { return c >= '0' && c <= '9' }
func isAlphaNum(c byte) bool { return isAlpha(c) || isDigit(c) }

// fastDID mirrors syntax.ParseDID: `^did:[a-z]+:[a-zA-Z0-9._:%-]*[a-zA-Z0-9._-]$`.
func fastDID(s string) bool {
	if len(s) > 2048 || !strings.HasPrefix(s, "did:") {
		return false
	}
	i := 4
	for i < len(s) && s[i] >= 'a' && s[i] <= 'z' {
		i++
	}
	if i == 4 || i >= len(s)-1 || s[i] != ':' {
		return false
	}
	for _, c := range []byte(s[i+1:]) {
		if !isAlphaNum(c) && c != '.' && c != '_' && c != ':' && c != '%' && c != '-' {
			return false
		}
	}
	last := s[len(s)-1]
	return last != ':' && last != '%'
}

// hostLabel reports whether label is 1-63 letters, digits and hyphens
// that neither starts nor ends with a hyphen.
func hostLabel(label string) bool {
	if len(label) == 0 || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
		return false
	}
	for _, c := range []byte(label) {
		if !isAlphaNum(c) && c != '-' {
			return false
		}
	}
	return true
}

// fastHandle mirrors syntax.ParseHandle: at least two labels, the last
// starting with a letter.
func fastHandle(s string) bool {
	if len(s) == 0 || len(s) > 253 {
		return false
	}
	dot := strings.LastIndexByte(s, '.')
	if dot < 0 || dot == len(s)-1 || !isAlpha(s[dot+1]) {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if !hostLabel(label) {
			return false
		}
	}
	return true
}

// fastNSID mirrors syntax.ParseNSID: at least three segments, the first
// starting with a letter, the last a letter followed by letters and digits.
func fastNSID(s string) bool {
	if len(s) == 0 || len(s) > 317 {
		return false
	}
	n := 0
	rest := s
	for {
		seg, tail, more := strings.Cut(rest, ".")
		n++
		if !more {
			if n < 3 || len(seg) == 0 || len(seg) > 63 || !isAlpha(seg[0]) {
				return false
			}
			for _, c := range []byte(seg) {
				if !isAlphaNum(c) {
					return false
				}
			}
			return true
		}
		if !hostLabel(seg) || (n == 1 && !isAlpha(seg[0])) {
			return false
		}
		rest = tail
	}
}

// fastRecordKey mirrors syntax.ParseRecordKey.
func fastRecordKey(s string) bool {
	if len(s) == 0 || len(s) > 512 || s == "." || s == ".." {
		return false
	}
	for _, c := range []byte(s) {
		if !isAlphaNum(c) && c != '_' && c != '~' && c != '.' && c != ':' && c != '-' {
			return false
		}
	}
	return true
}

// fastCID mirrors syntax.ParseCID: 8-256 of [a-zA-Z0-9+=], not CIDv0.
func fastCID(s string) bool {
	if len(s) < 8 || len(s) > 256 || strings.HasPrefix(s, "Qmb") {
		return false
	}
	for _, c := range []byte(s) {
		if !isAlphaNum(c) && c != '+' && c != '=' {
			return false
		}
	}
	return true
}

// fastTID mirrors syntax.ParseTID.
func fastTID(s string) bool {
	if len(s) != 13 || !(s[0] >= '2' && s[0] <= '7' || s[0] >= 'a' && s[0] <= 'j') {
		return false
	}
	for _, c := range []byte(s[1:]) {
		if !(c >= '2' && c <= '7' || c >= 'a' && c <= 'z') {
			return false
		}
	}
	return true
}

// fastATURI mirrors syntax.ParseATURI: at://authority[/collection[/rkey]].
func fastATURI(s string) bool {
	rest, ok := strings.CutPrefix(s, "at://")
	if !ok || len(s) > 8192 {
		return false
	}
	authority, path, hasPath := strings.Cut(rest, "/")
	if strings.HasPrefix(authority, "did:") {
		if !fastDID(authority) {
			return false
		}
	} else if !fastHandle(authority) {
		return false
	}
	if !hasPath {
		return true
	}
	collection, rkey, hasRKey := strings.Cut(path, "/")
	if !fastNSID(collection) {
		return false
	}
	return !hasRKey || fastRecordKey(rkey)
}

// fastLanguage mirrors syntax.ParseLanguage: `^(i|[a-z]{2,3})(-[a-zA-Z0-9]+)*$`.
func fastLanguage(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	primary, rest, _ := strings.Cut(s, "-")
	if primary != "i" && (len(primary) < 2 || len(primary) > 3) {
		return false
	}
	for _, c := range []byte(primary) {
		if c < 'a' || c > 'z' {
			return false
		}
	}
	if len(primary) == len(s) {
		return true
	}
	for sub := range strings.SplitSeq(rest, "-") {
		if len(sub) == 0 {
			return false
		}
		for _, c := range []byte(sub) {
			if !isAlphaNum(c) {
				return false
			}
		}
	}
	return true
}

// yearZero is the earliest instant syntax.ParseDatetime accepts.
var yearZero = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)

// fastDatetime mirrors syntax.ParseDatetime for its usual shape
// YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM), which also passes the lenient
// check.
func fastDatetime(s string) bool {
	if len(s) < 20 || len(s) > 64 {
		return false
	}
	const shape = "dddd-dd-ddTdd:dd:dd"
	for i := range len(shape) {
		if shape[i] == 'd' {
			if !isDigit(s[i]) {
				return false
			}
		} else if s[i] != shape[i] {
			return false
		}
	}
	if s[5] > '1' || s[8] > '3' || s[11] > '2' || s[14] > '6' || s[17] > '6' {
		return false
	}
	i := len(shape)
	if s[i] == '.' {
		j := i + 1
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		if j == i+1 || j-i-1 > 20 {
			return false
		}
		i = j
	}
	switch zone := s[i:]; {
	case zone == "Z":
	case len(zone) == 6 && (zone[0] == '+' || zone[0] == '-') && isDigit(zone[1]) && zone[1] <= '2' &&
		isDigit(zone[2]) && zone[3] == ':' && isDigit(zone[4]) && zone[4] <= '5' && isDigit(zone[5]):
		if zone == "-00:00" {
			return false
		}
	default:
		return false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return err == nil && !t.Before(yearZero)
}
