package sqlstore

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/lexview/lexview/storage"
)

var jsonDialects = map[string]JSONDialect{"sqlite": SQLiteJSON{}, "postgres": PostgresJSON{}}

func TestParseFieldPath(t *testing.T) {
	good := map[string][]PathStep{
		"text":                 {{Key: "text"}},
		"$type":                {{Key: "$type"}},
		"embed.images[0].alt":  {{Key: "embed"}, {Key: "images"}, {Index: 0}, {Key: "alt"}},
		"a-b.c_d[12][3]":       {{Key: "a-b"}, {Key: "c_d"}, {Index: 12}, {Index: 3}},
		"facets.0":             {{Key: "facets"}, {Key: "0"}},
		"x.Y.z9.$a-b_c.999999": {{Key: "x"}, {Key: "Y"}, {Key: "z9"}, {Key: "$a-b_c"}, {Key: "999999"}},
	}
	for path, want := range good {
		got, err := ParseFieldPath(path)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%q: %v %v, want %v", path, got, err, want)
		}
	}
	bad := []string{"", ".a", "a.", "a..b", "[0]", "a[]", "a[01]", "a[-1]", "a[1234567]", "a[0", "a]", "a b",
		"a.'b'", `a."b"`, "a;b", "a/*", "é", "a\x00", "a.b\\c", strings.Repeat("a", 257),
		strings.Repeat("a.", 32) + "a"}
	for _, path := range bad {
		if _, err := ParseFieldPath(path); !errors.Is(err, storage.ErrInvalidQuery) {
			t.Errorf("%q: accepted (%v)", path, err)
		}
	}
}

func leaf(field, op string, v any) storage.Filter {
	return storage.Filter{Field: field, Op: op, Value: v}
}

// nest wraps f in n single-member And groups.
func nest(f storage.Filter, n int) storage.Filter {
	for range n {
		f = storage.Filter{And: []storage.Filter{f}}
	}
	return f
}

