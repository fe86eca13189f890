package lexicon

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestSchemaErrorPath: a Lexicon language error names the deepest
// schema that fails on its own, in the message and in ParseError.Path;
// with two errors, the path is the one the message reports.
func TestSchemaErrorPath(t *testing.T) {
	record := func(props string) string {
		return `{"lexicon":1,"id":"app.test.post","defs":{"main":{"type":"record","key":"tid","record":{"type":"object","properties":` + props + `}}}}`
	}
	for _, c := range []struct{ name, doc, path, msg string }{
		{"unknown type of a property", record(`{"text":{"type":"strin"}}`), "defs.main.record.properties.text",
			"invalid lexicon schema at defs.main.record.properties.text: unexpected schema type: strin"},
		{"required not in properties", `{"lexicon":1,"id":"app.test.post","defs":{"main":{"type":"record","key":"tid","record":{"type":"object","required":["nope"],"properties":{}}}}}`,
			"defs.main.record", "invalid lexicon schema at defs.main.record: object 'required' field not in properties: nope"},
		{"record without key, a property also bad", `{"lexicon":1,"id":"app.test.post","defs":{"main":{"type":"record","record":{"type":"object","properties":{"text":{"type":"string","maxLength":-1}}}}}}`,
			"defs.main", "invalid lexicon schema at defs.main: record key specifier is required"},
		{"params of an object", `{"lexicon":1,"id":"app.test.q","defs":{"main":{"type":"query","parameters":{"type":"params","properties":{"limit":{"type":"object"}}}}}}`,
			"defs.main.parameters", ""},
		{"empty ref in an output", `{"lexicon":1,"id":"app.test.q","defs":{"main":{"type":"query","output":{"encoding":"application/json","schema":{"type":"ref","ref":""}}}}}`,
			"defs.main.output.schema", "invalid lexicon schema at defs.main.output.schema: empty schema ref"},
		{"input property", `{"lexicon":1,"id":"app.test.p","defs":{"main":{"type":"procedure","input":{"encoding":"application/json","schema":{"type":"object","properties":{"x":{"type":"array"}}}}}}}`,
			"defs.main.input.schema.properties.x", ""},
		{"array items", `{"lexicon":1,"id":"app.test.o","defs":{"main":{"type":"object","properties":{"a":{"type":"array","items":{"type":"wat"}}}}}}`,
			"defs.main.properties.a.items", ""},
		{"record not main", `{"lexicon":1,"id":"app.test.x","defs":{"other":{"type":"record","key":"tid","record":{"type":"object","properties":{}}}}}`,
			"defs.other", ""},
		{"wrong JSON type", `{"lexicon":1,"id":"app.test.o","defs":{"main":{"type":"object","properties":{"a":{"type":"integer","minimum":"x"}}}}}`,
			"defs.main.properties.a", ""},
		{"second definition", `{"lexicon":1,"id":"app.test.o","defs":{"a":{"type":"string"},"b":{"type":"object","properties":{"x":{"type":"wat"}}}}}`,
			"defs.b.properties.x", "invalid lexicon schema at defs.b.properties.x: unexpected schema type: wat"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.doc))
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Path == "" {
				t.Fatalf("err = %v, want a ParseError", err)
			}
			if pe.Path != c.path {
				t.Errorf("path %q, want %q (%v)", pe.Path, c.path, err)
			}
			if c.msg != "" && err.Error() != c.msg {
				t.Errorf("message %q, want %q", err.Error(), c.msg)
			}
		})
	}
	// Errors outside the definitions name no path.
	for _, doc := range []string{`{"lexicon":2,"id":"app.test.x","defs":{}}`, `{"lexicon":1,"id":"x","defs":{}}`} {
		var pe *ParseError
		if _, err := Parse([]byte(doc)); !errors.As(err, &pe) || pe.Path != "" {
			t.Errorf("%s: %v (path %q)", doc, err, pe.Path)
		}
	}
}

// nestedInvalid is a record lexicon whose objects nest depth levels, each
// with width sibling properties, the innermost holding an unknown type.
func nestedInvalid(depth, width int) []byte {
	var b strings.Builder
	b.WriteString(`{"lexicon":1,"id":"app.test.deep","defs":{"main":{"type":"record","key":"tid","record":`)
	for range depth {
		b.WriteString(`{"type":"object","properties":{`)
		for i := range width {
			fmt.Fprintf(&b, `"s%d":{"type":"string","maxLength":10},`, i)
		}
		b.WriteString(`"next":`)
	}
	b.WriteString(`{"type":"wat"}`)
	for range depth {
		b.WriteString(`}}`)
	}
	b.WriteString(`}}}`)
	return []byte(b.String())
}

// BenchmarkParseInvalid measures refusing a deeply nested invalid
// document, the locating of its error included (locate re-checks each
// level's subtree, so its cost grows with depth times size).
func BenchmarkParseInvalid(b *testing.B) {
	for _, c := range []struct{ depth, width int }{{5, 10}, {29, 10}, {29, 300}} {
		doc := nestedInvalid(c.depth, c.width)
		b.Run(fmt.Sprintf("depth=%d/width=%d/bytes=%d", c.depth, c.width, len(doc)), func(b *testing.B) {
			for b.Loop() {
				var pe *ParseError
				if _, err := Parse(doc); !errors.As(err, &pe) || pe.Path == "" {
					b.Fatalf("%v", err)
				}
			}
		})
	}
}
