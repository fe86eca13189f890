package storagetest

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/storage"
)

// Raw SQL access by table. Every table of the schema must appear in one of
// these lists (testRawRefusals checks it), and the guard in
// storage/internal/sqlstore/rawguard.go must agree.
var (
	// rawReadable tables hold nothing secret.
	rawReadable = []string{"records", "record_tombstones", "lexicons", "stream_cursors", "backfill_jobs",
		"backfill_repos", "dead_letters", "schema_migrations"}
	// rawSensitive tables hold credentials, secrets, sessions,
	// configuration or script inputs.
	rawSensitive = []string{"admin_users", "admin_api_keys", "api_clients", "client_auth_keys", "device_sessions",
		"dpop_provisions", "event_log", "settings", "setting_blobs", "scripts", "script_variables"}
	// rawCatalogs are system catalogs of either backend.
	rawCatalogs = []string{"sqlite_master", "sqlite_schema", "sqlite_temp_master", "temp.sqlite_master",
		"sqlite_sequence", "pg_catalog.pg_class", "pg_class", "pg_tables", "pg_roles", "pg_settings", "pg_stat_activity",
		"information_schema.tables", "information_schema.columns", "pragma_table_info('records')"}
)

// ph returns the n-th placeholder of the store's SQL.
func ph(s storage.Store, n int) string {
	if s.Dialect() == "postgres" {
		return "$" + strconv.Itoa(n)
	}
	return "?"
}

func rawT(t *testing.T, s storage.Store, stmt string, args ...any) storage.RawResult {
	t.Helper()
	res, err := s.RawQuery(context.Background(), stmt, args, 100)
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
	res, err := s.RawQuery(ctx, `SELECT uri FROM records ORDER BY uri`, nil, 3)
	if err != nil || len(res.Rows) != 3 {
		t.Fatalf("maxRows: %d rows, %v", len(res.Rows), err)
	}
	res = rawT(t, s, `WITH x AS (SELECT rkey FROM records WHERE collection = `+ph(s, 1)+`) SELECT COUNT(*) FROM x`, queryCollection)
	if res.Rows[0][0] != int64(8) {
		t.Fatalf("with: %v", res.Rows)
	}
	if _, err := s.AddDeadLetter(ctx, deadLetter("app.test.a", "x", base)); err != nil {
		t.Fatal(err)
	}
	for _, table := range rawReadable {
		if _, err := s.RawQuery(ctx, `SELECT * FROM `+table, nil, 10); err != nil {
			t.Errorf("read %s: %v", table, err)
		}
	}
	res = rawT(t, s, `SELECT error, record FROM dead_letters`)
	if len(res.Rows) != 1 || res.Rows[0][0] != "script error: boom" || !strings.Contains(res.Rows[0][1].(string), `"text"`) {
		t.Fatalf("dead letters: %#v", res.Rows)
	}
}

// schemaTables lists the tables of the store's database, through the
// store's reader pool.
func schemaTables(t *testing.T, s storage.Store) []string {
	t.Helper()
	r, ok := s.(interface{ Reader() *sql.DB })
	if !ok {
		t.Fatalf("store %T exposes no Reader", s)
	}
	q := `SELECT name FROM sqlite_master WHERE type = 'table'`
	if s.Dialect() == "postgres" {
		q = `SELECT tablename FROM pg_tables WHERE schemaname = current_schema()`
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
	return out
}

func testRawRefusals(t *testing.T, s storage.Store) {
	ctx := context.Background()
	refused := func(stmt string) {
		t.Helper()
		_, err := s.RawQuery(ctx, stmt, nil, 10)
		if !errors.Is(err, storage.ErrInvalidQuery) {
			t.Errorf("%s: %v, want ErrInvalidQuery", stmt, err)
		}
	}
	for _, table := range schemaTables(t, s) {
		if !slices.Contains(rawReadable, table) && !slices.Contains(rawSensitive, table) && !strings.HasPrefix(table, "sqlite_") {
			t.Errorf("table %s is not classified for raw SQL: add it to storagetest/suite_raw.go and sqlstore/rawguard.go", table)
		}
	}
	for _, table := range rawSensitive {
		for _, name := range []string{table, strings.ToUpper(table), `"` + table + `"`, "'" + table + "'"} {
			refused(`SELECT * FROM ` + name)
		}
		refused(`SELECT COUNT(*) FROM records WHERE uri IN (SELECT id FROM ` + table + `)`)
		refused(`DELETE FROM ` + table)
	}
	for _, cat := range rawCatalogs {
		refused(`SELECT * FROM ` + cat)
	}
	for _, stmt := range []string{
		`SELECT 1; SELECT 2`,
		`SELECT 1; DELETE FROM records`,
		`PRAGMA query_only = 0`,
		`ATTACH DATABASE 'x.db' AS x`,
		`CREATE TABLE x (a TEXT)`,
		`DROP TABLE records`,
		`ALTER TABLE records ADD COLUMN x TEXT`,
		`VACUUM`,
		`SET search_path = public`,
		`COPY records TO '/tmp/records'`,
		`BEGIN`,
		`SELECT load_extension('x')`,
		`SELECT readfile('/etc/passwd')`,
		`SELECT pg_read_file('/etc/passwd')`,
		`SELECT pg_sleep(1)`,
		`SELECT current_setting('data_directory')`,
		`SELECT query_to_xml('select * from settings', true, true, '')`,
		`INSERT INTO lexicons (id) VALUES ('x')`,
		`UPDATE dead_letters SET error = 'x'`,
		`DELETE FROM stream_cursors`,
		`DELETE FROM backfill_jobs`,
		`UPDATE records SET cid = (SELECT id FROM lexicons LIMIT 1)`,
		`WITH x AS (DELETE FROM records RETURNING uri) SELECT * FROM x`,
	} {
		refused(stmt)
	}
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
	if _, err := s.RawQuery(ctx, `SELECT * FROM records WHERE uri IN (SELECT uri FROM records) FOR UPDATE`, nil, 10); err == nil {
		t.Fatal("SELECT FOR UPDATE accepted")
	}
}

func testRawDeadline(t *testing.T, s storage.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := s.RawQuery(ctx, `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT COUNT(*) FROM c`, nil, 10)
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
