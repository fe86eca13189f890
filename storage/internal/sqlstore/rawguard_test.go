package sqlstore

import (
	"errors"
	"strings"
	"testing"

	"github.com/lexview/lexview/storage"
)

var syntaxes = map[string]Syntax{"sqlite": SyntaxSQLite, "postgres": SyntaxPostgres}

func TestGuardAccepts(t *testing.T) {
	cases := []struct {
		sql   string
		write bool
		only  string // "" for both syntaxes
	}{
		{sql: `SELECT uri, record FROM records WHERE collection = ? LIMIT 10`},
		{sql: `select count(*) from records;`},
		{sql: "  SELECT 1 ; \n -- trailing comment"},
		{sql: `WITH r AS (SELECT * FROM records) SELECT r.uri FROM r JOIN lexicon_info l ON l.id = r.collection`},
		{sql: `SELECT * FROM records r, record_tombstones t, lexicon_info l`},
		{sql: `SELECT * FROM records WHERE rkey = 'settings' OR rkey = 'lexicons'`},
		{sql: `SELECT * FROM (SELECT uri FROM records) s, (records r JOIN record_tombstones t USING (uri))`},
		{sql: `SELECT * FROM ((records r JOIN record_tombstones t ON r.uri = t.uri)), lexicon_info`},
		{sql: `SELECT * FROM records WHERE uri IN (SELECT uri FROM record_tombstones) AND rev IS NOT DISTINCT FROM cid`},
		{sql: `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3) SELECT COUNT(*) FROM c`},
		{sql: `WITH a AS (SELECT uri FROM records), b AS NOT MATERIALIZED (SELECT * FROM a) SELECT * FROM b, a`},
		{sql: `SELECT (SELECT count(*) FROM (WITH x AS (SELECT 1) SELECT * FROM x) y) FROM records`},
		{sql: `SELECT a.uri FROM records a JOIN records b ON a.did = b.did, record_tombstones t GROUP BY a.uri, b.uri ORDER BY a.uri, 1`},
		{sql: `SELECT j.value FROM records r, json_each(r.record, '$.tags') AS j WHERE j.value IN records`, only: "sqlite"},
		{sql: `SELECT uri FROM records LIMIT 1, 2`, only: "sqlite"},
		{sql: `SELECT e FROM records r CROSS JOIN LATERAL jsonb_array_elements(r.record->'tags') e`, only: "postgres"},
		{sql: `SELECT x FROM records, unnest($1::text[]) WITH ORDINALITY AS t(x, n), "records" q`, only: "postgres"},
		{sql: `SELECT trim(both 'x' FROM uri), substring(uri FROM 1 FOR 2), overlay(uri placing 'y' from 1) FROM records`, only: "postgres"},
		{sql: `SELECT 'settings are nice; DROP TABLE x' AS s, "uri" FROM records -- FROM settings`},
		{sql: `SELECT /* settings */ 1`},
		{sql: `SELECT $$FROM settings; DROP$$, $t$ pg_catalog $t$, $1 FROM records`, only: "postgres"},
		{sql: `SELECT E'it\'s FROM settings', 'a''b'`, only: "postgres"},
		{sql: `SELECT /* outer /* inner */ still comment: FROM settings */ 1`, only: "postgres"},
		{sql: `SELECT [uri], ` + "`did`" + ` FROM records`, only: "sqlite"},
		{sql: `SELECT extract(epoch FROM indexed_at) FROM records`},
		{sql: `INSERT INTO records (uri, did, collection, rkey, cid, record, indexed_at) VALUES (?, ?, ?, ?, ?, ?, ?)`, write: true},
		{sql: `INSERT OR REPLACE INTO "records" (uri) VALUES (?)`, write: true, only: "sqlite"},
		{sql: `insert into records (uri) values ($1) on conflict (uri) do update set cid = excluded.cid, rev = excluded.rev`, write: true},
		{sql: `UPDATE records SET cid = ? WHERE uri IN (SELECT uri FROM records WHERE did = ?)`, write: true},
		{sql: `UPDATE OR IGNORE records SET cid = ?`, write: true, only: "sqlite"},
		{sql: `DELETE FROM records WHERE uri = ? AND rev IS DISTINCT FROM ?;`, write: true},
		{sql: `DELETE FROM ONLY records WHERE substring(uri FROM 1 FOR 5) = $1`, write: true, only: "postgres"},
		{sql: `INSERT INTO records (uri) SELECT value FROM json_each(?)`, write: true, only: "sqlite"},
		{sql: `SELECT * FROM records WHERE uri = :uri AND did = $did AND cid = @c AND rev = ?2`, only: "sqlite"},
		{sql: `SELECT "séttings", 'é' -- é`},
		{sql: "SELECT E'a'\n'b\\'c'", only: "postgres"},
	}
	for _, tc := range cases {
		for name, syn := range syntaxes {
			if tc.only != "" && tc.only != name {
				continue
			}
			write, err := guardRaw(tc.sql, syn)
			if err != nil || write != tc.write {
				t.Errorf("%s: %q: write=%v err=%v, want write=%v", name, tc.sql, write, err, tc.write)
			}
		}
	}
}

