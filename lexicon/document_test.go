package lexicon

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	cases := []struct {
		name, doc string
		kind      Kind
		errHas    string
	}{
		{"record", `{"lexicon":1,"id":"app.test.post","defs":{"main":{"type":"record","key":"tid","record":{"type":"object","properties":{"text":{"type":"string","maxLength":300}}}}}}`, KindRecord, ""},
		{"query", `{"lexicon":1,"id":"app.test.getPosts","defs":{"main":{"type":"query","parameters":{"type":"params","properties":{"limit":{"type":"integer","minimum":1}}},"output":{"encoding":"application/json"}}}}`, KindQuery, ""},
		{"procedure", `{"lexicon":1,"id":"app.test.createPost","defs":{"main":{"type":"procedure","input":{"encoding":"application/json"}}}}`, KindProcedure, ""},
		{"subscription is other", `{"lexicon":1,"id":"app.test.sub","defs":{"main":{"type":"subscription","message":{"schema":{"type":"union","refs":[]}}}}}`, KindOther, ""},
		{"defs only is other", `{"lexicon":1,"id":"app.test.defs","defs":{"thing":{"type":"string"}}}`, KindOther, ""},
		{"malformed", `{"lexicon":1,"id":`, "", "malformed lexicon JSON"},
		{"not an object", `[1,2]`, "", "malformed lexicon JSON"},
		{"trailing data", `{"lexicon":1,"id":"app.test.x","defs":{}} {}`, "", "trailing data"},
		{"missing id", `{"lexicon":1,"defs":{}}`, "", "lexicon id is required"},
		{"empty id", `{"lexicon":1,"id":"","defs":{}}`, "", "lexicon id is required"},
		{"version 2", `{"lexicon":2,"id":"app.test.x","defs":{}}`, "", "lexicon must be 1"},
		{"version string", `{"lexicon":"1","id":"app.test.x","defs":{}}`, "", "lexicon must be 1"},
		{"version missing", `{"id":"app.test.x","defs":{}}`, "", "lexicon must be 1"},
		{"bad nsid", `{"lexicon":1,"id":"not an nsid","defs":{}}`, "", "invalid NSID"},
		{"two segments", `{"lexicon":1,"id":"app.test","defs":{}}`, "", "invalid NSID"},
		{"bad def type", `{"lexicon":1,"id":"app.test.x","defs":{"main":{"type":"wibble"}}}`, "", "invalid lexicon schema"},
		{"record not main", `{"lexicon":1,"id":"app.test.x","defs":{"other":{"type":"record","key":"tid","record":{"type":"object","properties":{}}}}}`, "", "invalid lexicon schema"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc, err := Parse([]byte(c.doc))
			if c.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), c.errHas) || !IsParseError(err) {
					t.Fatalf("err = %v, want a ParseError containing %q", err, c.errHas)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if doc.Kind != c.kind {
				t.Fatalf("kind = %s, want %s", doc.Kind, c.kind)
			}
		})
	}
}

func TestParseRefusesHugeDocuments(t *testing.T) {
	doc := `{"lexicon":1,"id":"app.test.x","description":"` + strings.Repeat("a", MaxDocumentSize) + `","defs":{}}`
	if _, err := Parse([]byte(doc)); err == nil || !IsParseError(err) {
		t.Fatalf("oversized document accepted: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"lexicon":1,"id":"app.test.post","defs":{"main":{"type":"record","key":"tid","record":{"type":"object","properties":{}}}}}`))
	f.Add([]byte(`{"lexicon":1,"id":"app.test.q","defs":{"main":{"type":"query"}}}`))
	f.Add([]byte(`{"lexicon":1,"id":"a.b.c","defs":{"main":{"type":"procedure","input":{"encoding":"*/*"}}}}`))
	f.Add([]byte(`{"lexicon":1}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		doc, err := Parse(raw)
		if err != nil {
			if !IsParseError(err) {
				t.Fatalf("error is not a ParseError: %v", err)
			}
			return
		}
		switch doc.Kind {
		case KindRecord, KindQuery, KindProcedure, KindOther:
		default:
			t.Fatalf("unknown kind %q", doc.Kind)
		}
		if doc.ID.String() == "" {
			t.Fatal("accepted a document without an id")
		}
	})
}

// A deeply nested document is refused at once, before the schema checks
// whose cost grows with the square of the depth (issue 12, finding 11).
func TestParseRefusesDeepNesting(t *testing.T) {
	deep := func(n int) []byte {
		inner := strings.Repeat(`{"type":"array","items":`, n) + `{"type":"string"}` + strings.Repeat(`}`, n)
		return []byte(`{"lexicon":1,"id":"app.test.deep","defs":{"main":{"type":"record","key":"tid","record":{"type":"object","properties":{"x":` + inner + `}}}}}`)
	}
	if _, err := Parse(deep(3000)); err == nil || !IsParseError(err) || !strings.Contains(err.Error(), "nests deeper than 64 levels") {
		t.Fatalf("3,000 levels: %v", err)
	}
	if _, err := Parse(deep(10)); err != nil {
		t.Fatalf("10 levels: %v", err)
	}
	// Brackets inside strings do not count.
	if d := jsonDepth([]byte(`{"a":"[[[[{{{{\"]]]"}`)); d != 1 {
		t.Fatalf("depth with brackets in a string: %d", d)
	}
}
