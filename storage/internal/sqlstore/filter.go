package sqlstore

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/lexview/lexview/storage"
)

// maxFilterString bounds a string value or pattern in a filter.
const maxFilterString = 4096

// likeEscape is the escape character of LIKE patterns, bound as an
// argument so that no dialect's string-literal rules matter.
const likeEscape = `\`

// filterBuilder translates a storage.Filter into a condition with "?"
// placeholders. The SQL text is built from fixed fragments only: every
// field name, index and value is an argument.
type filterBuilder struct {
	d     JSONDialect
	sql   strings.Builder
	args  []any
	conds int
}

// translateFilter returns the condition f stands for. Errors wrap
// storage.ErrInvalidQuery.
func translateFilter(d JSONDialect, f *storage.Filter) (string, []any, error) {
	b := &filterBuilder{d: d}
	if err := b.node(f, 1); err != nil {
		return "", nil, err
	}
	return b.sql.String(), b.args, nil
}

func invalid(format string, a ...any) error {
	return fmt.Errorf("%w: %s", storage.ErrInvalidQuery, fmt.Sprintf(format, a...))
}

func (b *filterBuilder) node(f *storage.Filter, depth int) error {
	if depth > storage.MaxFilterDepth {
		return invalid("filter nested deeper than %d levels", storage.MaxFilterDepth)
	}
	isLeaf := f.Field != "" || f.Op != "" || f.Value != nil
	set := 0
	for _, ok := range []bool{isLeaf, f.And != nil, f.Or != nil} {
		if ok {
			set++
		}
	}
	if set != 1 {
		return invalid("a filter must be exactly one of a condition (field, op, value), an and group or an or group")
	}
	if isLeaf {
		return b.leaf(f)
	}
	members, join := f.And, " AND "
	if f.Or != nil {
		members, join = f.Or, " OR "
	}
	if len(members) == 0 {
		return invalid("empty filter group")
	}
	b.sql.WriteByte('(')
	for i := range members {
		if i > 0 {
			b.sql.WriteString(join)
		}
		if err := b.node(&members[i], depth+1); err != nil {
			return err
		}
	}
	b.sql.WriteByte(')')
	return nil
}

func (b *filterBuilder) write(f Frag) {
	b.sql.WriteString(f.SQL)
	b.args = append(b.args, f.Args...)
}

func (b *filterBuilder) arg(sql string, v any) {
	b.sql.WriteString(sql)
	b.args = append(b.args, v)
}

// normalizeOp returns the canonical spelling of a filter operator.
func normalizeOp(op string) (string, bool) {
	switch op {
	case "=", "!=", "<", ">", "<=", ">=":
		return op, true
	}
	switch strings.ToUpper(strings.Join(strings.Fields(op), " ")) {
	case "LIKE":
		return "LIKE", true
	case "NOT LIKE":
		return "NOT LIKE", true
	}
	return "", false
}

// filterValue normalises a filter value to nil, string, float64 or bool.
func filterValue(v any) (any, error) {
	switch x := v.(type) {
	case nil, string, bool:
		return x, nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, invalid("numbers must be finite")
		}
		return x, nil
	case float32:
		return filterValue(float64(x))
	case int:
		return float64(x), nil
	case int32:
		return float64(x), nil
	case int64:
		return float64(x), nil
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return nil, invalid("bad number %q", x.String())
		}
		return filterValue(f)
	}
	return nil, invalid("values must be strings, numbers, booleans or nil, not %T", v)
}

func (b *filterBuilder) leaf(f *storage.Filter) error {
	b.conds++
	if b.conds > storage.MaxFilterConditions {
		return invalid("more than %d filter conditions", storage.MaxFilterConditions)
	}
	path, err := ParseFieldPath(f.Field)
	if err != nil {
		return err
	}
	op, ok := normalizeOp(f.Op)
	if !ok {
		shown := f.Op
		if len(shown) > 16 {
			shown = shown[:16] + "..."
		}
		return invalid("unknown operator %q (use =, !=, <, >, <=, >=, LIKE or NOT LIKE)", shown)
	}
	value, err := filterValue(f.Value)
	if err != nil {
		return err
	}
	field := b.d.JSONField(path)
	sqlOp := op
	if op == "!=" {
		sqlOp = "<>"
	}
	switch v := value.(type) {
	case nil:
		switch op {
		case "=":
			b.write(field.Nullish)
		case "!=":
			b.sql.WriteString("NOT ")
			b.write(field.Nullish)
		default:
			return invalid("nil compares only with = and !=")
		}
	case bool:
		if op != "=" && op != "!=" {
			return invalid("booleans compare only with = and !=")
		}
		b.write(field.Bool)
		b.arg(" "+sqlOp+" ?::boolean", v)
	case float64:
		if op == "LIKE" || op == "NOT LIKE" {
			return invalid("%s takes a string pattern", op)
		}
		b.write(field.Number)
		b.arg(" "+sqlOp+" ?::numeric", v)
	case string:
		if len(v) > maxFilterString {
			return invalid("string longer than %d bytes", maxFilterString)
		}
		if !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0 {
			return invalid("strings must be valid UTF-8 without NUL characters")
		}
		b.write(field.String)
		if op == "LIKE" || op == "NOT LIKE" {
			if err := checkLikePattern(v); err != nil {
				return err
			}
			neg := ""
			if op == "NOT LIKE" {
				neg = "NOT "
			}
			b.arg(" "+neg+b.d.ILike()+" ?::text", v)
			b.arg(" ESCAPE ?::text", likeEscape)
			return nil
		}
		b.arg(" "+sqlOp+" ?::text", v)
	}
	return nil
}

// checkLikePattern refuses a pattern ending in an unpaired escape, which
// PostgreSQL rejects and SQLite never matches.
func checkLikePattern(p string) error {
	for i := 0; i < len(p); i++ {
		if p[i] == '\\' {
			if i == len(p)-1 {
				return invalid("LIKE pattern ends with an escape character")
			}
			i++
		}
	}
	return nil
}

// sortKeys returns the ORDER BY terms for a field sort: numbers, then
// strings, then booleans, then everything else (absent, null, object,
// array), values and then URIs in dir within each group.
func sortKeys(d JSONDialect, field JSONAccess, dir string) Frag {
	g := fieldGroup(field)
	args := append([]any{}, g.Args...)
	var b strings.Builder
	b.WriteString(g.SQL)
	b.WriteString(`, `)
	for _, f := range []Frag{field.Number, field.String, field.Bool} {
		b.WriteString(f.SQL)
		b.WriteString(" " + dir + ", ")
		args = append(args, f.Args...)
	}
	b.WriteString("uri" + d.Bytewise() + " " + dir)
	return Frag{b.String(), args}
}
