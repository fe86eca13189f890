package sqlstore

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/lexview/lexview/storage"
)

// Limits of a record field path.
const (
	maxFieldPathLen = 256
	maxPathSteps    = 32
	maxIndexDigits  = 6
)

// PathStep is one step of a record field path: an object member (Key set)
// or an array element (Key empty, Index set).
type PathStep struct {
	Key   string
	Index int
}

// ParseFieldPath parses a field path such as "embed.images[0].alt": names
// of ASCII letters, digits, '_', '$' and '-' separated by dots, each
// optionally followed by [n] array indices. Errors wrap
// storage.ErrInvalidQuery.
func ParseFieldPath(path string) ([]PathStep, error) {
	bad := func(why string) error {
		shown := path
		if len(shown) > 64 {
			shown = shown[:64] + "..."
		}
		return fmt.Errorf("%w: field path %q: %s", storage.ErrInvalidQuery, shown, why)
	}
	if path == "" {
		return nil, bad("empty")
	}
	if len(path) > maxFieldPathLen {
		return nil, bad(fmt.Sprintf("longer than %d bytes", maxFieldPathLen))
	}
	var steps []PathStep
	i := 0
	needName := true
	for i < len(path) {
		if len(steps) >= maxPathSteps {
			return nil, bad(fmt.Sprintf("more than %d steps", maxPathSteps))
		}
		if needName {
			j := i
			for j < len(path) && isNameByte(path[j]) {
				j++
			}
			if j == i {
				return nil, bad(fmt.Sprintf("expected a name at offset %d (names hold letters, digits, '_', '$' and '-')", i))
			}
			steps = append(steps, PathStep{Key: path[i:j]})
			i, needName = j, false
			continue
		}
		switch path[i] {
		case '.':
			i, needName = i+1, true
		case '[':
			j := i + 1
			for j < len(path) && path[j] >= '0' && path[j] <= '9' {
				j++
			}
			digits := path[i+1 : j]
			if j >= len(path) || path[j] != ']' || digits == "" {
				return nil, bad(fmt.Sprintf("expected [n] at offset %d", i))
			}
			if len(digits) > maxIndexDigits || len(digits) > 1 && digits[0] == '0' {
				return nil, bad(fmt.Sprintf("array index %s out of range", digits))
			}
			n, _ := strconv.Atoi(digits)
			steps = append(steps, PathStep{Index: n})
			i = j + 1
		default:
			return nil, bad(fmt.Sprintf("unexpected %q at offset %d", path[i], i))
		}
	}
	if needName {
		return nil, bad("ends with a dot")
	}
	return steps, nil
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '$' || c == '-'
}

// integerLike reports whether a member name could be read as an array
// index by PostgreSQL's #> operator.
func integerLike(key string) bool {
	k := strings.TrimPrefix(key, "-")
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < '0' || k[i] > '9' {
			return false
		}
	}
	return true
}

// Frag is a piece of SQL with "?" placeholders and the arguments they bind,
// in order.
type Frag struct {
	SQL  string
	Args []any
}

// JSONAccess holds SQL expressions over the record column of the records
// table for one field. Every fragment's text depends only on the shape of
// the path, never on its names: names and indices travel as arguments.
type JSONAccess struct {
	// Number is the field's value when it is a JSON number, else NULL; it
	// compares numerically with a "?::numeric" argument.
	Number Frag
	// String is the field's value when it is a JSON string, else NULL; it
	// compares bytewise with a "?::text" argument.
	String Frag
	// Bool is the field's value when it is a JSON boolean (TRUE or 1,
	// FALSE or 0), else NULL; it compares with a "?::boolean" argument.
	Bool Frag
	// Nullish is a condition that holds when the field is absent or JSON
	// null.
	Nullish Frag
}

// JSONDialect renders access to record fields.
type JSONDialect interface {
	// JSONField returns the expressions reading the field at path.
	JSONField(path []PathStep) JSONAccess
	// ILike is the operator matching a LIKE pattern while ignoring the
	// case of ASCII letters only (the negation is "NOT " + ILike()).
	ILike() string
	// Bytewise is appended to a text expression to order and compare it
	// bytewise ("" when text already compares so).
	Bytewise() string
	// PathText is the path in the dialect's own form, as JSONField binds
	// it: `$."a"[0]` on SQLite, `{"a","0"}` on PostgreSQL.
	PathText(path []PathStep) string
}

