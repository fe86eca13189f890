package lexicon

import (
	"slices"
	"strings"
	"unicode/utf8"

	indigolex "github.com/bluesky-social/indigo/atproto/lexicon"
	"github.com/ipfs/go-cid"
	"github.com/rivo/uniseg"
)

// Limits of the atproto data model as indigo's atdata package enforces
// them, and a nesting bound of our own (deeper records take the slow path).
const (
	maxJSONRecord  = 2 << 20
	maxDataString  = 1 << 20
	maxObjectKey   = 8192
	maxContainer   = 128 * 1024
	maxFastDepth   = 64
	maxSafeDigits  = 15 // integers up to 15 digits convert exactly through float64
	blobFieldCount = 4
)

// scanner checks one record's JSON against compiled nodes. Every method
// returns the position after the value it read and false as soon as the
// fast path cannot vouch for the record.
type scanner struct {
	data  []byte
	depth int
	buf   []byte // unescaped string scratch
}

// fastValid reports whether the record JSON raw is certainly valid against
// the compiled record node of collection.
func fastValid(rec *node, collection string, raw []byte) bool {
	if rec.kind != kindObject || len(raw) > maxJSONRecord {
		return false
	}
	s := scanner{data: raw}
	i := s.ws(0)
	if i >= len(raw) || raw[i] != '{' {
		return false
	}
	i, info, ok := s.object(rec, i, collection)
	if !ok || info.special() {
		return false
	}
	return s.ws(i) == len(raw)
}

