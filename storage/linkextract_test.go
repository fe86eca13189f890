package storage

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestExtractLinks(t *testing.T) {
	cases := []struct {
		name   string
		record string
		want   []Link
	}{
		{"strongRef", `{"$type":"app.bsky.feed.like","subject":{"cid":"bafy","uri":"at://did:plc:a/app.bsky.feed.post/1"},"createdAt":"2026-01-01T00:00:00Z"}`,
			[]Link{{"subject.uri", "at://did:plc:a/app.bsky.feed.post/1"}}},
		{"did", `{"subject":"did:plc:abc"}`, []Link{{"subject", "did:plc:abc"}}},
		{"reply", `{"reply":{"parent":{"uri":"at://did:plc:a/p/1"},"root":{"uri":"at://did:plc:a/p/0"}},"text":"at home"}`,
			[]Link{{"reply.parent.uri", "at://did:plc:a/p/1"}, {"reply.root.uri", "at://did:plc:a/p/0"}}},
		{"typed array elements", `{"facets":[{"$type":"app.bsky.richtext.facet","features":[{"did":"did:plc:m","$type":"app.bsky.richtext.facet#mention"},{"uri":"https://example.com/x","$type":"app.bsky.richtext.facet#link"}]},{"features":[{"did":"did:web:example.com"}]}]}`,
			[]Link{
				{"facets[app.bsky.richtext.facet].features[app.bsky.richtext.facet#mention].did", "did:plc:m"},
				{"facets[app.bsky.richtext.facet].features[app.bsky.richtext.facet#link].uri", "https://example.com/x"},
				{"facets[].features[].did", "did:web:example.com"},
			}},
		{"arrays of strings", `{"tags":["did:plc:x",  "nope", "at://did:plc:y"]}`, []Link{{"tags[]", "did:plc:x"}, {"tags[]", "at://did:plc:y"}}},
		{"duplicates once", `{"a":["did:plc:x","did:plc:x"]}`, []Link{{"a[]", "did:plc:x"}}},
		{"escaped", `{"a":"at:\/\/did:plc:x\/c\/r","b":"\u0064id:plc:y"}`, []Link{{"a", "at://did:plc:x/c/r"}, {"b", "did:plc:y"}}},
		{"non-links", `{"a":"did:","b":"did:PLC:x","c":"did:plc:","d":"at://","e":"https://","f":"at:// x","g":"hello","h":12,"i":true,"j":null,"k":{}}`, nil},
		{"root string", `"did:plc:x"`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, skipped := ExtractLinks([]byte(c.record))
			if skipped != 0 || !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %q (skipped %d), want %q", got, skipped, c.want)
			}
		})
	}
}

func TestExtractLinksBounds(t *testing.T) {
	var many []string
	for i := range MaxLinksPerRecord + 5 {
		many = append(many, fmt.Sprintf(`"did:plc:%d"`, i))
	}
	got, skipped := ExtractLinks([]byte(`{"a":[` + strings.Join(many, ",") + `]}`))
	if len(got) != MaxLinksPerRecord || skipped != 5 {
		t.Errorf("many links: %d kept, %d skipped", len(got), skipped)
	}
	deep := strings.Repeat(`{"a":`, MaxLinkDepth+2) + `"did:plc:deep"` + strings.Repeat(`}`, MaxLinkDepth+2)
	if got, skipped := ExtractLinks([]byte(deep)); len(got) != 0 || skipped != 1 {
		t.Errorf("deep link: %q, %d skipped", got, skipped)
	}
	long := `{"a":"https://x/` + strings.Repeat("y", MaxLinkTargetLen) + `"}`
	if got, skipped := ExtractLinks([]byte(long)); len(got) != 0 || skipped != 1 {
		t.Errorf("long link: %q, %d skipped", got, skipped)
	}
}

func TestExtractLinksRepeatedNames(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		want []Link
	}{
		{`{"a":{"b":"did:plc:old"},"a":{"b":"did:plc:new"}}`, []Link{{"a.b", "did:plc:new"}}},
		{`{"a":"did:plc:old","a":1}`, nil},
		{`{"x":{"a":"did:plc:x"},"y":{"a":"did:plc:y"}}`, []Link{{"x.a", "did:plc:x"}, {"y.a", "did:plc:y"}}},
		{`{"\u0061":"did:plc:old","a":"did:plc:new"}`, []Link{{"a", "did:plc:new"}}},
	} {
		if got, _ := ExtractLinks([]byte(tc.doc)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %q, want %q", tc.doc, got, tc.want)
		}
	}
	// A large object keeps a set of its names.
	var members []string
	for i := range 3 * smallObject {
		members = append(members, fmt.Sprintf(`"k%d":"did:plc:%d"`, i, i))
	}
	wide := `{` + strings.Join(members, ",") + `}`
	if got, _ := ExtractLinks([]byte(wide)); len(got) != 3*smallObject {
		t.Errorf("wide object: %d links", len(got))
	}
	repeated := `{` + strings.Join(members, ",") + `,"k1":null}`
	if got, _ := ExtractLinks([]byte(repeated)); len(got) != 3*smallObject-1 {
		t.Errorf("wide object with a repeated name: %d links", len(got))
	}
}

// FuzzExtractLinks: any input is handled without a panic, and for valid
// JSON every link found is a string value of the document at its path.
func FuzzExtractLinks(f *testing.F) {
	f.Add(`{"subject":{"uri":"at://did:plc:a/c/r"},"x":[{"$type":"t","d":"did:web:a"}]}`)
	f.Add(`{"a":[1,"did:plc:x",{"b":null}]}`)
	f.Add(`{"a":"\u0061t://x"}`)
	f.Add(`{"":{"":"at://0"},"":[]}`) // found by the fuzzer: a repeated name
	f.Fuzz(func(t *testing.T, doc string) {
		links, _ := ExtractLinks([]byte(doc))
		var v any
		if json.Unmarshal([]byte(doc), &v) != nil {
			return
		}
		values := map[string]bool{}
		collectStrings(v, values)
		for _, l := range links {
			if !values[l.Target] || !isLink(l.Target) {
				t.Errorf("link %q is not a link-shaped string value of %s", l.Target, doc)
			}
		}
	})
}

func collectStrings(v any, out map[string]bool) {
	switch x := v.(type) {
	case string:
		out[x] = true
	case []any:
		for _, e := range x {
			collectStrings(e, out)
		}
	case map[string]any:
		for _, e := range x {
			collectStrings(e, out)
		}
	}
}

func BenchmarkExtractLinks(b *testing.B) {
	post := []byte(`{"$type":"app.bsky.feed.post","createdAt":"2026-01-01T00:00:00.000Z","text":"hello @alice, see https://example.com","langs":["en"],` +
		`"reply":{"parent":{"cid":"bafyreifk3bwnmulk37ezrarg4ouheqnhgucypynftqafl4limssogvzk6i","uri":"at://did:plc:b3rzzkblqsxhr3dgcueymkqe/app.bsky.feed.post/3lf6yc4drhk2f"},` +
		`"root":{"cid":"bafyreifk3bwnmulk37ezrarg4ouheqnhgucypynftqafl4limssogvzk6i","uri":"at://did:plc:b3rzzkblqsxhr3dgcueymkqe/app.bsky.feed.post/3lf6yc4drhk2f"}},` +
		`"facets":[{"index":{"byteStart":6,"byteEnd":12},"features":[{"$type":"app.bsky.richtext.facet#mention","did":"did:plc:alice"}]}]}`)
	b.SetBytes(int64(len(post)))
	for b.Loop() {
		ExtractLinks(post)
	}
}
