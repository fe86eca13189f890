// Package storagetest holds the test suites every storage.Store
// implementation must pass (RunAll runs them all), and helpers that open
// fresh SQLite and PostgreSQL stores for tests anywhere in Lexview.
package storagetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/postgres"
	"github.com/lexview/lexview/storage/sqlite"
)

// PostgresURLEnv names the variable holding the server the tests use.
const PostgresURLEnv = "APPVIEW_TEST_POSTGRES_URL"

// Backend opens a fresh, migrated, empty store for a test.
type Backend struct {
	Name string
	Open func(t testing.TB) storage.Store
}

// Backends returns every backend. Each test that stores anything should
// run against all of them.
func Backends() []Backend {
	return []Backend{
		{Name: "sqlite", Open: func(t testing.TB) storage.Store { return SQLite(t) }},
		{Name: "postgres", Open: func(t testing.TB) storage.Store { return Postgres(t) }},
	}
}

// ForEach runs fn as a subtest once per backend.
func ForEach(t *testing.T, fn func(t *testing.T, open func(t testing.TB) storage.Store)) {
	for _, b := range Backends() {
		t.Run(b.Name, func(t *testing.T) { fn(t, b.Open) })
	}
}

// SQLite opens a migrated SQLite store in a temporary directory.
func SQLite(t testing.TB) storage.Store {
	t.Helper()
	s := SQLiteUnmigrated(t)
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatalf("migrate sqlite: %v", err)
	}
	return s
}

// SQLiteUnmigrated opens an empty SQLite store in a temporary directory
// without applying any migration (see RunMigrations).
func SQLiteUnmigrated(t testing.TB) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "test.db"), sqlite.Options{})
	if err != nil {
		t.Fatalf("open sqlite: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Postgres opens a migrated store on a new, empty database created on the
// server named by APPVIEW_TEST_POSTGRES_URL, and drops it afterwards. Without
// that variable the test is skipped, except under CI=true, where it fails.
func Postgres(t testing.TB) storage.Store {
	t.Helper()
	s := PostgresUnmigrated(t)
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatalf("migrate postgres: %v", err)
	}
	return s
}

// PostgresUnmigrated is Postgres without applying any migration (see
// RunMigrations).
func PostgresUnmigrated(t testing.TB) *postgres.Store {
	t.Helper()
	dbURL := PostgresURL(t)
	s, err := postgres.Open(context.Background(), dbURL, postgres.Options{MaxConns: 8})
	if err != nil {
		t.Fatalf("open postgres: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// PostgresURL creates an empty database for the test and returns its URL.
func PostgresURL(t testing.TB) string {
	t.Helper()
	server := os.Getenv(PostgresURLEnv)
	if server == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set: PostgreSQL is required in CI", PostgresURLEnv)
		}
		t.Skipf("%s not set; skipping PostgreSQL", PostgresURLEnv)
	}
	admin, err := sql.Open("postgres", server)
	if err != nil {
		t.Fatalf("postgres: %v", err)
	}
	defer admin.Close()
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "lexview_test_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	u, err := url.Parse(server)
	if err != nil {
		t.Fatalf("parse %s: %v", PostgresURLEnv, err)
	}
	u.Path = "/" + name
	t.Cleanup(func() {
		// The restricted role of scripts' raw SQL (migration 0011) lives
		// in the server, not the database: drop it too.
		role := ""
		if db, err := sql.Open("postgres", u.String()); err == nil {
			_ = db.QueryRow("SELECT role_name FROM script_sql_role").Scan(&role)
			db.Close()
		}
		admin, err := sql.Open("postgres", server)
		if err != nil {
			return
		}
		defer admin.Close()
		_, _ = admin.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)")
		if role != "" {
			_, _ = admin.Exec(`DROP ROLE IF EXISTS "` + strings.ReplaceAll(role, `"`, `""`) + `"`)
		}
	})
	return u.String()
}
