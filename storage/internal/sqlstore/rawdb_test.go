package sqlstore_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/internal/sqlstore"
	"github.com/lexview/lexview/storage/postgres"
	"github.com/lexview/lexview/storage/sqlite"
	"github.com/lexview/lexview/storage/storagetest"
)

// sqlDB returns the shared SQL layer of a store.
func sqlDB(t *testing.T, s storage.Store) *sqlstore.DB {
	t.Helper()
	switch s := s.(type) {
	case *sqlite.Store:
		return s.DB
	case *postgres.Store:
		return s.DB
	}
	t.Fatalf("store %T", s)
	return nil
}

// TestRawDatabaseEnforcement runs statements the guard would refuse
// straight under the database's own enforcement (the SQLite authorizer,
// the PostgreSQL role): reads outside the allow-list and writes outside
// the records table are refused by the database itself, with a clear
// error, and the service's own queries are unaffected afterwards.
func TestRawDatabaseEnforcement(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(t testing.TB) storage.Store) {
		s := open(t)
		db := sqlDB(t, s)
		ctx := context.Background()
		const secret = "operator-inline-secret"
		lex := storage.Lexicon{ID: "app.test.q", Type: "query", JSON: json.RawMessage(`{"lexicon":1,"id":"app.test.q"}`),
			Script: `local token = "` + secret + `"`, IndexHook: "-- " + secret}
		if _, _, err := s.PutLexicon(ctx, lex); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.PutScript(ctx, storage.Script{Trigger: "xrpc.query:app.test.q", Source: "-- " + secret}); err != nil {
			t.Fatal(err)
		}
		if err := s.PutScriptVariable(ctx, storage.ScriptVariable{Key: "k", Sealed: secret}); err != nil {
			t.Fatal(err)
		}

		for _, stmt := range []string{
			`SELECT COUNT(*) FROM records`,
			`SELECT * FROM record_tombstones`,
			`SELECT id, lexicon_type, target_collection, revision, backfill, created_at, updated_at FROM lexicon_info`,
			`SELECT COUNT(*) FROM lexicon_info`,
			`WITH c AS (SELECT uri FROM records) SELECT COUNT(*) FROM c`,
		} {
			if _, err := sqlstore.RunRawUnguarded(ctx, db, stmt, false); err != nil {
				t.Errorf("%s: %v", stmt, err)
			}
		}
		if _, err := sqlstore.RunRawUnguarded(ctx, db, `UPDATE records SET cid = 'x' WHERE uri = 'none'`, true); err != nil {
			t.Errorf("write to records: %v", err)
		}

		refused := func(stmt string, write bool) {
			t.Helper()
			res, err := sqlstore.RunRawUnguarded(ctx, db, stmt, write)
			if !errors.Is(err, storage.ErrInvalidQuery) || !strings.Contains(err.Error(), "raw SQL refused") {
				t.Errorf("%s: %v (rows %v), want a refusal", stmt, err, res.Rows)
			}
			t.Logf("%s: %v", stmt, err)
		}
		reads := []string{
			`SELECT script FROM lexicons`,
			`SELECT index_hook FROM lexicons`,
			`SELECT * FROM lexicons`,
			`SELECT uri FROM records WHERE uri IN (SELECT script FROM lexicons)`,
			`WITH l AS (SELECT script FROM lexicons) SELECT * FROM l`,
			`SELECT uri FROM records UNION SELECT script FROM lexicons`,
			`SELECT source FROM scripts`,
			`SELECT COUNT(*) FROM scripts`,
			`SELECT r.uri FROM records r, scripts s`,
			`SELECT sealed FROM script_variables`,
			`SELECT * FROM admin_api_keys`,
			`SELECT * FROM settings`,
			`SELECT * FROM dead_letters`,
		}
		if s.Dialect() == "sqlite" {
			reads = append(reads,
				`SELECT * FROM sqlite_master`,
				`SELECT COUNT(*) FROM sqlite_master`,
				`SELECT sql FROM main.sqlite_schema`,
				`SELECT * FROM pragma_table_info('scripts')`,
				`PRAGMA table_info(scripts)`,
				`SELECT load_extension('x')`,
				`SELECT sqlite_version()`,
				`SELECT changes()`,
				`ATTACH DATABASE 'x.db' AS x`,
			)
		} else {
			reads = append(reads,
				`SELECT pg_read_file('/etc/passwd')`,
				`SELECT * FROM pg_authid`,
				`SELECT lo_import('/etc/passwd')`,
				`SELECT * FROM public.lexicons`,
				`SELECT * FROM script_sql_role`,
			)
		}
		for _, stmt := range reads {
			refused(stmt, false)
		}
		for _, stmt := range []string{
			`DELETE FROM lexicons`,
			`UPDATE scripts SET source = 'x'`,
			`INSERT INTO record_tombstones (uri, rev) VALUES ('x', 'y')`,
			`UPDATE records SET cid = (SELECT script FROM lexicons LIMIT 1)`,
		} {
			refused(stmt, true)
		}
		// A read never writes, even to records.
		refused(`DELETE FROM records`, false)

		// The service's own queries still see everything.
		if _, _, err := s.PutScript(ctx, storage.Script{Trigger: "xrpc.query:app.test.r", Source: "-- again"}); err != nil {
			t.Fatalf("service write after raw statements: %v", err)
		}
		got, err := s.GetLexicon(ctx, lex.ID)
		if err != nil || got.Script != lex.Script {
			t.Fatalf("service read after raw statements: %+v %v", got, err)
		}
	})
}

