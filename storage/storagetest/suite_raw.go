package storagetest

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/storage"
)

// rawReadable are the relations scripts' raw SQL may read: the allow-list
// of storage/internal/sqlstore/rawpolicy.go. Every other table and view of
// the schema is refused (testRawRefusals walks them all).
var rawReadable = []string{"records", "record_tombstones", "lexicon_info"}

// rawCatalogs are system catalogs of either backend.
var rawCatalogs = []string{"sqlite_master", "sqlite_schema", "sqlite_temp_master", "temp.sqlite_master",
	"sqlite_sequence", "pg_catalog.pg_class", "pg_class", "pg_tables", "pg_roles", "pg_settings", "pg_stat_activity",
	"pg_proc", "information_schema.tables", "information_schema.columns", "pragma_table_info('records')"}

// ph returns the n-th placeholder of the store's SQL.
func ph(s storage.Store, n int) string {
	if s.Dialect() == "postgres" {
		return "$" + strconv.Itoa(n)
	}
	return "?"
}

func rawT(t *testing.T, s storage.Store, stmt string, args ...any) storage.RawResult {
	t.Helper()
	res, err := s.RawQuery(context.Background(), stmt, args, 100, 0)
	if err != nil {
		t.Fatalf("RawQuery(%s): %v", stmt, err)
	}
	return res
}

func testRawReads(t *testing.T, s storage.Store) {
	ctx := context.Background()
	queryFixture(t, s)
	res := rawT(t, s, `SELECT rkey, did FROM records WHERE collection = `+ph(s, 1)+` AND rkey < `+ph(s, 2)+` ORDER BY rkey`,
		queryCollection, "r03")
	if !slices.Equal(res.Columns, []string{"rkey", "did"}) || len(res.Rows) != 2 ||
		!slices.Equal(res.Rows[0], []any{"r01", "did:plc:alice"}) || !slices.Equal(res.Rows[1], []any{"r02", "did:plc:bob"}) {
		t.Fatalf("rows: %+v", res)
	}
	res = rawT(t, s, `SELECT COUNT(*) AS n, 2.5 AS f, 'x' AS s, NULL AS z FROM records WHERE collection = `+ph(s, 1)+`;`, queryCollection)
	if !slices.Equal(res.Columns, []string{"n", "f", "s", "z"}) || len(res.Rows) != 1 ||
		!slices.Equal(res.Rows[0], []any{int64(8), 2.5, "x", nil}) {
		t.Fatalf("types: %#v", res.Rows)
	}
	res, err := s.RawQuery(ctx, `SELECT uri FROM records ORDER BY uri`, nil, 3, 0)
	if err != nil || len(res.Rows) != 3 {
		t.Fatalf("maxRows: %d rows, %v", len(res.Rows), err)
	}
	res = rawT(t, s, `WITH x AS (SELECT rkey FROM records WHERE collection = `+ph(s, 1)+`) SELECT COUNT(*) FROM x`, queryCollection)
	if res.Rows[0][0] != int64(8) {
		t.Fatalf("with: %v", res.Rows)
	}
	for _, table := range rawReadable {
		if _, err := s.RawQuery(ctx, `SELECT * FROM `+table, nil, 10, 0); err != nil {
			t.Errorf("read %s: %v", table, err)
		}
	}
	// lexicon_info: the lexicons without their scripts, hooks and documents.
	lex := storage.Lexicon{ID: "app.test.q", Type: "query", JSON: json.RawMessage(`{"lexicon":1,"id":"app.test.q"}`),
		TargetCollection: queryCollection, Script: "-- secret", IndexHook: "-- secret"}
	if _, _, err := s.PutLexicon(ctx, lex); err != nil {
		t.Fatal(err)
	}
	res = rawT(t, s, `SELECT * FROM lexicon_info`)
	if !slices.Equal(res.Columns, []string{"id", "lexicon_type", "target_collection", "revision", "backfill", "created_at", "updated_at"}) ||
		len(res.Rows) != 1 || res.Rows[0][0] != lex.ID || res.Rows[0][2] != queryCollection {
		t.Fatalf("lexicon_info: %v %v", res.Columns, res.Rows)
	}
	// Joins, subqueries, CTEs and table functions over allowed relations.
	each := `SELECT COUNT(*) FROM records r, json_each(r.record, '$.tags') j WHERE r.collection = ` + ph(s, 1)
	if s.Dialect() == "postgres" {
		each = `SELECT COUNT(*) FROM records r CROSS JOIN LATERAL jsonb_array_elements(r.record->'tags') j WHERE r.collection = ` + ph(s, 1)
	}
	if res := rawT(t, s, each, queryCollection); res.Rows[0][0] != int64(3) {
		t.Fatalf("table function: %v", res.Rows)
	}
	res = rawT(t, s, `WITH c AS (SELECT collection FROM records) SELECT l.id, COUNT(*) FROM lexicon_info l
		JOIN c ON c.collection = l.target_collection LEFT JOIN record_tombstones t ON t.uri = l.id
		WHERE l.id IN (SELECT id FROM lexicon_info) GROUP BY l.id`)
	if len(res.Rows) != 1 || res.Rows[0][1] != int64(8) {
		t.Fatalf("join: %v", res.Rows)
	}
}

