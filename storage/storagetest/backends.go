// Package storagetest holds the test suites every storage.Store
// implementation must pass (RunAll runs them all), and helpers that open
// fresh SQLite and PostgreSQL stores for tests anywhere in Lexview.
package storagetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
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

// Postgres opens a migrated store on a new database created on the server
// named by APPVIEW_TEST_POSTGRES_URL, and drops it afterwards. Without that
// variable the test is skipped, except under CI=true, where it fails.
//
// The database is a copy of a template database migrated once per server
// and set of migrations (postgres.MigrationsDigest), shared by every test
// process: copying it takes a fraction of the time that migrating a fresh
// database does. Migrate still runs on the copy (and finds nothing to do).
func Postgres(t testing.TB) storage.Store {
	t.Helper()
	server := postgresServer(t)
	tmpl, err := templates.get(server)
	if err != nil {
		t.Fatalf("postgres template database: %v", err)
	}
	s, err := postgres.Open(context.Background(), createDatabase(t, server, tmpl), postgres.Options{MaxConns: 8})
	if err != nil {
		t.Fatalf("open postgres: %v", err)
	}
	t.Cleanup(func() { s.Close() })
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
	return createDatabase(t, postgresServer(t), "")
}

// postgresServer is APPVIEW_TEST_POSTGRES_URL, or skips the test (fails it
// under CI=true) when it is not set.
func postgresServer(t testing.TB) string {
	t.Helper()
	server := os.Getenv(PostgresURLEnv)
	if server == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not set: PostgreSQL is required in CI", PostgresURLEnv)
		}
		t.Skipf("%s not set; skipping PostgreSQL", PostgresURLEnv)
	}
	return server
}

// createDatabase creates a database for the test on server, a copy of
// template when it is not empty, and drops it when the test ends.
func createDatabase(t testing.TB, server, template string) string {
	t.Helper()
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
	create := "CREATE DATABASE " + name
	if template != "" {
		create += " TEMPLATE " + template
	}
	if _, err := admin.ExecContext(ctx, create); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	u, err := url.Parse(server)
	if err != nil {
		t.Fatalf("parse %s: %v", PostgresURLEnv, err)
	}
	u.Path = "/" + name
	t.Cleanup(func() {
		// The restricted role of scripts' raw SQL (migration 0011) lives
		// in the server, not the database: drop it too, unless it came
		// with the template, whose copies all share it.
		role := ""
		if db, err := sql.Open("postgres", u.String()); err == nil && template == "" {
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

// templates holds, per server, the name of the migrated template database
// this process copies test databases from.
var templates = &templateCache{names: map[string]string{}}

type templateCache struct {
	mu    sync.Mutex
	names map[string]string
}

// get returns the template database for server, creating and migrating it
// if no test process has yet. A PostgreSQL advisory lock serialises the
// test processes that start at once; a template is marked IS_TEMPLATE only
// once it is complete, so one left half-built by a killed process is made
// again.
func (c *templateCache) get(server string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if name, ok := c.names[server]; ok {
		return name, nil
	}
	digest := postgres.MigrationsDigest()
	name := "lexview_template_" + digest[:16]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := sql.Open("postgres", server)
	if err != nil {
		return "", err
	}
	defer admin.Close()
	conn, err := admin.Conn(ctx) // the advisory lock belongs to one session
	if err != nil {
		return "", err
	}
	defer conn.Close()
	const lockKey = 0x6c76746d // "lvtm"
	if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock($1)", lockKey); err != nil {
		return "", fmt.Errorf("lock: %w", err)
	}
	defer conn.ExecContext(context.Background(), "SELECT pg_advisory_unlock($1)", lockKey) //nolint:errcheck // the session ends anyway
	var ready bool
	err = conn.QueryRowContext(ctx, "SELECT datistemplate FROM pg_database WHERE datname = $1", name).Scan(&ready)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", err
	}
	if !ready {
		if err := buildTemplate(ctx, conn, server, name); err != nil {
			return "", err
		}
	}
	c.names[server] = name
	return name, nil
}

// buildTemplate (re)creates the database name on server, migrates it and
// marks it as a template that accepts no connections.
func buildTemplate(ctx context.Context, conn *sql.Conn, server, name string) error {
	if _, err := conn.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop a half-built template: %w", err)
	}
	if _, err := conn.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		return fmt.Errorf("create: %w", err)
	}
	u, err := url.Parse(server)
	if err != nil {
		return err
	}
	u.Path = "/" + name
	s, err := postgres.Open(ctx, u.String(), postgres.Options{MaxConns: 2})
	if err != nil {
		return err
	}
	err = s.Migrate(ctx)
	s.Close()
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	_, err = conn.ExecContext(ctx, "ALTER DATABASE "+name+" WITH IS_TEMPLATE true ALLOW_CONNECTIONS false")
	return err
}