func TestTranslateFilterRefusals(t *testing.T) {
	cases := map[string]storage.Filter{
		"empty filter":         {},
		"empty and":            {And: []storage.Filter{}},
		"empty or":             {Or: []storage.Filter{}},
		"leaf and group":       {Field: "a", Op: "=", Value: "x", And: []storage.Filter{leaf("a", "=", "x")}},
		"and and or":           {And: []storage.Filter{leaf("a", "=", "x")}, Or: []storage.Filter{leaf("a", "=", "x")}},
		"unknown op":           leaf("a", "~", "x"),
		"op injection":         leaf("a", "= 1 OR 1 =", "x"),
		"empty op":             leaf("a", "", "x"),
		"bool with <":          leaf("a", "<", true),
		"nil with >=":          leaf("a", ">=", nil),
		"LIKE with number":     leaf("a", "LIKE", 1.0),
		"NOT LIKE with bool":   leaf("a", "NOT LIKE", false),
		"NOT LIKE with nil":    leaf("a", "NOT LIKE", nil),
		"NaN":                  leaf("a", "=", math.NaN()),
		"Inf":                  leaf("a", "<", math.Inf(1)),
		"map value":            leaf("a", "=", map[string]any{}),
		"slice value":          leaf("a", "=", []any{"x"}),
		"bad path":             leaf("a'b", "=", "x"),
		"no field":             {Op: "=", Value: "x"},
		"trailing escape":      leaf("a", "LIKE", `abc\`),
		"invalid UTF-8":        leaf("a", "=", "\xff"),
		"NUL":                  leaf("a", "=", "a\x00b"),
		"group too deep":       nest(leaf("a", "=", "x"), storage.MaxFilterDepth),
		"deep member is wrong": {Or: []storage.Filter{leaf("a", "=", "x"), nest(leaf("a", "?", "x"), 2)}},
	}
	many := make([]storage.Filter, storage.MaxFilterConditions+1)
	for i := range many {
		many[i] = leaf("a", "=", 1.0)
	}
	cases["too many conditions"] = storage.Filter{Or: many}
	for name, f := range cases {
		for dn, d := range jsonDialects {
			if sql, _, err := translateFilter(d, &f); !errors.Is(err, storage.ErrInvalidQuery) {
				t.Errorf("%s/%s: accepted as %s (%v)", dn, name, sql, err)
			}
		}
	}
	// A leaf at the maximum depth is fine.
	ok := nest(leaf("a", "=", "x"), storage.MaxFilterDepth-1)
	for dn, d := range jsonDialects {
		if _, _, err := translateFilter(d, &ok); err != nil {
			t.Errorf("%s: leaf at depth %d refused: %v", dn, storage.MaxFilterDepth, err)
		}
	}
}

func TestPostgresPathGuards(t *testing.T) {
	plain := PostgresJSON{}.JSONField([]PathStep{{Key: "a"}, {Key: "b"}})
	if strings.Contains(plain.String.SQL, "CASE WHEN jsonb_typeof(record #> ?::text[]) = 'object'") ||
		!slices.Equal(plain.Nullish.Args, []any{`{"a","b"}`}) {
		t.Fatalf("plain path: %+v", plain)
	}
	guarded := PostgresJSON{}.JSONField([]PathStep{{Key: "a"}, {Index: 2}, {Key: "-1"}})
	if !strings.Contains(guarded.Nullish.SQL, `= 'array' AND`) || !strings.Contains(guarded.Nullish.SQL, `= 'object'`) ||
		!slices.Equal(guarded.Nullish.Args, []any{`{"a"}`, `{"a","2"}`, `{"a","2","-1"}`}) {
		t.Fatalf("guarded path: %+v", guarded.Nullish)
	}
}

// fuzzReader turns fuzz bytes into choices.
type fuzzReader struct{ b []byte }

func (r *fuzzReader) next() int {
	if len(r.b) == 0 {
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return int(c)
}

func buildFuzzFilter(r *fuzzReader, strs []string, num float64, depth int) storage.Filter {
	switch k := r.next() % 5; {
	case k == 3 && depth < 8, k == 4 && depth < 8:
		members := make([]storage.Filter, r.next()%4)
		for i := range members {
			members[i] = buildFuzzFilter(r, strs, num, depth+1)
		}
		if k == 3 {
			return storage.Filter{And: members}
		}
		return storage.Filter{Or: members}
	}
	s := func() string { return strs[r.next()%len(strs)] }
	var field string
	switch r.next() % 4 {
	case 0:
		field = s()
	case 1:
		field = s() + "." + s()
	case 2:
		field = s() + "[" + s() + "]"
	default:
		field = "a." + s() + "[1]." + s()
	}
	ops := append(storage.FilterOps(), "like", "not  like", "<>", "", "==")
	op := ops[r.next()%len(ops)]
	if r.next()%7 == 0 {
		op = s()
	}
	var value any
	switch r.next() % 7 {
	case 0, 1:
		value = s()
	case 2:
		value = num
	case 3:
		value = r.next()%2 == 0
	case 4:
		value = nil
	case 5:
		value = int64(r.next())
	default:
		value = []byte(s())
	}
	return storage.Filter{Field: field, Op: op, Value: value}
}

// canonical replaces every name, index and value of f with a fixed one of
// the same kind: its SQL must not change.
func canonical(t *testing.T, f storage.Filter) storage.Filter {
	if f.And != nil || f.Or != nil {
		out := storage.Filter{}
		for _, m := range f.And {
			out.And = append(out.And, canonical(t, m))
		}
		for _, m := range f.Or {
			out.Or = append(out.Or, canonical(t, m))
		}
		return out
	}
	steps, err := ParseFieldPath(f.Field)
	if err != nil {
		t.Fatalf("accepted field %q fails to parse: %v", f.Field, err)
	}
	var b strings.Builder
	for i, s := range steps {
		switch {
		case s.Key == "":
			b.WriteString("[0]")
			continue
		case i > 0:
			b.WriteByte('.')
		}
		if integerLike(s.Key) {
			b.WriteString("7")
		} else {
			b.WriteString("k")
		}
	}
	out := storage.Filter{Field: b.String(), Op: f.Op}
	switch f.Value.(type) {
	case string:
		out.Value = "v"
	case bool:
		out.Value = true
	case nil:
	default:
		out.Value = 1.0
	}
	return out
}

func FuzzFilterTranslate(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0}, "text", "x' OR 1=1 --", "0", 1.5)
	f.Add([]byte{3, 2, 0, 1, 1, 0, 4, 2, 2, 3}, "a-b", "$type", "%\\_", math.Copysign(0, -1))
	f.Add([]byte{4, 3, 0, 2, 3, 4}, "embed", "12", "LIKE", 1e300)
	f.Fuzz(func(t *testing.T, shape []byte, s1, s2, s3 string, num float64) {
		r := &fuzzReader{b: shape}
		filter := buildFuzzFilter(r, []string{s1, s2, s3}, num, 1)
		for name, d := range jsonDialects {
			sql, args, err := translateFilter(d, &filter)
			if err != nil {
				if !errors.Is(err, storage.ErrInvalidQuery) {
					t.Fatalf("%s: error does not wrap ErrInvalidQuery: %v", name, err)
				}
				continue
			}
			if n := strings.Count(stripLiterals(sql), "?"); n != len(args) {
				t.Fatalf("%s: %d placeholders, %d args: %s", name, n, len(args), sql)
			}
			canon := canonical(t, filter)
			csql, _, err := translateFilter(d, &canon)
			if err != nil {
				t.Fatalf("%s: canonical filter refused: %v", name, err)
			}
			if csql != sql {
				t.Fatalf("%s: SQL depends on input strings:\n%s\n%s", name, sql, csql)
			}
		}
	})
}

// stripLiterals removes single-quoted literals from generated SQL.
func stripLiterals(sql string) string {
	var b strings.Builder
	quoted := false
	for i := 0; i < len(sql); i++ {
		if sql[i] == '\'' {
			quoted = !quoted
			continue
		}
		if !quoted {
			b.WriteByte(sql[i])
		}
	}
	return b.String()
}
