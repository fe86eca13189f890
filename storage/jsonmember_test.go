package storage

import (
	"bytes"
	"encoding/json"
	"testing"
)

// mapMember is what topLevelMember must agree with: decoding into a map.
func mapMember(doc []byte, name string) (json.RawMessage, bool) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(doc, &fields) != nil {
		return nil, false
	}
	raw, ok := fields[name]
	return raw, ok
}

var memberDocs = []string{
	`{"createdAt":"2025-02-03T04:05:06Z"}`,
	` { "a" : 1 , "createdAt" : "x" } `,
	"{\n\t\"createdAt\"\r:\"x\"}",
	`{"createdAt":"first","createdAt":"last"}`,
	`{"created\u0041t":"escaped name"}`,
	`{"createdAt\\":"not it","b":"\"createdAt\":1"}`,
	`{"reply":{"createdAt":"nested"},"list":[{"createdAt":"in a list"},"}]"],"createdAt":null}`,
	`{"n":-1.5e3,"t":true,"f":false,"z":null,"createdAt":12}`,
	`{"createdAt":{"a":[1,2,{"b":"]}"}]}}`,
	`{"createdAt":[]}`,
	`{"text":"a \\ b \" c","createdAt":"\u00e9"}`,
	`{}`,
	`{"createdAt":"x",}`,
	`{"createdAt":"x"`,
	`{"createdAt":"x"} {}`,
	`["createdAt","x"]`,
	`null`,
	`"createdAt"`,
	`12`,
	``,
	`   `,
	"{\"createdAt\":\"\xff\"}",
}

func TestTopLevelMember(t *testing.T) {
	for _, doc := range memberDocs {
		got, ok := topLevelMember([]byte(doc), "createdAt")
		want, wantOK := mapMember([]byte(doc), "createdAt")
		if ok != wantOK || !bytes.Equal(got, want) {
			t.Errorf("%q: %q %v, want %q %v", doc, got, ok, want, wantOK)
		}
	}
}

func FuzzTopLevelMember(f *testing.F) {
	for _, doc := range memberDocs {
		f.Add(doc, "createdAt")
	}
	f.Add(`{"a":{"b":1},"a":2}`, "a")
	f.Fuzz(func(t *testing.T, doc, name string) {
		got, ok := topLevelMember([]byte(doc), name)
		want, wantOK := mapMember([]byte(doc), name)
		if ok != wantOK || !bytes.Equal(got, want) {
			t.Fatalf("%q %q: %q %v, want %q %v", doc, name, got, ok, want, wantOK)
		}
	})
}

// BenchmarkTopLevelMember: the scan against decoding into a map, on a
// post-sized record.
func BenchmarkTopLevelMember(b *testing.B) {
	doc := []byte(`{"$type":"app.bsky.feed.post","createdAt":"2025-06-01T12:00:00.000Z","langs":["en"],"text":"` +
		"Spent the morning rewiring the garden irrigation controller. Turns out the valve timings were off by an hour since the clocks changed." + `"}`)
	for name, fn := range map[string]func([]byte, string) (json.RawMessage, bool){"scan": topLevelMember, "map": mapMember} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				fn(doc, "createdAt")
			}
		})
	}
}
