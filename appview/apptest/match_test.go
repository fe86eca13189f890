package apptest_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lexview/lexview/appview/apptest"
)

// TestMatch: objects match as subsets, arrays exactly, and the matchers
// loosen either.
func TestMatch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, want, got string
		diffs           []string
	}{
		{"subset", `{"a": 1}`, `{"a": 1.0, "cid": "x", "indexedAt": "y"}`, nil},
		{"nested", `{"post": {"text": "hi"}}`, `{"post": {"text": "ho"}}`, []string{`$.post.text: want "hi", got "ho"`}},
		{"missing", `{"a": null}`, `{}`, []string{`$.a: missing, want null`}},
		{"array length", `[1, 2]`, `[1, 2, 3]`, []string{`$: want 2 items, got 3`}},
		{"array order", `[1, 2]`, `[2, 1]`, []string{`$[0]: want 1, got 2`, `$[1]: want 2, got 1`}},
		{"type", `{"a": {}}`, `{"a": [1]}`, []string{`$.a: want an object, got [1]`}},
		{"odd key", `{"a b": 1}`, `{"a b": 2}`, []string{`$["a b"]: want 1, got 2`}},
		{"any", `{"a": {"$any": true}}`, `{"a": [1]}`, nil},
		{"any missing", `{"a": {"$any": true}}`, `{}`, []string{`$.a: missing`}},
		{"absent", `{"a": {"$absent": true}}`, `{"a": 1}`, []string{`$.a: want no such member, got 1`}},
		{"match", `{"uri": {"$match": "^at://"}}`, `{"uri": "https://x"}`, []string{`$.uri: want a string matching "^at://", got "https://x"`}},
		{"length", `{"$length": 2}`, `[{}, {}]`, nil},
		{"contains", `{"$contains": [{"n": 2}]}`, `[{"n": 1}, {"n": 2}]`, nil},
		{"contains none", `{"$contains": [{"n": 3}]}`, `[{"n": 1}]`, []string{`$: no item matches {"n":3}`}},
		{"unordered", `{"$unordered": [{"n": 1}, {"n": {"$any": true}}]}`, `[{"n": 5}, {"n": 1}]`, nil},
		{"unordered distinct", `{"$unordered": [1, 1]}`, `[1, 2]`, []string{`$: no item matches 1`}},
		{"unordered length", `{"$unordered": [1]}`, `[1, 2]`, []string{`$: want 1 items (in any order), got 2`}},
		{"type field", `{"$type": "com.example.note"}`, `{"$type": "com.example.note"}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			diffs, err := apptest.Match(json.RawMessage(tc.want), json.RawMessage(tc.got))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(diffs, "\n") != strings.Join(tc.diffs, "\n") {
				t.Fatalf("Match(%s, %s):\n%s\nwant:\n%s", tc.want, tc.got, strings.Join(diffs, "\n"), strings.Join(tc.diffs, "\n"))
			}
		})
	}
}
