package apptest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Match compares got (a JSON value) with the pattern want and returns
// what differs, one line each, prefixed by the JSON path ($.posts[0].text);
// nil when got matches. A pattern is a JSON value where:
//
//   - an object matches an object holding at least its keys, each
//     matching (extra keys are allowed: leave out cid, indexedAt);
//   - an array matches an array of the same length, item by item;
//   - a string, number, boolean or null matches an equal value;
//   - an object with one of these keys only is a matcher:
//     {"$any": true} matches any value, {"$absent": true} (as a member)
//     matches a member that is missing, {"$match": "regexp"} a string
//     the regular expression matches, {"$length": n} an array of n items,
//     {"$contains": [...]} an array holding a distinct item matching each
//     pattern, in any order, and {"$unordered": [...]} the same with no
//     other items.
func Match(want, got json.RawMessage) ([]string, error) {
	w, err := decode(want)
	if err != nil {
		return nil, fmt.Errorf("the pattern: %w", err)
	}
	g, err := decode(got)
	if err != nil {
		return nil, fmt.Errorf("the value: %w", err)
	}
	var m matcher
	m.match("$", w, g, true)
	return m.diffs, nil
}

// decode decodes a JSON value keeping numbers exact.
func decode(raw json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value")
	}
	return v, nil
}

// The matchers' keys.
const (
	opAny       = "$any"
	opAbsent    = "$absent"
	opMatch     = "$match"
	opLength    = "$length"
	opContains  = "$contains"
	opUnordered = "$unordered"
)

// matcherOf returns the matcher key and argument of a pattern that is a
// matcher.
func matcherOf(want any) (string, any, bool) {
	obj, ok := want.(map[string]any)
	if !ok || len(obj) != 1 {
		return "", nil, false
	}
	for k, v := range obj {
		switch k {
		case opAny, opAbsent, opMatch, opLength, opContains, opUnordered:
			return k, v, true
		}
	}
	return "", nil, false
}

// checkPattern reports a malformed matcher anywhere in a pattern.
func checkPattern(raw json.RawMessage) error {
	v, err := decode(raw)
	if err != nil {
		return err
	}
	return checkValue("$", v)
}

func checkValue(path string, v any) error {
	if op, arg, ok := matcherOf(v); ok {
		switch op {
		case opAny, opAbsent:
			if arg != true {
				return fmt.Errorf("%s: %s takes true", path, op)
			}
		case opMatch:
			s, ok := arg.(string)
			if !ok {
				return fmt.Errorf("%s: %s takes a regular expression", path, op)
			}
			if _, err := regexp.Compile(s); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
		case opLength:
			n, ok := arg.(json.Number)
			if i, err := n.Int64(); !ok || err != nil || i < 0 {
				return fmt.Errorf("%s: %s takes a count", path, op)
			}
		case opContains, opUnordered:
			items, ok := arg.([]any)
			if !ok {
				return fmt.Errorf("%s: %s takes an array", path, op)
			}
			for i, item := range items {
				if err := checkValue(fmt.Sprintf("%s[%d]", path, i), item); err != nil {
					return err
				}
			}
		}
		return nil
	}
	switch v := v.(type) {
	case map[string]any:
		for k, item := range v {
			if err := checkValue(path+"."+k, item); err != nil {
				return err
			}
		}
	case []any:
		for i, item := range v {
			if err := checkValue(fmt.Sprintf("%s[%d]", path, i), item); err != nil {
				return err
			}
		}
	}
	return nil
}

// matcher collects the differences of a match.
type matcher struct{ diffs []string }

func (m *matcher) add(path, format string, args ...any) {
	m.diffs = append(m.diffs, path+": "+fmt.Sprintf(format, args...))
}

// matches reports whether got matches want, recording nothing.
func matches(want, got any) bool {
	var m matcher
	m.match("$", want, got, true)
	return len(m.diffs) == 0
}