// testRawRefusals: every table and view of the schema but the allowed
// ones, every system catalog, and every statement but one SELECT, WITH,
// INSERT, UPDATE or DELETE, is refused, however it is spelt (security
// finding 9: db.raw could read other lexicons' scripts).
func testRawRefusals(t *testing.T, s storage.Store) {
	ctx := context.Background()
	const secret = "operator-inline-secret"
	if _, _, err := s.PutLexicon(ctx, storage.Lexicon{ID: "app.test.q", Type: "query",
		JSON: json.RawMessage(`{"lexicon":1,"id":"app.test.q"}`), Script: `local key = "` + secret + `"`}); err != nil {
		t.Fatal(err)
	}
	refused := func(stmt string) {
		t.Helper()
		res, err := s.RawQuery(ctx, stmt, nil, 10, 0)
		if !errors.Is(err, storage.ErrInvalidQuery) || !strings.Contains(err.Error(), "raw SQL refused") {
			t.Errorf("%s: %v, want a refusal", stmt, err)
		}
		if strings.Contains(fmt.Sprint(res.Rows), secret) {
			t.Errorf("%s: read the secret: %v", stmt, res.Rows)
		}
	}
	qualifier := "main."
	if s.Dialect() == "postgres" {
		qualifier = "public."
	}
	for _, table := range schemaRelations(t, s) {
		if slices.Contains(rawReadable, table) || strings.HasPrefix(table, "sqlite_") {
			continue
		}
		for _, name := range []string{table, strings.ToUpper(table), `"` + table + `"`, "'" + table + "'",
			qualifier + table, "/**/" + table, "records, " + table, "records r JOIN " + table + " x ON true",
			"(" + table + ")", "(SELECT * FROM " + table + ") x"} {
			refused(`SELECT * FROM ` + name)
		}
		refused(`SELECT COUNT(*) FROM records WHERE uri IN (SELECT id FROM ` + table + `)`)
		refused(`WITH x AS (SELECT * FROM ` + table + `) SELECT * FROM x`)
		refused(`SELECT uri FROM records UNION SELECT id FROM ` + table)
		refused(`DELETE FROM ` + table)
		refused(`UPDATE records SET cid = (SELECT MAX(id) FROM ` + table + `)`)
	}
	for _, cat := range rawCatalogs {
		refused(`SELECT * FROM ` + cat)
	}
	for _, stmt := range []string{
		`SELECT script FROM lexicons`,
		`SELECT script, index_hook FROM "lexicons"`,
		`SELECT id FROM lexicons -- FROM records`,
		`SELECT (SELECT script FROM lexicons LIMIT 1) FROM records`,
		`SELECT * FROM records WHERE uri IN (SELECT script FROM lexicons)`,
		`WITH l AS (SELECT script AS uri FROM lexicons) SELECT uri FROM l`,
		`WITH lexicon_info AS (SELECT * FROM lexicons) SELECT * FROM lexicon_info`,
		`SELECT 1; SELECT 2`,
		`SELECT 1; DELETE FROM records`,
		`PRAGMA query_only = 0`,
		`ATTACH DATABASE 'x.db' AS x`,
		`CREATE TABLE x (a TEXT)`,
		`DROP TABLE records`,
		`ALTER TABLE records ADD COLUMN x TEXT`,
		`VACUUM`,
		`SET search_path = public`,
		`SET ROLE postgres`,
		`COPY records TO '/tmp/records'`,
		`BEGIN`,
		`SELECT load_extension('x')`,
		`SELECT readfile('/etc/passwd')`,
		`SELECT pg_read_file('/etc/passwd')`,
		`SELECT lo_import('/etc/passwd')`,
		`SELECT dblink('dbname=x', 'select 1')`,
		`SELECT pg_sleep(1)`,
		`SELECT current_setting('data_directory')`,
		`SELECT set_config('role', 'none', true)`,
		`SELECT query_to_xml('select script from lexicons', true, true, '')`,
		`INSERT INTO lexicons (id) VALUES ('x')`,
		`INSERT INTO record_tombstones (uri) VALUES ('x')`,
		`UPDATE dead_letters SET error = 'x'`,
		`DELETE FROM stream_cursors`,
		`DELETE FROM backfill_jobs`,
		`UPDATE records SET cid = (SELECT id FROM lexicons LIMIT 1)`,
		`WITH x AS (DELETE FROM records RETURNING uri) SELECT * FROM x`,
	} {
		refused(stmt)
	}
}

