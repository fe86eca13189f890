package storage

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// Link is one link found in a record: a target at a path (see LinkSource
// for the path notation).
type Link struct {
	Path   string
	Target string
}

// ExtractLinks returns the links of a record's JSON, in document order,
// each (path, target) pair once: every string value, at any depth and in
// arrays too, that is an AT URI (at://...), a DID (did:method:id) or an
// http(s) URI. A strongRef is found through its uri member
// ("subject.uri"). At most MaxLinksPerRecord links are returned; links
// beyond that, deeper than MaxLinkDepth, with a target longer than
// MaxLinkTargetLen or a path longer than MaxLinkPathLen are skipped and
// counted. Malformed JSON yields the links found before the fault.
//
// An object that repeats a member name is read as encoding/json and
// PostgreSQL's jsonb read it: the last member of that name wins, so a
// link under an earlier one is not a link of the record. Such a record
// (which DAG-CBOR cannot carry, so only a JSON write brings one) is
// decoded and scanned again, and its links come in member-name order.
func ExtractLinks(record []byte) (links []Link, skipped int) {
	x := linkScanner{data: record, keys: make([][]byte, 0, 16)}
	x.skipSpace()
	x.value(-1, 0)
	if x.repeated {
		var v any
		if json.Unmarshal(record, &v) == nil {
			if canonical, err := json.Marshal(v); err == nil {
				return ExtractLinks(canonical)
			}
		}
	}
	return x.links, x.skipped
}

// linkScanner walks a JSON document once, collecting links. It never
// allocates for values that are not links.
type linkScanner struct {
	data    []byte
	pos     int
	path    []byte // the current path; the value at pos is at path[:n]
	links   []Link
	seen    map[Link]bool
	skipped int
	failed  bool

	// keys holds the member names of the objects being read, outermost
	// first, to find a repeated name: slices of data, or of a copy when
	// the name has escapes.
	keys [][]byte
	// repeated is set (and the scan stopped) when an object repeats a
	// member name.
	repeated bool
}

// forgetKeys drops the member names of an object read to its end.
func (x *linkScanner) forgetKeys(keysAt int) { x.keys = x.keys[:keysAt] }

// smallObject is the member count up to which a repeated name is looked
// for by comparing with each earlier one; a larger object keeps a set.
const smallObject = 32

func (x *linkScanner) skipSpace() {
	for x.pos < len(x.data) {
		switch x.data[x.pos] {
		case ' ', '\t', '\n', '\r':
			x.pos++
		default:
			return
		}
	}
}

// value reads the value at pos, whose path is x.path[:n] (n < 0 at the
// root) and depth its nesting.
func (x *linkScanner) value(n int, depth int) {
	if x.failed || x.pos >= len(x.data) {
		x.failed = true
		return
	}
	switch c := x.data[x.pos]; {
	case c == '{':
		if depth >= MaxLinkDepth {
			x.skipSkipped()
			return
		}
		x.object(n, depth+1)
	case c == '[':
		if depth >= MaxLinkDepth {
			x.skipSkipped()
			return
		}
		x.array(n, depth+1)
	case c == '"':
		raw, ok := x.stringRaw()
		if !ok {
			return
		}
		if n >= 0 && linkPrefix(raw) {
			x.found(x.path[:n], raw)
		}
	default:
		x.literal()
	}
}

// skipSkipped skips a value nested too deep, counting the links it holds
// as skipped.
func (x *linkScanner) skipSkipped() {
	start := x.pos
	x.skip()
	inner := linkScanner{data: x.data[start:x.pos]}
	inner.countOnly()
	x.skipped += inner.skipped
}

// countOnly counts the link-like strings of a document as skipped.
func (x *linkScanner) countOnly() {
	for x.pos < len(x.data) {
		if x.data[x.pos] != '"' {
			x.pos++
			continue
		}
		raw, ok := x.stringRaw()
		if !ok {
			return
		}
		if linkPrefix(raw) {
			if t, ok := decodeString(raw); ok && isLink(t) {
				x.skipped++
			}
		}
	}
}

