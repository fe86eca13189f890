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
		{sql: `WITH r AS (SELECT * FROM records) SELECT r.uri FROM r JOIN lexicons l ON l.id = r.collection`},
		{sql: `SELECT * FROM dead_letters d, backfill_jobs j, backfill_repos b, record_tombstones t`},
		{sql: `SELECT 'settings are nice; DROP TABLE x' AS s, "uri" FROM records -- FROM settings`},
		{sql: `SELECT /* settings */ 1`},
		{sql: `SELECT $$FROM settings; DROP$$, $t$ pg_catalog $t$, $1 FROM records`, only: "postgres"},
		{sql: `SELECT E'it\'s FROM settings', 'a''b'`, only: "postgres"},
		{sql: `SELECT /* outer /* inner */ still comment: FROM settings */ 1`, only: "postgres"},
		{sql: `SELECT [uri], ` + "`did`" + ` FROM records`, only: "sqlite"},
		{sql: `SELECT extract(epoch FROM indexed_at) FROM records`},
		{sql: `INSERT INTO records (uri, did, collection, rkey, cid, record, indexed_at) VALUES (?, ?, ?, ?, ?, ?, ?)`, write: true},
		{sql: `INSERT OR REPLACE INTO "records" (uri) VALUES (?)`, write: true, only: "sqlite"},
		{sql: `insert into records (uri) values ($1) on conflict (uri) do update set cid = excluded.cid`, write: true},
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
		{`SELECT * FROM 'settings'`, "string literal", ""},
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
		{`INSERT INTO lexicons (id) VALUES (?)`, "not lexicons", ""},
		{`INSERT INTO dead_letters (id) VALUES (?)`, "not dead_letters", ""},
		{`INSERT INTO main.records (uri) VALUES (?)`, "unqualified", ""},
		{`UPDATE backfill_jobs SET status = 'x'`, "not backfill_jobs", ""},
		{`UPDATE records SET cid = (SELECT id FROM lexicons)`, "not lexicons", ""},
		{`DELETE FROM stream_cursors`, "not stream_cursors", ""},
		{`DELETE FROM records WHERE uri IN (SELECT uri FROM x)`, "not x", ""},
		{`DELETE FROM records USING other WHERE 1`, "not other", ""},
		{`UPDATE records SET cid = 'x' FROM other`, "not other", ""},
		{`INSERT INTO records SELECT * FROM records r JOIN settings s`, "settings", ""},
		{`DELETE FROM records WHERE uri = (SELECT value FROM settings)`, "settings", ""},
		{`UPDATE records SET cid = ARRAY(SELECT uri FROM other)`, "not other", ""},
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

func TestGuardRefusesEverySensitiveTable(t *testing.T) {
	for table := range sensitiveTables {
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
			if write && (tk.kind == tokWord || tk.kind == tokQuoted) && tk.text != "records" && knownTables[tk.text] {
				t.Fatalf("write accepted with table %q", tk.text)
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
