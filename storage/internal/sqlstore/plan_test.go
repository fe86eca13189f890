package sqlstore

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/storage"
)

func TestPlanQuery(t *testing.T) {
	leaf := func(field, op string, v any) storage.Filter { return storage.Filter{Field: field, Op: op, Value: v} }
	and := func(fs ...storage.Filter) *storage.Filter { return &storage.Filter{And: fs} }
	ptr := func(f storage.Filter) *storage.Filter { return &f }
	indexes := map[string]int64{"n": 1, "s": 2, "a.b[0]": 3}
	cases := []struct {
		name      string
		filter    *storage.Filter
		sort      string
		drive     string // path:grp:conditions, "" for none
		residual  string // the residual filter (describeFilter)
		sortIndex int64
		hint      []string
	}{
		{name: "no filter"},
		{name: "an indexed equality", filter: ptr(leaf("n", "=", 3.0)), drive: "n:0:1", residual: ""},
		{name: "an unindexed equality", filter: ptr(leaf("m", "=", 3.0)), residual: "m = 3", hint: []string{"m"}},
		{name: "a string range", filter: ptr(leaf("s", ">=", "x")), drive: "s:1:1", residual: ""},
		{name: "a boolean equality", filter: ptr(leaf("a.b[0]", "=", true)), drive: "a.b[0]:2:1", residual: ""},
		{name: "a boolean inequality is no index's", filter: ptr(leaf("n", "!=", true)), residual: "n != true"},
		{name: "LIKE and nil are no index's", filter: and(leaf("s", "LIKE", "x%"), leaf("n", "=", nil)), residual: "(s LIKE x% AND n = <nil>)"},
		{name: "an equality beats a range", filter: and(leaf("n", ">", 1.0), leaf("s", "=", "x"), leaf("m", "=", 1.0)),
			drive: "s:1:1", residual: "(n > 1 AND m = 1)"},
		{name: "conditions on the same field and group join", filter: and(leaf("n", ">", 1.0), leaf("n", "<", 9.0), leaf("n", "<", "z")),
			drive: "n:0:2", residual: "n < z"},
		{name: "an OR is not looked into", filter: &storage.Filter{Or: []storage.Filter{leaf("n", "=", 1.0), leaf("n", "=", 2.0)}},
			residual: "(n = 1 OR n = 2)"},
		{name: "an indexed sort", sort: "s", residual: "", sortIndex: 2},
		{name: "an indexed sort takes its own field's conditions", filter: and(leaf("n", "=", 1.0), leaf("s", "<", "m")), sort: "s",
			drive: "s:1:1", residual: "n = 1", sortIndex: 2},
		{name: "an indexed sort leaves other fields' conditions", filter: ptr(leaf("n", "=", 1.0)), sort: "s",
			residual: "n = 1", sortIndex: 2},
		{name: "an unindexed sort under an indexed condition", filter: ptr(leaf("n", "=", 1.0)), sort: "m", drive: "n:0:1", residual: ""},
		{name: "an unindexed sort", filter: ptr(leaf("m", "<", 1.0)), sort: "x", residual: "m < 1", hint: []string{"m", "x"}},
	}
	for _, tc := range cases {
		p := planQuery(tc.filter, tc.sort, indexes)
		drive := ""
		if p.drive != nil {
			drive = p.drive.path + ":" + string(rune('0'+p.drive.grp)) + ":" + string(rune('0'+len(p.drive.conds)))
			if p.drive.id != indexes[p.drive.path] {
				t.Errorf("%s: drives with index %d", tc.name, p.drive.id)
			}
		}
		residual := describeFilter(p.residual)
		if drive != tc.drive || residual != tc.residual || p.sortIndex != tc.sortIndex || !slices.Equal(p.hint, tc.hint) {
			t.Errorf("%s: drive %q residual %s sort index %d hint %v; want %q %s %d %v", tc.name, drive, residual, p.sortIndex, p.hint,
				tc.drive, tc.residual, tc.sortIndex, tc.hint)
		}
	}
}

// describeFilter renders a filter for comparisons: "" for none.
func describeFilter(f *storage.Filter) string {
	switch {
	case f == nil:
		return ""
	case f.And != nil || f.Or != nil:
		members, join := f.And, " AND "
		if f.Or != nil {
			members, join = f.Or, " OR "
		}
		parts := make([]string, len(members))
		for i := range members {
			parts[i] = describeFilter(&members[i])
		}
		return "(" + strings.Join(parts, join) + ")"
	}
	return fmt.Sprintf("%s %s %v", f.Field, f.Op, f.Value)
}

