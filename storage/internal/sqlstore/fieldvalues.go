package sqlstore

import (
	"strings"
)

// A value index keeps, per record of its collection, one entry in
// field_index_values: the field's sort group (grp: 0 number, 1 string, 2
// boolean, 3 anything else: absent, null, object or array, the groups of
// QueryRecords' field sort), its value (num for numbers and booleans, a
// boolean as 1 or 0; str for strings) and the record's created_at. The
// entries are computed with the very expressions of JSONDialect.JSONField
// that the unindexed filter and sort evaluate, with the path written into
// the SQL instead of bound: by the triggers on records (the migration
// 0030_field_indexes.sql, whose expressions TestFieldIndexTriggerSQL
// compares with these), and by the build (field_indexes.value_sql). So a
// query answered from the entries is answered as the scan would.

// fieldGroup returns the sort group of a field: the CASE expression that
// orders numbers, then strings, then booleans, then everything else.
func fieldGroup(a JSONAccess) Frag {
	var args []any
	var b strings.Builder
	b.WriteString(`CASE WHEN `)
	b.WriteString(a.Number.SQL)
	args = append(args, a.Number.Args...)
	b.WriteString(` IS NOT NULL THEN 0 WHEN `)
	b.WriteString(a.String.SQL)
	args = append(args, a.String.Args...)
	b.WriteString(` IS NOT NULL THEN 1 WHEN `)
	b.WriteString(a.Bool.SQL)
	args = append(args, a.Bool.Args...)
	b.WriteString(` IS NOT NULL THEN 2 ELSE 3 END`)
	return Frag{b.String(), args}
}

// fieldValueColumns returns the grp, num and str columns of a value index
// entry for a field, over the column named record.
func fieldValueColumns(a JSONAccess) Frag {
	g := fieldGroup(a)
	var b strings.Builder
	args := append([]any{}, g.Args...)
	b.WriteString(g.SQL)
	b.WriteString(`, COALESCE(`)
	b.WriteString(a.Number.SQL)
	args = append(args, a.Number.Args...)
	// A boolean's number: TRUE (1 on SQLite) is 1, FALSE (0) is 0.
	b.WriteString(`, CASE WHEN `)
	b.WriteString(a.Bool.SQL)
	args = append(args, a.Bool.Args...)
	b.WriteString(` THEN 1 WHEN NOT `)
	b.WriteString(a.Bool.SQL)
	args = append(args, a.Bool.Args...)
	b.WriteString(` THEN 0 END), `)
	b.WriteString(a.String.SQL)
	args = append(args, a.String.Args...)
	return Frag{b.String(), args}
}

// inlineFrag renders f with each argument written into the SQL by lit.
func inlineFrag(d Dialect, f Frag, lit func(arg any) string) string {
	return substitute(d, f.SQL, func(n int) string { return lit(f.Args[n-1]) })
}

// sqlString is a SQL string literal of s (which must hold no NUL).
func sqlString(s string) string {
	return `'` + strings.ReplaceAll(s, `'`, `''`) + `'`
}

// fieldValueSQL is field_indexes.value_sql: the grp, num and str columns
// of the field at path, over the column named record, with the path as
// literals. The build and, on PostgreSQL, the triggers evaluate it.
func fieldValueSQL(d Dialect, path []PathStep) string {
	return inlineFrag(d, fieldValueColumns(d.JSONField(path)), func(arg any) string {
		return sqlString(arg.(string))
	})
}

// FieldValueTriggerSQL is the grp, num and str columns of a value index
// entry over the column named record, with the field's path read from the
// column pathColumn (field_indexes.json_path): the form SQLite's triggers
// use, whose path varies with the index. Every argument of SQLite's
// JSONField is the path. (Exported for the test that compares it with the
// migration.)
func FieldValueTriggerSQL(d Dialect, pathColumn string) string {
	// The shape of the path does not change SQLite's SQL: any path does.
	return inlineFrag(d, fieldValueColumns(d.JSONField([]PathStep{{Key: "x"}})), func(any) string { return pathColumn })
}