func TestGuardRefuses(t *testing.T) {
	cases := []struct {
		sql, reason string
		only        string
	}{
		{`SELECT 1; SELECT 2`, "only one statement", ""},
		{`SELECT 1;;`, "only one statement", ""},
		{`;`, "empty", ""},
		{`   -- nothing`, "empty", ""},
		{`(SELECT 1)`, "must start with", ""},
		{`PRAGMA query_only = 0`, "PRAGMA statements", ""},
		{`ATTACH DATABASE '/tmp/x' AS x`, "ATTACH", ""},
		{`VACUUM`, "VACUUM", ""},
		{`CREATE TABLE x (a)`, "CREATE", ""},
		{`DROP TABLE records`, "DROP", ""},
		{`ALTER TABLE records ADD COLUMN x`, "ALTER", ""},
		{`COPY records TO '/tmp/x'`, "COPY", ""},
		{`SET search_path = x`, "SET", ""},
		{`GRANT ALL ON records TO public`, "GRANT", ""},
		{`BEGIN`, "BEGIN", ""},
		{`REPLACE INTO records VALUES (1)`, "REPLACE", ""},
		{`EXPLAIN SELECT 1`, "EXPLAIN", ""},
		{`SELECT * FROM settings`, "table settings", ""},
		{`SELECT * FROM "Admin_API_Keys"`, "admin_api_keys", ""},
		{`SELECT * FROM main.script_variables`, "script_variables", ""},
		{`SELECT * FROM records r JOIN device_sessions s ON 1`, "device_sessions", ""},
		{`SELECT sealed_key FROM DPOP_PROVISIONS`, "dpop_provisions", ""},
		{`SELECT * FROM client_auth_keys`, "client_auth_keys", ""},
		{`SELECT * FROM api_clients`, "api_clients", ""},
		{`SELECT * FROM admin_users`, "admin_users", ""},
		{`SELECT * FROM event_log`, "event_log", ""},
		{`SELECT * FROM setting_blobs`, "setting_blobs", ""},
		{`SELECT source FROM scripts`, "scripts", ""},
		{`SELECT * FROM 'settings'`, "settings", ""},
		{`SELECT * FROM 'records'`, "identifier", ""},
		{`SELECT * FROM records r, ?`, "identifier", "sqlite"},
		{`SELECT * FROM records r, $1`, "identifier", "postgres"},
		{`SELECT * FROM lexicons`, "lexicons", ""},
		{`SELECT id, script FROM "LEXICONS"`, "lexicons", ""},
		{`SELECT * FROM secrets`, "secrets is not a relation", ""},
		{`SELECT * FROM records, secrets`, "secrets is not a relation", ""},
		{`SELECT * FROM records r JOIN (secrets) s ON true`, "secrets is not", ""},
		{`SELECT * FROM (secrets JOIN records ON true)`, "secrets is not", ""},
		{`SELECT * FROM ((SELECT 1) x JOIN records ON true), (((secrets)))`, "secrets is not", ""},
		{`SELECT * FROM records r JOIN records q ON r.uri = q.uri, secrets`, "secrets is not", ""},
		{`SELECT * FROM records LIMIT (SELECT count(*) FROM secrets)`, "secrets is not", ""},
		{`SELECT DISTINCT (SELECT x FROM secrets) FROM records`, "secrets is not", ""},
		{`SELECT DISTINCT FROM secrets`, "secrets is not", "postgres"},
		{`SELECT * FROM records WHERE uri IS DISTINCT FROM (SELECT x FROM secrets)`, "secrets is not", ""},
		{`SELECT extract(epoch FROM (SELECT max(t) FROM secrets))`, "secrets is not", ""},
		{`WITH secrets AS (SELECT * FROM secrets) SELECT * FROM secrets`, "secrets is not", ""},
		{`SELECT * FROM (WITH s AS (SELECT 1) SELECT 1) a, s`, "s is not", ""},
		{`WITH "S" AS (SELECT 1) SELECT * FROM s`, "s is not", "postgres"},
		{`SELECT * FROM records UNION TABLE secrets`, "secrets is not", "postgres"},
		{`SELECT * FROM records WHERE 'a' IN secrets`, "secrets is not", "sqlite"},
		{`SELECT * FROM "Records"`, "Records is not", "postgres"},
		{`SELECT * FROM records r, secret_fn(1)`, "secret_fn is not a table function", ""},
		{`SELECT * FROM records r, "unnest"(1)`, "unnest is not a table function", ""},
		{`SELECT current_user`, "current_user", ""},
		{`SELECT set_config('role', 'x', true)`, "set_config", ""},
		{`DELETE FROM record_tombstones`, "only change the records table, not record_tombstones", ""},
		{`INSERT INTO record_tombstones (uri) VALUES (?)`, "only change the records table, not record_tombstones", ""},
		{`UPDATE lexicon_info SET id = 'x'`, "only change the records table, not lexicon_info", ""},
		{`INSERT INTO (SELECT 1) VALUES (1)`, "only change the records table", ""},
		{`SELECT * FROM [settings]`, "settings", "sqlite"},
		{"SELECT * FROM `settings`", "settings", "sqlite"},
		{`SELECT * FROM sqlite_master`, "sqlite_master", ""},
		{`SELECT * FROM sqlite_schema`, "sqlite_schema", ""},
		{`SELECT * FROM temp.sqlite_temp_master`, "sqlite_temp_master", ""},
		{`SELECT * FROM pragma_table_info('records')`, "pragma_table_info", ""},
		{`SELECT load_extension('x')`, "load_extension", ""},
		{`SELECT readfile('/etc/passwd')`, "readfile", ""},
		{`SELECT writefile('/tmp/x', 'y')`, "writefile", ""},
		{`SELECT * FROM pg_catalog.pg_tables`, "pg_catalog", ""},
		{`SELECT * FROM information_schema.tables`, "information_schema", ""},
		{`SELECT * FROM pg_shadow`, "pg_shadow", ""},
		{`SELECT pg_read_file('/etc/passwd')`, "pg_read_file", ""},
		{`SELECT pg_ls_dir('.')`, "pg_ls_dir", ""},
		{`SELECT pg_sleep(10)`, "pg_sleep", ""},
		{`SELECT lo_import('/etc/passwd')`, "lo_import", ""},
		{`SELECT lo_export(1, '/tmp/x')`, "lo_export", ""},
		{`SELECT dblink('host=x', 'select 1')`, "dblink", ""},
		{`SELECT current_setting('data_directory')`, "current_setting", ""},
		{`SELECT set_config('x', 'y', false)`, "set_config", ""},
		{`SELECT query_to_xml('select * from x', true, true, '')`, "query_to_xml", ""},
		{`SELECT 'x'::regclass`, "regclass", "postgres"},
		{`SELECT 'x'::regclass`, "malformed parameter", "sqlite"},
		{`SELECT $a(') FROM settings --'`, "settings", "sqlite"},
		{`SELECT :a::b(x'y) FROM settings`, "settings", "sqlite"},
		{`SELECT $a(x`, "malformed parameter", "sqlite"},
		{"SELECT E'a'\n'\\'' FROM settings --'", "settings", "postgres"},
		{"SELECT E'a' -- c\r\n  -- d\n'\\'' FROM settings --'", "settings", "postgres"},
		{"SELECT * FROM \ufeffsettings", "non-ASCII", ""},
		{"SELECT * FROM séttings", "non-ASCII", ""},
		{`SELECT "PG_CATALOG".x`, "pg_catalog", ""},
		{`SELECT E'\' FROM settings --'`, "settings", "sqlite"},
		{`SELECT E'\'' FROM settings -- '`, "settings", "postgres"},
		{`SELECT $$ $$ FROM settings`, "settings", "postgres"},
		{"SELECT 1 -- x\r FROM settings", "settings", "postgres"},
		{`SELECT /* /* */ FROM settings */ 1`, "settings", "sqlite"},
		{`SELECT U&"\0073ettings"`, "Unicode", "postgres"},
		{`SELECT 'unterminated`, "unterminated", ""},
		{`SELECT "unterminated`, "unterminated", ""},
		{`SELECT /* unterminated`, "unterminated", ""},
		{`SELECT $a$ unterminated`, "unterminated", "postgres"},
		{`SELECT 1settings`, "settings", ""},
		{"SELECT 1\x00", "UTF-8", ""},
		{`WITH x AS (DELETE FROM records RETURNING *) SELECT * FROM x`, "DELETE", ""},
		{`SELECT * FROM records FOR UPDATE`, "UPDATE", ""},
		{`SELECT * INTO copy FROM records`, "INTO", ""},
		{`INSERT INTO lexicons (id) VALUES (?)`, "table lexicons", ""},
		{`INSERT INTO dead_letters (id) VALUES (?)`, "table dead_letters", ""},
		{`INSERT INTO main.records (uri) VALUES (?)`, "unqualified", ""},
		{`UPDATE backfill_jobs SET status = 'x'`, "table backfill_jobs", ""},
		{`UPDATE records SET cid = (SELECT id FROM lexicons)`, "table lexicons", ""},
		{`DELETE FROM stream_cursors`, "table stream_cursors", ""},
		{`DELETE FROM records WHERE uri IN (SELECT uri FROM x)`, "x is not a relation", ""},
		{`DELETE FROM records USING other WHERE 1`, "other is not a relation", ""},
		{`UPDATE records SET cid = 'x' FROM other`, "other is not a relation", ""},
		{`INSERT INTO records SELECT * FROM records r JOIN settings s`, "settings", ""},
		{`DELETE FROM records WHERE uri = (SELECT value FROM settings)`, "settings", ""},
		{`UPDATE records SET cid = ARRAY(SELECT uri FROM other)`, "other is not a relation", ""},
	}
	for _, tc := range cases {
		for name, syn := range syntaxes {
			if tc.only != "" && tc.only != name {
				continue
			}
			_, err := guardRaw(tc.sql, syn)
			if !errors.Is(err, storage.ErrInvalidQuery) || !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("%s: %q: err = %v, want ErrInvalidQuery mentioning %q", name, tc.sql, err, tc.reason)
			}
		}
	}
}