// schemaRelations lists the tables and views of the store's database,
// through the store's reader pool.
func schemaRelations(t *testing.T, s storage.Store) []string {
	t.Helper()
	r, ok := s.(interface{ Reader() *sql.DB })
	if !ok {
		t.Fatalf("store %T exposes no Reader", s)
	}
	q := `SELECT name FROM sqlite_master WHERE type IN ('table', 'view')`
	if s.Dialect() == "postgres" {
		q = `SELECT tablename FROM pg_tables WHERE schemaname = current_schema()
			UNION SELECT viewname FROM pg_views WHERE schemaname = current_schema()`
	}
	rows, err := r.Reader().QueryContext(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		out = append(out, name)
	}
	if len(out) < 10 || !slices.Contains(out, "lexicons") || !slices.Contains(out, "lexicon_info") {
		t.Fatalf("schema relations: %v", out)
	}
	return out
}

func testRawWrites(t *testing.T, s storage.Store) {
	ctx := context.Background()
	fx := queryFixture(t, s)
	res := rawT(t, s, `UPDATE records SET cid = `+ph(s, 1)+` WHERE uri = `+ph(s, 2), "bafyraw", fx["r01"].URI)
	if res.Affected != 1 || len(res.Rows) != 0 {
		t.Fatalf("update: %+v", res)
	}
	if r, err := s.GetRecord(ctx, fx["r01"].URI); err != nil || r.CID != "bafyraw" {
		t.Fatalf("after update: %+v %v", r, err)
	}
	res = rawT(t, s, `DELETE FROM records WHERE collection = `+ph(s, 1)+` AND did = `+ph(s, 2), queryCollection, "did:plc:bob")
	if res.Affected != 4 {
		t.Fatalf("delete: %+v", res)
	}
	if n := count(t, s, queryCollection); n != 4 {
		t.Fatalf("%d records left", n)
	}
	// A read never writes, whatever it calls.
	if _, err := s.RawQuery(ctx, `SELECT * FROM records WHERE uri IN (SELECT uri FROM records) FOR UPDATE`, nil, 10, 0); err == nil {
		t.Fatal("SELECT FOR UPDATE accepted")
	}
}

func testRawDeadline(t *testing.T, s storage.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := s.RawQuery(ctx, `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT COUNT(*) FROM c`, nil, 10, 0)
	if err == nil {
		t.Fatal("endless query returned")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("deadline ignored: %v", d)
	}
	if errors.Is(err, storage.ErrInvalidQuery) {
		t.Fatalf("refused instead of run: %v", err)
	}
	t.Logf("stopped after %v: %v", time.Since(start).Round(time.Millisecond), err)
}

// testRawMaxBytes: RawQuery stops reading once the rows pass maxBytes
// (strings and bytes by their length, other values 8 bytes, nil nothing)
// and fails with ErrRawTooLarge; a result within the bound, or with no
// bound, comes back whole.
func testRawMaxBytes(t *testing.T, s storage.Store) {
	ctx := context.Background()
	stmt := `SELECT CAST(` + ph(s, 1) + ` AS TEXT) AS s, 7 AS n, NULL AS z UNION ALL SELECT CAST(` + ph(s, 2) + ` AS TEXT), 8, NULL`
	args := []any{strings.Repeat("a", 1000), strings.Repeat("b", 2000)}
	for _, tc := range []struct {
		maxBytes int64
		ok       bool
	}{{0, true}, {-1, true}, {3016, true}, {1 << 20, true}, {3015, false}, {1008, false}, {999, false}, {1, false}} {
		res, err := s.RawQuery(ctx, stmt, args, 10, tc.maxBytes)
		switch {
		case tc.ok && (err != nil || len(res.Rows) != 2 || res.Rows[1][0] != args[1]):
			t.Fatalf("maxBytes %d: %+v %v", tc.maxBytes, res.Rows, err)
		case !tc.ok && !errors.Is(err, storage.ErrRawTooLarge):
			t.Fatalf("maxBytes %d: %d rows, %v", tc.maxBytes, len(res.Rows), err)
		case !tc.ok && errors.Is(err, storage.ErrInvalidQuery):
			t.Fatalf("maxBytes %d: %v", tc.maxBytes, err)
		}
	}
	// Rows past maxRows are not read, so they do not count.
	if res, err := s.RawQuery(ctx, stmt, args, 1, 1008); err != nil || len(res.Rows) != 1 {
		t.Fatalf("first row only: %+v %v", res.Rows, err)
	}
	// A write counts nothing.
	if _, err := s.RawQuery(ctx, `DELETE FROM records WHERE uri = `+ph(s, 1), []any{"at://none"}, 10, 1); err != nil {
		t.Fatal(err)
	}
}