func TestFieldKeyCursor(t *testing.T) {
	long := strings.Repeat("x", maxInlineKey)
	for _, k := range []fieldKey{
		{grp: 0, num: int64(-42), uri: "at://did:plc:a/c/1"},
		{grp: 0, num: 0.1, uri: "at://did:plc:a/c/2"},
		{grp: 0, num: 1e300, uri: "at://did:plc:a/c/2"},
		{grp: 0, num: "-123456789012345678901234567890.000001", uri: "at://did:plc:a/c/3"},
		{grp: 1, str: "", uri: "at://did:plc:a/c/4"},
		{grp: 1, str: "é\x01\u2028", uri: "at://did:plc:a/c/5"},
		{grp: 2, num: int64(1), uri: "at://did:plc:a/c/6"},
		{grp: 2, num: "0", uri: "at://did:plc:a/c/6"},
		{grp: 3, uri: "at://did:plc:a/c/7"},
	} {
		got, lookup, err := parseFieldKey(k.position())
		if err != nil || lookup || !reflect.DeepEqual(got, k) {
			t.Errorf("%+v: came back %+v (lookup %v) %v", k, got, lookup, err)
		}
	}
	// A value too long for a cursor is read again from its record.
	for _, k := range []fieldKey{{grp: 1, str: long, uri: "at://x/c/1"}, {grp: 1, str: "\xff", uri: "at://x/c/1"}} {
		got, lookup, err := parseFieldKey(k.position())
		if err != nil || !lookup || got.uri != k.uri || got.grp != 1 {
			t.Errorf("%q: %+v %v %v", k.str, got, lookup, err)
		}
	}
	at := func(g int64) time.Time { return time.UnixMicro(g) }
	for name, pos := range map[string]storage.Position{
		"offset cursor":   {Time: at(40)},
		"group 4":         {Time: at(4), URI: "at://x/c/1\x00"},
		"negative group":  {Time: at(-1), URI: "at://x/c/1\x00"},
		"no value":        {Time: at(0), URI: "at://x/c/1"},
		"no URI":          {Time: at(3), URI: "\x00"},
		"number as text":  {Time: at(0), URI: "at://x/c/1\x00s1"},
		"text as number":  {Time: at(1), URI: "at://x/c/1\x00i1"},
		"value in group3": {Time: at(3), URI: "at://x/c/1\x00i1"},
		"bad integer":     {Time: at(0), URI: "at://x/c/1\x00i1.5"},
		"NaN":             {Time: at(0), URI: "at://x/c/1\x00fNaN"},
		"infinity":        {Time: at(0), URI: "at://x/c/1\x00f+Inf"},
		"boolean 2":       {Time: at(2), URI: "at://x/c/1\x00i2"},
		"numeric exp":     {Time: at(0), URI: "at://x/c/1\x00n1e5"},
		"numeric empty":   {Time: at(0), URI: "at://x/c/1\x00n"},
		"numeric dot":     {Time: at(0), URI: "at://x/c/1\x00n1."},
		"unknown tag":     {Time: at(0), URI: "at://x/c/1\x00q1"},
	} {
		if _, _, err := parseFieldKey(pos); !errors.Is(err, storage.ErrInvalidCursor) || !errors.Is(err, storage.ErrInvalidQuery) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if !numericText("-0.5") || !numericText("12") || numericText("NaN") || numericText("1_000") || numericText("+1") {
		t.Error("numericText")
	}
	if (fieldKey{grp: 2, num: 1.0}).truthy() != true || (fieldKey{grp: 2, num: "0"}).truthy() {
		t.Error("truthy")
	}
}

// TestFieldValueSQL: the expressions of an entry are the filter's, with
// the path written in as a literal (PostgreSQL: its guards too).
func TestFieldValueSQL(t *testing.T) {
	path, err := ParseFieldPath("a.0[1]")
	if err != nil {
		t.Fatal(err)
	}
	got := fieldValueSQL(pgDialect, path)
	for _, want := range []string{`record #> '{"a","0","1"}'::text[]`, `jsonb_typeof(record #> '{"a"}'::text[]) = 'object'`,
		`jsonb_typeof(record #> '{"a","0"}'::text[]) = 'array'`, `COLLATE "C"`} {
		if !strings.Contains(got, want) {
			t.Errorf("PostgreSQL: %s lacks %s", got, want)
		}
	}
	if strings.Contains(got, "?") {
		t.Errorf("PostgreSQL: a placeholder is left: %s", got)
	}
	got = fieldValueSQL(sqliteDialect, path)
	if !strings.Contains(got, `json_type(record, '$."a"."0"[1]')`) || strings.Contains(got, "?") {
		t.Errorf("SQLite: %s", got)
	}
	if sqlString(`it's`) != `'it''s'` {
		t.Error(sqlString(`it's`))
	}
}

// testDialect is a Dialect with what rendering needs: a JSON dialect and
// whether casts are kept.
type testDialect struct {
	Dialect
	json  JSONDialect
	typed bool
}

func (d testDialect) TypedParams() bool                 { return d.typed }
func (d testDialect) JSONField(p []PathStep) JSONAccess { return d.json.JSONField(p) }
func (d testDialect) PathText(p []PathStep) string      { return d.json.PathText(p) }
func (d testDialect) Bytewise() string                  { return d.json.Bytewise() }
func (d testDialect) ILike() string                     { return d.json.ILike() }

var (
	pgDialect     = testDialect{json: PostgresJSON{}, typed: true}
	sqliteDialect = testDialect{json: SQLiteJSON{}}
)