func (x *linkScanner) object(n int, depth int) {
	x.pos++ // {
	x.skipSpace()
	if x.pos < len(x.data) && x.data[x.pos] == '}' {
		x.pos++
		return
	}
	keysAt := len(x.keys)
	defer x.forgetKeys(keysAt)
	var names map[string]bool // the member names, once there are many
	for !x.failed {
		x.skipSpace()
		rawKey, ok := x.stringRaw()
		if !ok {
			x.failed = true
			return
		}
		x.path = x.path[:max(n, 0)]
		if n > 0 {
			x.path = append(x.path, '.')
		}
		key := rawKey
		if hasByte(rawKey, '\\') {
			decoded, ok := decodeString(rawKey)
			if !ok {
				x.failed = true
				return
			}
			key = []byte(decoded)
		}
		x.path = append(x.path, key...)
		child := len(x.path)
		if names == nil && len(x.keys)-keysAt >= smallObject {
			names = make(map[string]bool, 2*smallObject)
			for _, k := range x.keys[keysAt:] {
				names[string(k)] = true
			}
		}
		if names != nil {
			if names[string(key)] {
				x.repeated, x.failed = true, true
				return
			}
			names[string(key)] = true
		} else {
			for _, k := range x.keys[keysAt:] {
				if string(k) == string(key) {
					x.repeated, x.failed = true, true
					return
				}
			}
			x.keys = append(x.keys, key)
		}
		x.skipSpace()
		if x.pos >= len(x.data) || x.data[x.pos] != ':' {
			x.failed = true
			return
		}
		x.pos++
		x.skipSpace()
		x.value(child, depth)
		x.skipSpace()
		if x.pos >= len(x.data) {
			x.failed = true
			return
		}
		switch x.data[x.pos] {
		case ',':
			x.pos++
		case '}':
			x.pos++
			return
		default:
			x.failed = true
			return
		}
	}
}

func (x *linkScanner) array(n int, depth int) {
	x.pos++ // [
	x.skipSpace()
	if x.pos < len(x.data) && x.data[x.pos] == ']' {
		x.pos++
		return
	}
	for !x.failed {
		x.skipSpace()
		x.path = append(x.path[:max(n, 0)], '[')
		if x.pos < len(x.data) && x.data[x.pos] == '{' {
			x.path = x.typeOfObject(x.path)
		}
		x.path = append(x.path, ']')
		x.value(len(x.path), depth)
		x.skipSpace()
		if x.pos >= len(x.data) {
			x.failed = true
			return
		}
		switch x.data[x.pos] {
		case ',':
			x.pos++
		case ']':
			x.pos++
			return
		default:
			x.failed = true
			return
		}
	}
}

// typeOfObject appends to dst the $type member of the object at pos, when
// it is a string, without moving pos.
func (x *linkScanner) typeOfObject(dst []byte) []byte {
	peek := linkScanner{data: x.data, pos: x.pos + 1}
	for {
		peek.skipSpace()
		if peek.pos >= len(peek.data) || peek.data[peek.pos] != '"' {
			return dst
		}
		rawKey, ok := peek.stringRaw()
		if !ok {
			return dst
		}
		peek.skipSpace()
		if peek.pos >= len(peek.data) || peek.data[peek.pos] != ':' {
			return dst
		}
		peek.pos++
		peek.skipSpace()
		if string(rawKey) == "$type" && peek.pos < len(peek.data) && peek.data[peek.pos] == '"' {
			raw, ok := peek.stringRaw()
			if !ok {
				return dst
			}
			t, _ := decodeString(raw)
			return append(dst, t...)
		}
		peek.skip()
		peek.skipSpace()
		if peek.failed || peek.pos >= len(peek.data) || peek.data[peek.pos] != ',' {
			return dst
		}
		peek.pos++
	}
}

// skip moves past the value at pos.
func (x *linkScanner) skip() {
	if x.pos >= len(x.data) {
		x.failed = true
		return
	}
	switch x.data[x.pos] {
	case '"':
		x.stringRaw()
	case '{', '[':
		level := 0
		for x.pos < len(x.data) {
			switch x.data[x.pos] {
			case '"':
				if _, ok := x.stringRaw(); !ok {
					return
				}
				continue
			case '{', '[':
				level++
			case '}', ']':
				level--
				if level == 0 {
					x.pos++
					return
				}
			}
			x.pos++
		}
		x.failed = true
	default:
		x.literal()
	}
}

