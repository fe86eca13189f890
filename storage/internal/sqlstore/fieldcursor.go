package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lexview/lexview/storage"
)

// fieldKey is a record's position in a field sort: the field's sort
// group, its value (num for groups 0 and 2, str for group 1, none for 3)
// and the record's URI. Field-sorted pages continue after the key of
// their last record (keyset pagination), whether an index or a scan
// answers them.
type fieldKey struct {
	grp int
	// num is an int64 or float64 (SQLite), or the text of a numeric
	// (PostgreSQL); a boolean is 1 or 0.
	num any
	str string
	uri string
}

// maxInlineKey bounds the value a cursor carries; the cursor of a record
// with a longer value names the record only, and the value is read again
// from it (lookupKey).
const maxInlineKey = 512

// scanFieldKey builds a key from the grp, num and str columns of a row
// (fieldValueColumns, or an entry's).
func scanFieldKey(grp int64, num any, str sql.NullString, uri string) (fieldKey, error) {
	k := fieldKey{grp: int(grp), str: str.String, uri: uri}
	switch x := num.(type) {
	case nil, int64, float64:
		k.num = x
	case []byte:
		k.num = string(x)
	case string:
		k.num = x
	default:
		return k, fmt.Errorf("sort key of type %T", num)
	}
	return k, nil
}

// position encodes the key in a cursor position: Time carries the group
// (as microseconds), URI the record's URI, a NUL (which no URI holds) and
// the value: a tag ('i' integer, 'f' float, 'n' numeric text, 's' string,
// 'u' to be read from the record) and its text.
func (k fieldKey) position() storage.Position {
	val := ""
	switch k.grp {
	case 0, 2:
		switch x := k.num.(type) {
		case int64:
			val = "i" + strconv.FormatInt(x, 10)
		case float64:
			val = "f" + strconv.FormatFloat(x, 'g', -1, 64)
		case string:
			val = "n" + x
		}
	case 1:
		val = "s" + k.str
	}
	if len(val) > maxInlineKey || !utf8.ValidString(val) {
		val = "u"
	}
	return storage.Position{Time: time.UnixMicro(int64(k.grp)), URI: k.uri + "\x00" + val}
}

// parseFieldKey decodes a position made by fieldKey.position. lookup
// reports a key whose value must be read from its record.
func parseFieldKey(pos storage.Position) (k fieldKey, lookup bool, err error) {
	g := pos.Time.UnixMicro()
	uri, val, ok := strings.Cut(pos.URI, "\x00")
	if !ok || uri == "" || g < 0 || g > 3 {
		return k, false, badCursor()
	}
	k = fieldKey{grp: int(g), uri: uri}
	if val == "u" {
		return k, true, nil
	}
	tag, text := "", ""
	if val != "" {
		tag, text = val[:1], val[1:]
	}
	switch {
	case k.grp == 3 && val == "":
		return k, false, nil
	case k.grp == 1 && tag == "s":
		k.str = text
		return k, false, nil
	case (k.grp == 0 || k.grp == 2) && tag == "i":
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil || k.grp == 2 && n != 0 && n != 1 {
			return k, false, badCursor()
		}
		k.num = n
		return k, false, nil
	case k.grp == 0 && tag == "f":
		f, err := strconv.ParseFloat(text, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return k, false, badCursor()
		}
		k.num = f
		return k, false, nil
	case (k.grp == 0 || k.grp == 2) && tag == "n" && numericText(text):
		k.num = text
		return k, false, nil
	}
	return k, false, badCursor()
}

// numericText reports whether s is a numeric as PostgreSQL writes one:
// an optional minus, digits, and optionally a point and digits.
func numericText(s string) bool {
	s = strings.TrimPrefix(s, "-")
	whole, frac, dot := strings.Cut(s, ".")
	digits := func(d string) bool {
		if d == "" || len(d) > 1000 {
			return false
		}
		for i := 0; i < len(d); i++ {
			if d[i] < '0' || d[i] > '9' {
				return false
			}
		}
		return true
	}
	return digits(whole) && (!dot || digits(frac))
}

// truthy reports whether a group-2 key's num is true (1).
func (k fieldKey) truthy() bool {
	switch x := k.num.(type) {
	case int64:
		return x == 1
	case float64:
		return x == 1
	case string:
		return x == "1"
	}
	return false
}

// lookupKey reads the key of the record at k.uri for the field at path.
func (db *DB) lookupKey(ctx context.Context, path []PathStep, k fieldKey) (fieldKey, error) {
	cols := fieldValueColumns(db.dialect.JSONField(path))
	var grp int64
	var num any
	var str sql.NullString
	err := db.reader.QueryRowContext(ctx, Bind(db.dialect, `SELECT `+cols.SQL+` FROM records WHERE uri = ?`),
		append(cols.Args, k.uri)...).Scan(&grp, &num, &str)
	if errors.Is(err, sql.ErrNoRows) {
		return k, badCursor() // the record is gone, and its value with it
	}
	if err != nil {
		return k, fmt.Errorf("query records: %w", err)
	}
	got, err := scanFieldKey(grp, num, str, k.uri)
	if err != nil || got.grp != k.grp {
		return k, badCursor()
	}
	return got, nil
}

// keysetIndexed is the condition of a branch of an indexed field sort
// (the entries of group k.grp, alias v) that continues after k; cmp is
// "<" (descending) or ">".
func keysetIndexed(k fieldKey, cmp string, w *where) {
	switch k.grp {
	case 1:
		w.add(`(v.str, v.rec_uri) `+cmp+` (?::text, ?)`, k.str, k.uri)
	case 3:
		w.add(`v.rec_uri `+cmp+` ?`, k.uri)
	default:
		w.add(`(v.num, v.rec_uri) `+cmp+` (?::numeric, ?)`, k.num, k.uri)
	}
}

// keysetScan is the condition, on the records' JSON, that continues a
// field sort after k: a later group, or the same group and a value (then
// URI) further in the order. Groups always ascend.
func keysetScan(d Dialect, field JSONAccess, k fieldKey, cmp string, w *where) {
	g := fieldGroup(field)
	uri := `uri` + d.Bytewise()
	args := append([]any{}, g.Args...)
	group := strconv.Itoa(k.grp)
	if k.grp == 3 {
		w.add(`(`+g.SQL+`) = 3 AND `+uri+` `+cmp+` ?`, append(args, k.uri)...)
		return
	}
	var v Frag
	var arg any
	cast := ""
	switch k.grp {
	case 0:
		v, arg, cast = field.Number, k.num, "?::numeric"
	case 1:
		v, arg, cast = field.String, k.str, "?::text"
	case 2:
		v, arg, cast = field.Bool, k.truthy(), "?::boolean"
	}
	args = append(args, g.Args...)
	args = append(args, v.Args...)
	args = append(args, arg)
	args = append(args, v.Args...)
	args = append(args, arg, k.uri)
	w.add(`((`+g.SQL+`) > `+group+` OR (`+g.SQL+`) = `+group+` AND (`+v.SQL+` `+cmp+` `+cast+` OR `+v.SQL+` = `+cast+` AND `+uri+` `+cmp+` ?))`, args...)
}
