package sqlstore

import (
	"encoding/binary"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/lexview/lexview/storage"
)

// render writes a parsed query back in a canonical form, for the tests:
// groups joined by " | ", items by " ", phrases in quotes, "-" before an
// excluded item, "*" after a prefix.
func render(e searchExpr) string {
	var groups []string
	for _, g := range e.groups {
		var items []string
		item := func(it searchItem, neg bool) {
			s := strings.Join(it.words, " ")
			if len(it.words) > 1 {
				s = `"` + s + `"`
			}
			if it.prefix {
				s += "*"
			}
			if neg {
				s = "-" + s
			}
			items = append(items, s)
		}
		for _, it := range g.pos {
			item(it, false)
		}
		for _, it := range g.neg {
			item(it, true)
		}
		groups = append(groups, strings.Join(items, " "))
	}
	return strings.Join(groups, " | ")
}

func TestParseSearch(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"hello", "hello"},
		{"  Hello   World ", "Hello World"},
		{`"quick brown" fox`, `"quick brown" fox`},
		{`-"red fox" quick`, `quick -"red fox"`},
		{"a b OR c", "a b | c"},
		{"a OR b OR c d", "a | b | c d"},
		{"fox*", "fox*"},
		{"fox**", "fox*"},
		{"-fox* quick", "quick -fox*"},
		{"e-mail", `"e mail"`},
		{"foo-ba*", `"foo ba"*`},
		{"ab.*", "ab"},
		{"a*b", `"a b"`},
		{"(quick) [fox]", "quick fox"},
		{"hello !!! ...", "hello"},
		{`"" hello`, "hello"},
		{`say "hi*"`, "say hi"},
		{"or and not near", "or and not near"},
		{"OR" + "x", "ORx"},
		{"--x y", "y -x"},
		{`foo"bar baz"`, `foo "bar baz"`},
		{"crème brûlée", "crème brûlée"},
		{"東京 タワー", "東京 タワー"},
		{"hello\x00world", "hello world"},
		{"e\u0301clair", "e\u0301clair"},
		{"x \u0301", "x"},
	} {
		e, err := parseSearch(c.in)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if got := render(e); got != c.want {
			t.Errorf("%q: got %s, want %s", c.in, got, c.want)
		}
	}
}

func TestParseSearchRefusals(t *testing.T) {
	for _, c := range []struct{ in, why string }{
		{"", "no words"},
		{" ... !!! ", "no words"},
		{"-", "no words"},
		{`"open`, "not closed"},
		{`a "b c`, "not closed"},
		{"OR a", "both sides"},
		{"a OR", "both sides"},
		{"a OR OR b", "both sides"},
		{"a OR ... ", "both sides"},
		{"-a", "not excluded"},
		{"a OR -b", "not excluded"},
		{"-a OR b", "not excluded"},
		{"a*", "at least 2"},
		{"x-a*", "at least 2"},
		{strings.Repeat("w ", storage.MaxSearchTerms+1), "more than"},
		{`"` + strings.Repeat("w ", storage.MaxSearchTerms+1) + `"`, "more than"},
		{strings.Repeat("x", storage.MaxSearchQueryLen+1), "longer than"},
		{"bad \xff utf8", "UTF-8"},
	} {
		_, err := parseSearch(c.in)
		if !errors.Is(err, storage.ErrInvalidQuery) || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%.40q: %v, want an error saying %q", c.in, err, c.why)
		}
	}
}