// literal moves past a number, true, false or null.
func (x *linkScanner) literal() {
	start := x.pos
	for x.pos < len(x.data) {
		switch x.data[x.pos] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			if x.pos == start {
				x.failed = true
			}
			return
		}
		x.pos++
	}
}

// stringRaw reads the string at pos and returns its body, still escaped.
func (x *linkScanner) stringRaw() ([]byte, bool) {
	if x.pos >= len(x.data) || x.data[x.pos] != '"' {
		x.failed = true
		return nil, false
	}
	start := x.pos + 1
	for i := start; i < len(x.data); i++ {
		switch x.data[i] {
		case '\\':
			i++
		case '"':
			x.pos = i + 1
			return x.data[start:i], true
		}
	}
	x.failed = true
	return nil, false
}

// decodeString unescapes a string body.
func decodeString(raw []byte) (string, bool) {
	if !hasByte(raw, '\\') {
		return string(raw), true
	}
	var s string
	if err := json.Unmarshal(append(append([]byte{'"'}, raw...), '"'), &s); err != nil {
		return "", false
	}
	return s, true
}

func hasByte(b []byte, c byte) bool {
	for _, x := range b {
		if x == c {
			return true
		}
	}
	return false
}

// linkPrefix is the cheap test a string body passes before it is decoded
// and checked: it starts like a link (escapes only delay the answer).
func linkPrefix(raw []byte) bool {
	if len(raw) < 6 {
		return false
	}
	switch raw[0] {
	case 'a', 'd', 'h', '\\':
		return true
	}
	return false
}

func (x *linkScanner) found(path, raw []byte) {
	target, ok := decodeString(raw)
	if !ok || !isLink(target) {
		return
	}
	if len(target) > MaxLinkTargetLen || len(path) > MaxLinkPathLen || len(x.links) >= MaxLinksPerRecord {
		x.skipped++
		return
	}
	l := Link{Path: string(path), Target: target}
	if x.seen == nil {
		x.seen = make(map[Link]bool, 4)
	}
	if x.seen[l] {
		return
	}
	x.seen[l] = true
	x.links = append(x.links, l)
}

// IsLinkTarget reports whether ExtractLinks indexes s when it finds it
// (within the bounds on depth, count and path): an AT URI, a DID or an
// http(s) URI no longer than MaxLinkTargetLen.
func IsLinkTarget(s string) bool { return len(s) <= MaxLinkTargetLen && isLink(s) }

// isLink reports whether s is an AT URI, a DID or an http(s) URI: the
// scheme, then at least an authority, and no whitespace or control
// characters, in valid UTF-8 (a record's JSON may hold other bytes in a
// string, which no database text column takes and no JSON decoder
// returns as they are).
func isLink(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	var rest string
	switch {
	case strings.HasPrefix(s, "at://"):
		rest = s[len("at://"):]
	case strings.HasPrefix(s, "https://"):
		rest = s[len("https://"):]
	case strings.HasPrefix(s, "http://"):
		rest = s[len("http://"):]
	case strings.HasPrefix(s, "did:"):
		return isDID(s)
	default:
		return false
	}
	if rest == "" || rest[0] == '/' {
		return false
	}
	for i := 0; i < len(rest); i++ {
		if c := rest[i]; c <= ' ' || c == 0x7f {
			return false
		}
	}
	return true
}

// isDID checks the DID syntax: "did:", a lowercase method, ":", and an
// identifier of [A-Za-z0-9._:%-] not ending in ":".
func isDID(s string) bool {
	rest := s[len("did:"):]
	i := 0
	for i < len(rest) && rest[i] >= 'a' && rest[i] <= 'z' {
		i++
	}
	if i == 0 || i >= len(rest) || rest[i] != ':' {
		return false
	}
	id := rest[i+1:]
	if id == "" || id[len(id)-1] == ':' {
		return false
	}
	for j := 0; j < len(id); j++ {
		c := id[j]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == ':' || c == '%' || c == '-') {
			return false
		}
	}
	return true
}