// match compares got with want at path; present says whether got exists
// (a member may be missing).
func (m *matcher) match(path string, want, got any, present bool) {
	if op, arg, ok := matcherOf(want); ok {
		m.matchOp(path, op, arg, got, present)
		return
	}
	if !present {
		m.add(path, "missing, want %s", show(want))
		return
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			m.add(path, "want an object, got %s", show(got))
			return
		}
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v, ok := g[k]
			m.match(memberPath(path, k), w[k], v, ok)
		}
	case []any:
		g, ok := got.([]any)
		if !ok {
			m.add(path, "want an array of %d, got %s", len(w), show(got))
			return
		}
		if len(g) != len(w) {
			m.add(path, "want %d items, got %d", len(w), len(g))
		}
		for i := range min(len(w), len(g)) {
			m.match(fmt.Sprintf("%s[%d]", path, i), w[i], g[i], true)
		}
	case json.Number:
		g, ok := got.(json.Number)
		if !ok || !sameNumber(w, g) {
			m.add(path, "want %s, got %s", show(want), show(got))
		}
	default: // string, bool, nil
		if want != got {
			m.add(path, "want %s, got %s", show(want), show(got))
		}
	}
}

// matchOp applies a matcher.
func (m *matcher) matchOp(path, op string, arg, got any, present bool) {
	if op == opAbsent {
		if present {
			m.add(path, "want no such member, got %s", show(got))
		}
		return
	}
	if !present {
		m.add(path, "missing")
		return
	}
	switch op {
	case opMatch:
		s, ok := got.(string)
		if !ok || !regexp.MustCompile(arg.(string)).MatchString(s) {
			m.add(path, "want a string matching %s, got %s", show(arg), show(got))
		}
	case opLength:
		n, _ := arg.(json.Number).Int64()
		g, ok := got.([]any)
		if !ok || int64(len(g)) != n {
			m.add(path, "want an array of %d, got %s", n, describeLength(got))
		}
	case opContains, opUnordered:
		items := arg.([]any)
		g, ok := got.([]any)
		if !ok {
			m.add(path, "want an array, got %s", show(got))
			return
		}
		if op == opUnordered && len(g) != len(items) {
			m.add(path, "want %d items (in any order), got %d", len(items), len(g))
		}
		for _, i := range unmatched(items, g) {
			m.add(path, "no item matches %s", show(items[i]))
		}
	}
}

// unmatched pairs each pattern of want with a distinct item of got
// (a maximum bipartite matching) and returns the patterns left unpaired.
func unmatched(want, got []any) []int {
	pairedWith := make([]int, len(got)) // got item -> want index, -1 if free
	for i := range pairedWith {
		pairedWith[i] = -1
	}
	fits := make([][]int, len(want))
	for i, w := range want {
		for j, g := range got {
			if matches(w, g) {
				fits[i] = append(fits[i], j)
			}
		}
	}
	var try func(i int, seen []bool) bool
	try = func(i int, seen []bool) bool {
		for _, j := range fits[i] {
			if seen[j] {
				continue
			}
			seen[j] = true
			if pairedWith[j] < 0 || try(pairedWith[j], seen) {
				pairedWith[j] = i
				return true
			}
		}
		return false
	}
	var out []int
	for i := range want {
		if !try(i, make([]bool, len(got))) {
			out = append(out, i)
		}
	}
	return out
}

// sameNumber compares two JSON numbers by value (1 and 1.0 are equal).
func sameNumber(a, b json.Number) bool {
	if a == b {
		return true
	}
	x, errA := strconv.ParseFloat(string(a), 64)
	y, errB := strconv.ParseFloat(string(b), 64)
	return errA == nil && errB == nil && x == y
}

// memberPath is path.key, or path["key"] for a key that is not a plain
// name.
func memberPath(path, key string) string {
	if key != "" && strings.Trim(key, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$") == "" {
		return path + "." + key
	}
	q, _ := json.Marshal(key)
	return path + "[" + string(q) + "]"
}

// maxShown bounds a value shown in a difference.
const maxShown = 120

// show is a value as JSON, shortened.
func show(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(raw) > maxShown {
		return string(raw[:maxShown]) + "..."
	}
	return string(raw)
}

func describeLength(v any) string {
	if a, ok := v.([]any); ok {
		return fmt.Sprintf("%d", len(a))
	}
	return show(v)
}
