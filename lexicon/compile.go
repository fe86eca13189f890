package lexicon

import (
	"strings"

	indigolex "github.com/bluesky-social/indigo/atproto/lexicon"
	"github.com/bluesky-social/indigo/atproto/syntax"
)

// The fast validation path. indigo's validator first decodes a record into
// generic atproto data (encoding/json into maps, then a conversion pass)
// and then walks it, checking string formats with regular expressions and
// counting graphemes for every length-limited string. At ingestion rates
// that was a third of the service's CPU.
//
// Instead, each record lexicon is compiled once per snapshot into a tree of
// nodes, and a record's JSON is checked in a single pass over its bytes
// (scan.go), without decoding it. The fast path is conservative by design:
// it answers "valid" only when indigo's LenientMode validation would, and
// for anything it does not handle, or any record it would reject, it gives
// up and the record goes through indigo's validator, which then decides and
// words the error. Invalid records are rare, so that costs nothing in
// practice, and correctness rests on one property, fuzzed in the tests:
// fast acceptance implies indigo acceptance.

// nodeKind is the kind of schema a node checks.
type nodeKind uint8

const (
	// kindBail is a schema the fast path does not check (bytes, tokens,
	// records nested in data, unsupported shapes): data reaching it sends
	// the record to indigo's validator.
	kindBail nodeKind = iota
	kindBoolean
	kindInteger
	kindString
	kindCIDLink
	kindArray
	kindObject
	kindBlob
	kindUnion
	// kindUnknown is the `unknown` type, and references to lexicons the
	// instance does not hold: any object of valid atproto data.
	kindUnknown
)

// maxObjectProperties bounds the properties of a compiled object, so that
// the ones seen fit one bitmask.
const maxObjectProperties = 64

// node is one compiled schema definition.
type node struct {
	kind nodeKind

	boolean *indigolex.SchemaBoolean
	integer *indigolex.SchemaInteger
	str     *stringNode
	blob    *indigolex.SchemaBlob

	// array
	items              *node
	minItems, maxItems int // -1 when unbounded

	// object
	props    map[string]int // property name → index into propNodes
	propNode []*node
	nullable uint64 // bit i: property i may be null
	required uint64 // bit i: property i must be present

	// union: listed variants by their full reference; closed unions reject
	// anything else, open ones accept types the instance does not know.
	variants map[string]*node
	closed   bool
	known    map[string]bool // every def of the snapshot, as "nsid#name"
}

// stringNode is a string schema with its format check resolved.
type stringNode struct {
	schema *indigolex.SchemaString
	// fast is the hand-written format check, slow indigo's exact one;
	// both nil when the schema has no (known) format.
	fast func(string) bool
	slow func(string) error
}

// formats maps lexicon string formats to a fast check and indigo's exact one.
var formats = map[string]struct {
	fast func(string) bool
	slow func(string) error
}{
	"at-identifier": {func(s string) bool {
		if strings.HasPrefix(s, "did:") {
			return fastDID(s)
		}
		return fastHandle(s)
	}, func(s string) error { _, err := syntax.ParseAtIdentifier(s); return err }},
	"at-uri":     {fastATURI, func(s string) error { _, err := syntax.ParseATURI(s); return err }},
	"cid":        {fastCID, func(s string) error { _, err := syntax.ParseCID(s); return err }},
	"datetime":   {fastDatetime, func(s string) error { _, err := syntax.ParseDatetimeLenient(s); return err }},
	"did":        {fastDID, func(s string) error { _, err := syntax.ParseDID(s); return err }},
	"handle":     {fastHandle, func(s string) error { _, err := syntax.ParseHandle(s); return err }},
	"nsid":       {fastNSID, func(s string) error { _, err := syntax.ParseNSID(s); return err }},
	"uri":        {nil, func(s string) error { _, err := syntax.ParseURI(s); return err }},
	"language":   {fastLanguage, func(s string) error { _, err := syntax.ParseLanguage(s); return err }},
	"tid":        {fastTID, func(s string) error { _, err := syntax.ParseTID(s); return err }},
	"record-key": {fastRecordKey, func(s string) error { _, err := syntax.ParseRecordKey(s); return err }},
}