// SQLiteJSON is the JSONDialect of SQLite: json_type and json_extract on
// the record text, with the path (`$."a"[0]`) bound as an argument.
type SQLiteJSON struct{}

// PathText implements JSONDialect.
func (SQLiteJSON) PathText(path []PathStep) string {
	var b strings.Builder
	b.WriteByte('$')
	for _, s := range path {
		if s.Key != "" {
			b.WriteString(`."`)
			b.WriteString(s.Key) // names never hold quotes or backslashes
			b.WriteByte('"')
		} else {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(s.Index))
			b.WriteByte(']')
		}
	}
	return b.String()
}

// JSONField implements JSONDialect.
func (d SQLiteJSON) JSONField(path []PathStep) JSONAccess {
	p := d.PathText(path)
	return JSONAccess{
		Number:  Frag{`(CASE WHEN json_type(record, ?) IN ('integer', 'real') THEN json_extract(record, ?) END)`, []any{p, p}},
		String:  Frag{`(CASE WHEN json_type(record, ?) = 'text' THEN json_extract(record, ?) END)`, []any{p, p}},
		Bool:    Frag{`(CASE json_type(record, ?) WHEN 'true' THEN 1 WHEN 'false' THEN 0 END)`, []any{p}},
		Nullish: Frag{`(COALESCE(json_type(record, ?), 'null') = 'null')`, []any{p}},
	}
}

// ILike implements JSONDialect: SQLite's LIKE ignores ASCII case only.
func (SQLiteJSON) ILike() string { return "LIKE" }

// Bytewise implements JSONDialect: SQLite compares text with memcmp.
func (SQLiteJSON) Bytewise() string { return "" }

// PostgresJSON is the JSONDialect of PostgreSQL: #> and jsonb_typeof on the
// jsonb record, with the path bound as a text[] argument (in array literal
// form, so that no driver type is needed).
type PostgresJSON struct{}

// pgPath renders steps as a text[] literal: {"a","0"}.
func pgPath(steps []PathStep) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, s := range steps {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		if s.Key != "" {
			b.WriteString(s.Key)
		} else {
			b.WriteString(strconv.Itoa(s.Index))
		}
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

// PathText implements JSONDialect.
func (PostgresJSON) PathText(path []PathStep) string { return pgPath(path) }

// JSONField implements JSONDialect. #> reads a path element as an array
// index or an object key depending on the value it meets; where that could
// differ from the step's kind (an index, or a name like "0" or "-1"), the
// value's container type is checked so that names step into objects only
// and indices into arrays only, as in SQLite.
func (PostgresJSON) JSONField(path []PathStep) JSONAccess {
	var guards []string
	var guardArgs []any
	for i, s := range path {
		if i == 0 {
			continue // the record itself is an object
		}
		kind := ""
		switch {
		case s.Key == "":
			kind = "array"
		case integerLike(s.Key):
			kind = "object"
		default:
			continue
		}
		guards = append(guards, `jsonb_typeof(record #> ?::text[]) = '`+kind+`'`)
		guardArgs = append(guardArgs, pgPath(path[:i]))
	}
	v := Frag{`(record #> ?::text[])`, []any{pgPath(path)}}
	if len(guards) > 0 {
		v = Frag{`(CASE WHEN ` + strings.Join(guards, ` AND `) + ` THEN record #> ?::text[] END)`,
			append(guardArgs, pgPath(path))}
	}
	twice := append(append([]any{}, v.Args...), v.Args...)
	return JSONAccess{
		Number:  Frag{`(CASE WHEN jsonb_typeof(` + v.SQL + `) = 'number' THEN (` + v.SQL + `)::numeric END)`, twice},
		String:  Frag{`(CASE WHEN jsonb_typeof(` + v.SQL + `) = 'string' THEN ` + v.SQL + ` #>> '{}' END) COLLATE "C"`, twice},
		Bool:    Frag{`(CASE WHEN jsonb_typeof(` + v.SQL + `) = 'boolean' THEN (` + v.SQL + `)::boolean END)`, twice},
		Nullish: Frag{`(COALESCE(jsonb_typeof(` + v.SQL + `), 'null') = 'null')`, v.Args},
	}
}

// ILike implements JSONDialect: ILIKE on "C"-collated text folds ASCII
// letters only.
func (PostgresJSON) ILike() string { return "ILIKE" }

// Bytewise implements JSONDialect.
func (PostgresJSON) Bytewise() string { return ` COLLATE "C"` }