func mustParse(t *testing.T, q string) searchExpr {
	t.Helper()
	e, err := parseSearch(q)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestFTS4Match(t *testing.T) {
	match, prog := fts4Match(mustParse(t, `quick brown-fox* OR red -dog -"big cat"`), 0b0101)
	if want := `("quick" AND "brown fox*") OR ("red") OR ("red" AND "dog" AND "big cat")`; match != want {
		t.Errorf("match %s\nwant  %s", match, want)
	}
	// mask, 3 scoring phrases, 2 groups; group 1: pos 0 1, no neg;
	// group 2: pos 2, neg 4 5 (3 is the probe's copy of red).
	if want := []byte{0b0101, 3, 2, 2, 0, 1, 0, 1, 2, 2, 4, 5}; !reflect.DeepEqual(prog, want) {
		t.Errorf("program %v, want %v", prog, want)
	}
}

func TestTsqueryExpr(t *testing.T) {
	e := mustParse(t, `quick "brown fox" OR red* -dog`)
	sql, args := tsqueryExpr(e, []searchSlot{{slot: 0, config: "simple"}, {slot: 2, config: "simple"}})
	wantSQL := `(((to_tsquery(?::regconfig, ?)) && (to_tsquery(?::regconfig, ?))) || ((to_tsquery(?::regconfig, ?)) && (!!(to_tsquery(?::regconfig, ?)))))`
	if sql != wantSQL {
		t.Errorf("sql %s\nwant %s", sql, wantSQL)
	}
	want := []any{"simple", "'quick':AC", "simple", "('brown':A <-> 'fox':A) | ('brown':C <-> 'fox':C)",
		"simple", "'red':*AC", "simple", "'dog':AC"}
	if !reflect.DeepEqual(args, want) {
		t.Errorf("args %q\nwant %q", args, want)
	}
	// Slots of two configurations: each word once per configuration.
	sql, args = tsqueryExpr(mustParse(t, "cats"), []searchSlot{{slot: 1, config: "english"}, {slot: 3, config: "simple"}, {slot: 0, config: "english"}})
	if want := `(((to_tsquery(?::regconfig, ?) || to_tsquery(?::regconfig, ?))))`; sql != want {
		t.Errorf("sql %s\nwant %s", sql, want)
	}
	if want := []any{"english", "'cats':BA", "simple", "'cats':D"}; !reflect.DeepEqual(args, want) {
		t.Errorf("args %q, want %q", args, want)
	}
}

// matchInfo builds a matchinfo 'pcnalx' blob: n rows, per-column average
// and row lengths, and per phrase and column (hits in the row, rows with
// hits).
func matchInfo(n uint32, avg, row []uint32, x [][][2]uint32) []byte {
	p, c := len(x), len(avg)
	vals := []uint32{uint32(p), uint32(c), n}
	vals = append(vals, avg...)
	vals = append(vals, row...)
	for _, ph := range x {
		for _, col := range ph {
			vals = append(vals, col[0], col[0]*3, col[1])
		}
	}
	b := make([]byte, 0, 4*len(vals))
	for _, v := range vals {
		b = binary.NativeEndian.AppendUint32(b, v)
	}
	return b
}

func TestSearchRank(t *testing.T) {
	avg, row := []uint32{5, 5}, []uint32{4, 6}
	// One group, phrase 0 positive; phrase 1 excluded (as a probe).
	prog := []byte{0b11, 1, 1, 1, 0, 1, 1}
	rank := func(mask byte, x [][][2]uint32) any {
		p := append([]byte{mask}, prog[1:]...)
		return SearchRank(matchInfo(100, avg, row, x), p)
	}
	hit := [][][2]uint32{{{1, 10}, {0, 0}}, {{0, 0}, {0, 3}}}
	r, ok := rank(0b11, hit).(float64)
	if !ok || !(r > 0) {
		t.Fatalf("a match: %v", rank(0b11, hit))
	}
	// The phrase only in an unsearched column: no match.
	if got := rank(0b10, hit); got != nil {
		t.Errorf("a column not searched: %v", got)
	}
	// The excluded phrase in a searched column: no match; in another
	// column: a match.
	excluded := [][][2]uint32{{{1, 10}, {0, 0}}, {{0, 0}, {2, 3}}}
	if got := rank(0b11, excluded); got != nil {
		t.Errorf("an excluded phrase present: %v", got)
	}
	if got := rank(0b01, excluded); got == nil {
		t.Errorf("an excluded phrase in a column not searched")
	}
	// A rarer phrase scores more; more hits score more.
	rare := [][][2]uint32{{{1, 2}, {0, 0}}, {{0, 0}, {0, 0}}}
	if rr, _ := rank(0b11, rare).(float64); !(rr > r) {
		t.Errorf("rare %v <= common %v", rr, r)
	}
	more := [][][2]uint32{{{3, 10}, {0, 0}}, {{0, 0}, {0, 0}}}
	if rm, _ := rank(0b11, more).(float64); !(rm > r) {
		t.Errorf("3 hits %v <= 1 hit %v", rm, r)
	}
	// A phrase in most rows still scores a little.
	common := [][][2]uint32{{{1, 90}, {0, 0}}, {{0, 0}, {0, 0}}}
	if rc, _ := rank(0b11, common).(float64); !(rc > 0) || math.IsInf(rc, 0) {
		t.Errorf("common %v", rc)
	}
	// Malformed arguments yield nil, never a panic.
	for _, c := range []struct{ mi, prog []byte }{
		{nil, prog}, {[]byte{1, 2, 3}, prog}, {matchInfo(100, avg, row, hit), nil},
		{matchInfo(100, avg, row, hit), []byte{3, 1, 1, 5}}, {matchInfo(100, avg, row, hit), []byte{3, 1, 1, 1, 9, 0}},
	} {
		if got := SearchRank(c.mi, c.prog); got != nil {
			t.Errorf("SearchRank(%v, %v) = %v", c.mi, c.prog, got)
		}
	}
}

func FuzzParseSearch(f *testing.F) {
	for _, s := range []string{"hello", `"a b" OR -c d*`, "OR", `"`, "-", "a-b*", "\xff", "東京*"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		e, err := parseSearch(q)
		if err != nil {
			if !errors.Is(err, storage.ErrInvalidQuery) {
				t.Fatalf("%q: %v", q, err)
			}
			return
		}
		words := 0
		for _, g := range e.groups {
			if len(g.pos) == 0 {
				t.Fatalf("%q: a group without a positive item", q)
			}
			for _, it := range append(append([]searchItem{}, g.pos...), g.neg...) {
				for _, w := range it.words {
					words++
					if w == "" || strings.ContainsAny(w, `"'\* :&|!()<>`) {
						t.Fatalf("%q: word %q", q, w)
					}
				}
			}
		}
		if words == 0 || words > storage.MaxSearchTerms {
			t.Fatalf("%q: %d words", q, words)
		}
		match, prog := fts4Match(e, 0b1111)
		if strings.Count(match, `"`)%2 != 0 || len(prog) < 3 {
			t.Fatalf("%q: match %s", q, match)
		}
	})
}