func TestGuardRefusesEverySchemaTable(t *testing.T) {
	for table := range schemaTables {
		for _, form := range []string{"%s", `"%s"`, "%S"} {
			name := strings.ReplaceAll(form, "%s", table)
			name = strings.ReplaceAll(name, "%S", strings.ToUpper(table))
			for _, syn := range syntaxes {
				if _, err := guardRaw("SELECT * FROM "+name, syn); !errors.Is(err, storage.ErrInvalidQuery) {
					t.Errorf("%s: accepted", name)
				}
			}
		}
	}
}

// lexCovers checks that tokens and the gaps between them (whitespace and
// comments only) cover src in order.
func lexCovers(t *testing.T, src string, toks []token, syn Syntax) {
	t.Helper()
	pos := 0
	for _, tk := range toks {
		if tk.start < pos || tk.end <= tk.start || tk.end > len(src) {
			t.Fatalf("token %+v out of order in %q", tk, src)
		}
		gap := src[pos:tk.start]
		if inner, err := lexSQL(gap, syn); err != nil || len(inner) != 0 {
			t.Fatalf("gap %q before token %+v holds tokens %v (%v)", gap, tk, inner, err)
		}
		pos = tk.end
	}
}

func FuzzRawGuard(f *testing.F) {
	seeds := []string{
		`SELECT * FROM records WHERE uri = ?`,
		`SELECT E'\'' FROM settings -- '`,
		`SELECT $a$ x $a$, $1`,
		`SELECT /* /* */ */ [a], "b""c", 'd''e'`,
		`INSERT INTO records (uri) VALUES ($1) ON CONFLICT (uri) DO UPDATE SET cid = excluded.cid`,
		`DELETE FROM records WHERE x IS DISTINCT FROM extract(epoch FROM y)`,
		"SELECT 1 -- a\r\nFROM x",
		`SELECT U&'x'`,
	}
	for _, s := range seeds {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, stmt string, pg bool) {
		syn := SyntaxSQLite
		if pg {
			syn = SyntaxPostgres
		}
		write, err := guardRaw(stmt, syn)
		if err != nil {
			if !errors.Is(err, storage.ErrInvalidQuery) {
				t.Fatalf("refusal does not wrap ErrInvalidQuery: %v", err)
			}
			return
		}
		toks, lexErr := lexSQL(stmt, syn)
		if lexErr != nil {
			t.Fatalf("accepted a statement the lexer refuses: %v", lexErr)
		}
		lexCovers(t, stmt, toks, syn)
		for _, tk := range toks {
			if (tk.kind == tokWord || tk.kind == tokQuoted) && refusal(tk.text) != "" {
				t.Fatalf("accepted restricted name %q", tk.text)
			}
		}
		if toks[0].kind != tokWord {
			t.Fatalf("accepted statement starting with %+v", toks[0])
		}
		switch toks[0].text {
		case "select", "with":
			if write {
				t.Fatal("a read classified as a write")
			}
		case "insert", "update", "delete":
			if !write {
				t.Fatal("a write classified as a read")
			}
		default:
			t.Fatalf("accepted a %s statement", toks[0].text)
		}
	})
}