// TestRawRunsAsRestrictedRole: on PostgreSQL, where the migration could
// create it (the test server's user is a super user), raw statements run
// as the restricted role named in script_sql_role.
func TestRawRunsAsRestrictedRole(t *testing.T) {
	s := storagetest.Postgres(t).(*postgres.Store)
	ctx := context.Background()
	var role string
	if err := s.Reader().QueryRowContext(ctx, `SELECT role_name FROM script_sql_role`).Scan(&role); err != nil {
		t.Fatal(err)
	}
	res, err := sqlstore.RunRawUnguarded(ctx, s.DB, `SELECT current_user`, false)
	if err != nil || len(res.Rows) != 1 || res.Rows[0][0] != role || !strings.HasPrefix(role, "lexview_script_") {
		t.Fatalf("current_user %v (%v), want %s", res.Rows, err, role)
	}
	var after string
	if err := s.Reader().QueryRowContext(ctx, `SELECT current_user`).Scan(&after); err != nil || after == role {
		t.Fatalf("the pool kept the role: %q %v", after, err)
	}
}

// TestRawWithoutRestrictedRole: on PostgreSQL, a connecting user that may
// not create roles still migrates (0011 creates no role then) and runs raw
// statements, held by the statement guard only; once an operator creates
// the role by hand (the procedure of docs/operations.md), raw statements
// run as it.
func TestRawWithoutRestrictedRole(t *testing.T) {
	ctx := context.Background()
	dbURL := storagetest.PostgresURL(t)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := sql.Open("postgres", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var b [6]byte
	_, _ = rand.Read(b[:])
	user, dbName := "lexview_plain_"+hex.EncodeToString(b[:]), strings.TrimPrefix(u.Path, "/")
	for _, stmt := range []string{
		`CREATE ROLE ` + user + ` LOGIN NOCREATEROLE NOSUPERUSER`,
		`ALTER DATABASE ` + dbName + ` OWNER TO ` + user,
	} {
		if _, err := admin.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	var role string
	t.Cleanup(func() {
		server, err := sql.Open("postgres", os.Getenv(storagetest.PostgresURLEnv))
		if err != nil {
			return
		}
		defer server.Close()
		_, _ = server.Exec(`DROP DATABASE IF EXISTS ` + dbName + ` WITH (FORCE)`)
		_, _ = server.Exec(`DROP ROLE IF EXISTS ` + user)
		if role != "" {
			_, _ = server.Exec(`DROP ROLE IF EXISTS "` + role + `"`)
		}
	})
	u.User = url.User(user)
	s, err := postgres.Open(ctx, u.String(), postgres.Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("migrate as a user that may not create roles: %v", err)
	}
	if err := s.Reader().QueryRowContext(ctx, `SELECT role_name FROM script_sql_role`).Scan(&role); err != nil {
		t.Fatal(err)
	}
	currentUser := func() string {
		t.Helper()
		res, err := sqlstore.RunRawUnguarded(ctx, s.DB, `SELECT current_user`, false)
		if err != nil {
			t.Fatal(err)
		}
		return res.Rows[0][0].(string)
	}
	if got := currentUser(); got != user {
		t.Fatalf("raw statements run as %s, want %s (no role)", got, user)
	}
	if _, err := s.RawQuery(ctx, `SELECT COUNT(*) FROM records`, nil, 10, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RawQuery(ctx, `SELECT script FROM lexicons`, nil, 10, 0); !errors.Is(err, storage.ErrInvalidQuery) {
		t.Fatalf("the guard let lexicons through: %v", err)
	}

	// The operator's procedure, run by a super user in the database.
	if _, err := admin.ExecContext(ctx, `DO $$
DECLARE r text := (SELECT role_name FROM script_sql_role);
BEGIN
    EXECUTE format('CREATE ROLE %I NOLOGIN', r);
    EXECUTE format('GRANT SELECT ON records, record_tombstones, lexicon_info TO %I', r);
    EXECUTE format('GRANT INSERT, UPDATE, DELETE ON records TO %I', r);
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO %I', current_schema(), r);
    EXECUTE format('GRANT %I TO %I WITH INHERIT FALSE, SET TRUE', r, '`+user+`');
END $$`); err != nil {
		t.Fatalf("operator procedure: %v", err)
	}
	if got := currentUser(); got != role {
		t.Fatalf("raw statements run as %s, want %s", got, role)
	}
	if _, err := sqlstore.RunRawUnguarded(ctx, s.DB, `SELECT script FROM lexicons`, false); !errors.Is(err, storage.ErrInvalidQuery) {
		t.Fatalf("the role read lexicons: %v", err)
	}
	if _, err := s.RawQuery(ctx, `UPDATE records SET cid = 'x' WHERE uri = 'none'`, nil, 10, 0); err != nil {
		t.Fatalf("write as the role: %v", err)
	}
}