// ws skips JSON whitespace.
func (s *scanner) ws(i int) int {
	for i < len(s.data) {
		switch s.data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// objectInfo is what an object's keys say about how atproto data reads it.
type objectInfo struct {
	fields int
	// Keys present.
	link, bytes, mimeType, cid bool
	// What their values were, where it matters.
	typeNotString, typeEmpty, typeBlob bool
	linkValid                          bool   // $link is a string that parses as a defined CID
	refLink                            bool   // ref is a valid {"$link": ...} object
	mime                               string // mimeType, when a string
	mimeString, sizeInt                bool
	sizeValue                          int64
}

// special reports whether atdata would read the object as something other
// than a plain map (a link, bytes or a blob), or reject it for its $type.
// Duplicate keys collapse in atdata, so any hint of these shapes counts.
func (o *objectInfo) special() bool {
	return o.link || o.bytes || (o.mimeType && o.cid) || o.typeNotString || o.typeEmpty || o.typeBlob
}

// isLink reports whether the object is exactly a valid link.
func (o *objectInfo) isLink() bool { return o.link && o.fields == 1 && o.linkValid }

// isBlob reports whether the object is exactly a valid blob: its four
// keys, and each of the right type.
func (o *objectInfo) isBlob() bool {
	return o.typeBlob && o.fields == blobFieldCount && o.refLink && o.mimeString && o.sizeInt &&
		!o.link && !o.bytes && !o.cid
}

// value checks the value at i (not whitespace) against n; a nil n is
// generic atproto data.
func (s *scanner) value(n *node, i int) (int, bool) {
	if i >= len(s.data) {
		return i, false
	}
	kind := kindUnknown
	if n != nil {
		kind = n.kind
	}
	c := s.data[i]
	switch {
	case c == '{':
		return s.objectValue(n, kind, i)
	case c == '[':
		if n != nil && kind != kindArray {
			return i, false
		}
		var items *node
		if n != nil {
			items = n.items
		}
		end, count, ok := s.array(items, i)
		if !ok || (n != nil && ((n.minItems >= 0 && count < n.minItems) || (n.maxItems >= 0 && count > n.maxItems))) {
			return i, false
		}
		return end, true
	case c == '"':
		end, v, ok := s.string(i)
		if !ok || len(v) > maxDataString {
			return i, false
		}
		if n == nil {
			return end, true
		}
		return end, kind == kindString && n.str.check(v)
	case c == '-' || isDigit(c):
		end, v, ok := s.integer(i)
		if !ok {
			return i, false
		}
		if n == nil {
			return end, true
		}
		return end, kind == kindInteger && checkInteger(n, v)
	case c == 't' || c == 'f':
		end, v, ok := s.boolean(i)
		if !ok {
			return i, false
		}
		if n == nil {
			return end, true
		}
		b := n.boolean
		return end, kind == kindBoolean && (b.Const == nil || *b.Const == v)
	case c == 'n':
		// null only passes where no schema applies; nullable properties
		// are handled by the object.
		return i + 4, n == nil && s.isNull(i)
	}
	return i, false
}

// objectValue checks an object against a node of the given kind.
func (s *scanner) objectValue(n *node, kind nodeKind, i int) (int, bool) {
	switch kind {
	case kindObject:
		end, info, ok := s.object(n, i, "")
		return end, ok && !info.special()
	case kindUnknown:
		end, info, ok := s.object(nil, i, "")
		if !ok {
			return i, false
		}
		if n == nil { // generic data: special shapes must themselves be valid
			return end, !info.special() || info.isLink() || info.isBlob()
		}
		return end, !info.special() // `unknown` data must stay a map
	case kindUnion:
		t, ok := s.peekType(i)
		if !ok {
			return i, false
		}
		variant, listed := n.variants[t]
		switch {
		case listed && variant.kind == kindObject:
			end, info, ok := s.object(variant, i, t)
			return end, ok && !info.special()
		case listed && variant.kind != kindUnknown, !listed && (n.closed || n.known[canonicalRef(t)]):
			return i, false // unusual variant, closed-union miss, or a type held here: slow path
		default: // not held here: any map
			end, info, ok := s.object(nil, i, t)
			return end, ok && !info.special()
		}
	case kindBlob:
		end, info, ok := s.object(nil, i, "")
		return end, ok && info.isBlob() && checkBlob(n.blob, &info)
	case kindCIDLink:
		end, info, ok := s.object(nil, i, "")
		return end, ok && info.isLink()
	}
	return i, false
}

// checkBlob applies a blob schema (legacy blobs take the slow path).
func checkBlob(s *indigolex.SchemaBlob, o *objectInfo) bool {
	if s.MaxSize != nil && int(o.sizeValue) > *s.MaxSize {
		return false
	}
	if len(s.Accept) == 0 {
		return true
	}
	for _, pattern := range s.Accept {
		if acceptableMIME(pattern, o.mime) {
			return true
		}
	}
	return false
}

// acceptableMIME matches a blob's MIME type against an accept pattern
// ("image/png", "image/*", "*/*"), as indigo does.
func acceptableMIME(pattern, v string) bool {
	switch {
	case v == "" || pattern == "":
		return false
	case pattern == "*/*":
		return true
	case strings.HasSuffix(pattern, "*"):
		return strings.HasPrefix(v, pattern[:len(pattern)-1])
	}
	return pattern == v
}

// validLink reports whether v parses as a defined CID, as atdata requires
// of a $link.
func validLink(v string) bool {
	c, err := cid.Parse(v)
	return err == nil && c.Defined()
}

// object reads the object at i. With a node it checks the node's
// properties; keys the node does not name, and every key without a node,
// are checked as generic data. When wantType is set, a $type key must
// carry it (a record's collection, a union's chosen variant).
func (s *scanner) object(n *node, i int, wantType string) (int, objectInfo, bool) {
	var info objectInfo
	s.depth++
	defer func() { s.depth-- }()
	if s.depth > maxFastDepth {
		return i, info, false
	}
	var seen uint64
	i = s.ws(i + 1)
	if i < len(s.data) && s.data[i] == '}' {
		return i + 1, info, n == nil || n.required == 0
	}
	for {
		if i >= len(s.data) || s.data[i] != '"' {
			return i, info, false
		}
		end, key, ok := s.string(i)
		if !ok || len(key) > maxObjectKey {
			return i, info, false
		}
		i = s.ws(end)
		if i >= len(s.data) || s.data[i] != ':' {
			return i, info, false
		}
		i = s.ws(i + 1)
		if i >= len(s.data) {
			return i, info, false
		}
		if info.fields++; info.fields > maxContainer {
			return i, info, false
		}
		var prop *node
		if n != nil {
			if p, ok := n.props[key]; ok {
				seen |= 1 << p
				prop = n.propNode[p]
				if n.nullable&(1<<p) != 0 && s.isNull(i) {
					prop = nil
				}
			}
		}
		// Keys atdata gives meaning to are noted whatever the schema says
		// of them. Without a schema their values are read as generic data.
		if prop == nil {
			if i, ok = s.specialKey(&info, key, i, wantType); !ok {
				return i, info, false
			}
		} else {
			// Only the keys that decide special() matter next to a schema
			// (its check covers the value); $type's value too.
			switch key {
			case "$type":
				if _, ok = s.specialKey(&info, key, i, wantType); !ok {
					return i, info, false
				}
			case "$link":
				info.link = true
			case "$bytes":
				info.bytes = true
			case "mimeType":
				info.mimeType = true
			case "cid":
				info.cid = true
			}
			if i, ok = s.value(prop, i); !ok {
				return i, info, false
			}
		}
		i = s.ws(i)
		if i >= len(s.data) {
			return i, info, false
		}
		switch s.data[i] {
		case ',':
			i = s.ws(i + 1)
		case '}':
			if n != nil && seen&n.required != n.required {
				return i, info, false
			}
			return i + 1, info, true
		default:
			return i, info, false
		}
	}
}

// specialKey reads the generic value of key at i, noting in info what
// atdata makes of the keys it gives meaning to.
func (s *scanner) specialKey(info *objectInfo, key string, i int, wantType string) (int, bool) {
	switch key {
	case "$type":
		if s.data[i] != '"' {
			info.typeNotString = true
			break
		}
		end, v, ok := s.string(i)
		if !ok || (wantType != "" && v != wantType) {
			return i, false
		}
		info.typeEmpty, info.typeBlob = v == "", v == "blob"
		return end, true
	case "$link":
		info.link = true
		if s.data[i] == '"' {
			end, v, ok := s.string(i)
			info.linkValid = ok && validLink(v)
			return end, ok
		}
	case "$bytes":
		info.bytes = true
	case "cid":
		info.cid = true
	case "mimeType":
		info.mimeType = true
		if s.data[i] == '"' {
			end, v, ok := s.string(i)
			info.mime, info.mimeString = v, ok
			return end, ok
		}
	case "size":
		if s.data[i] == '-' || isDigit(s.data[i]) {
			end, v, ok := s.integer(i)
			info.sizeValue, info.sizeInt = v, ok
			return end, ok
		}
	case "ref":
		if s.data[i] == '{' {
			end, sub, ok := s.object(nil, i, "")
			if !ok || (sub.special() && !sub.isLink() && !sub.isBlob()) {
				return i, false
			}
			info.refLink = sub.isLink()
			return end, true
		}
	}
	return s.value(nil, i)
}

// isNull reports whether a JSON null starts at i.
func (s *scanner) isNull(i int) bool {
	return len(s.data)-i >= 4 && string(s.data[i:i+4]) == "null"
}

// array reads the array at i, checking each element against items (nil:
// generic data), and returns its length.
func (s *scanner) array(items *node, i int) (int, int, bool) {
	s.depth++
	defer func() { s.depth-- }()
	if s.depth > maxFastDepth {
		return i, 0, false
	}
	i = s.ws(i + 1)
	if i < len(s.data) && s.data[i] == ']' {
		return i + 1, 0, true
	}
	count := 0
	for {
		var ok bool
		if i, ok = s.value(items, i); !ok {
			return i, count, false
		}
		count++
		if count > maxContainer {
			return i, count, false
		}
		i = s.ws(i)
		if i >= len(s.data) {
			return i, count, false
		}
		switch s.data[i] {
		case ',':
			i = s.ws(i + 1)
		case ']':
			return i + 1, count, true
		default:
			return i, count, false
		}
	}
}

// checkInteger applies an integer schema.
func checkInteger(n *node, v64 int64) bool {
	s := n.integer
	v := int(v64)
	return (s.Const == nil || v == *s.Const) &&
		(s.Minimum == nil || v >= *s.Minimum) && (s.Maximum == nil || v <= *s.Maximum) &&
		(len(s.Enum) == 0 || slices.Contains(s.Enum, v))
}

// check applies a string schema, counting graphemes only when the byte
// length does not settle the bounds.
func (sn *stringNode) check(v string) bool {
	s := sn.schema
	if (s.Const != nil && v != *s.Const) ||
		(s.MinLength != nil && len(v) < *s.MinLength) || (s.MaxLength != nil && len(v) > *s.MaxLength) ||
		(len(s.Enum) != 0 && !slices.Contains(s.Enum, v)) {
		return false
	}
	// A grapheme is at least one byte, so a string no longer in bytes than
	// the maximum is within it; only the minimum always needs a count.
	if s.MinGraphemes != nil || (s.MaxGraphemes != nil && len(v) > *s.MaxGraphemes) {
		g := graphemes(v)
		if (s.MinGraphemes != nil && g < *s.MinGraphemes) || (s.MaxGraphemes != nil && g > *s.MaxGraphemes) {
			return false
		}
	}
	if sn.slow == nil {
		return true
	}
	if sn.fast != nil && sn.fast(v) {
		return true
	}
	return sn.slow(v) == nil
}

// graphemes counts grapheme clusters; printable ASCII is one per byte.
func graphemes(v string) int {
	for k := 0; k < len(v); k++ {
		if c := v[k]; c >= utf8.RuneSelf || c < 0x20 || c == 0x7f {
			return uniseg.GraphemeClusterCount(v)
		}
	}
	return len(v)
}