// compiler turns the catalog's definitions into nodes, sharing one node
// per reference so that recursive lexicons compile to cyclic graphs.
type compiler struct {
	cat   lenientCatalog
	refs  map[string]*node
	known map[string]bool
}

// fullRef qualifies a reference found in the document base.
func fullRef(base, ref string) string {
	if strings.HasPrefix(ref, "#") {
		return base + ref
	}
	return ref
}

// canonicalRef is the catalog key of a reference: "nsid#name", with
// "#main" made explicit.
func canonicalRef(ref string) string {
	if !strings.Contains(ref, "#") {
		return ref + "#main"
	}
	return ref
}

// record compiles the record lexicon of collection into its object node.
func (c *compiler) record(collection string) *node {
	s, err := c.cat.base.Resolve(collection)
	if err != nil {
		return &node{kind: kindBail}
	}
	rec, ok := s.Def.(indigolex.SchemaRecord)
	if !ok {
		return &node{kind: kindBail}
	}
	return c.object(&rec.Record, collection)
}

// ref compiles the definition a full reference points at.
func (c *compiler) ref(ref string) *node {
	key := canonicalRef(ref)
	if n, ok := c.refs[key]; ok {
		return n
	}
	n := &node{}
	c.refs[key] = n
	if !c.known[key] {
		n.kind = kindUnknown // the lenient catalog's answer
		return n
	}
	s, err := c.cat.base.Resolve(key)
	if err != nil {
		n.kind = kindBail
		return n
	}
	base, _, _ := strings.Cut(key, "#")
	*n = *c.def(s.Def, base)
	return n
}

// def compiles one definition found in the document base.
func (c *compiler) def(def any, base string) *node {
	switch v := def.(type) {
	case indigolex.SchemaBoolean:
		return &node{kind: kindBoolean, boolean: &v}
	case indigolex.SchemaInteger:
		return &node{kind: kindInteger, integer: &v}
	case indigolex.SchemaString:
		sn := &stringNode{schema: &v}
		if v.Format != nil {
			f, ok := formats[*v.Format]
			if !ok {
				return &node{kind: kindBail}
			}
			sn.fast, sn.slow = f.fast, f.slow
		}
		return &node{kind: kindString, str: sn}
	case indigolex.SchemaCIDLink:
		return &node{kind: kindCIDLink}
	case indigolex.SchemaArray:
		n := &node{kind: kindArray, items: c.def(v.Items.Inner, base), minItems: -1, maxItems: -1}
		if v.MinLength != nil {
			n.minItems = *v.MinLength
		}
		if v.MaxLength != nil {
			n.maxItems = *v.MaxLength
		}
		return n
	case indigolex.SchemaObject:
		return c.object(&v, base)
	case indigolex.SchemaBlob:
		return &node{kind: kindBlob, blob: &v}
	case indigolex.SchemaRef:
		return c.ref(fullRef(base, v.Ref))
	case indigolex.SchemaUnion:
		n := &node{kind: kindUnion, variants: make(map[string]*node, len(v.Refs)), known: c.known}
		n.closed = v.Closed != nil && *v.Closed
		for _, r := range v.Refs {
			full := fullRef(base, r)
			n.variants[full] = c.ref(full)
		}
		return n
	case indigolex.SchemaUnknown:
		return &node{kind: kindUnknown}
	default:
		return &node{kind: kindBail}
	}
}

// object compiles an object schema.
func (c *compiler) object(s *indigolex.SchemaObject, base string) *node {
	if len(s.Properties) > maxObjectProperties {
		return &node{kind: kindBail}
	}
	n := &node{kind: kindObject, props: make(map[string]int, len(s.Properties))}
	for name, def := range s.Properties {
		n.props[name] = len(n.propNode)
		n.propNode = append(n.propNode, c.def(def.Inner, base))
	}
	for _, name := range s.Required {
		if i, ok := n.props[name]; ok {
			n.required |= 1 << i
		} else {
			return &node{kind: kindBail}
		}
	}
	for _, name := range s.Nullable {
		if i, ok := n.props[name]; ok {
			n.nullable |= 1 << i
		}
	}
	return n
}
