package benchkit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lib/pq" // the "postgres" driver, and identifier quoting
)

// Database is one benchmark database and how to remove it.
type Database struct {
	URL     string // sqlite://PATH or a postgres:// URL
	Cleanup func()
}

// CreateDatabase returns a database for backend ("sqlite" or "postgres"):
// the SQLite file NAME.db under dir, or a new database on the PostgreSQL
// server at APPVIEW_TEST_POSTGRES_URL named after prefix and name and
// dropped by Cleanup. reuse, when not empty, names an existing database
// (a SQLite path or a PostgreSQL URL) to use and keep instead. fresh
// reports whether the database has to be seeded: it is new, or it holds
// no records table with rows.
func CreateDatabase(ctx context.Context, backend, dir, prefix, name, reuse string) (db Database, fresh bool, err error) {
	if reuse != "" {
		if backend == "sqlite" {
			_, statErr := os.Stat(reuse)
			return Database{URL: "sqlite://" + reuse, Cleanup: func() {}}, os.IsNotExist(statErr), nil
		}
		if hasRecords(ctx, reuse) {
			return Database{URL: reuse, Cleanup: func() {}}, false, nil
		}
		return Database{URL: reuse, Cleanup: func() {}}, true, ensureDatabase(ctx, reuse)
	}
	if backend == "sqlite" {
		path := filepath.Join(dir, name+".db")
		return Database{URL: "sqlite://" + path, Cleanup: func() {}}, true, nil
	}
	base := os.Getenv("APPVIEW_TEST_POSTGRES_URL")
	if base == "" {
		return db, false, errors.New("APPVIEW_TEST_POSTGRES_URL is not set (the scripts/bench-* wrappers provision a server)")
	}
	admin, err := sql.Open("postgres", base)
	if err != nil {
		return db, false, err
	}
	dbName := fmt.Sprintf("lexview_%s_%s_%d", prefix, name, time.Now().UnixNano())
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+pq.QuoteIdentifier(dbName)); err != nil {
		admin.Close()
		return db, false, fmt.Errorf("create database: %w", err)
	}
	u, err := url.Parse(base)
	if err != nil {
		admin.Close()
		return db, false, err
	}
	u.Path = "/" + dbName
	return Database{URL: u.String(), Cleanup: func() {
		defer admin.Close()
		_, _ = admin.Exec("DROP DATABASE IF EXISTS " + pq.QuoteIdentifier(dbName) + " WITH (FORCE)")
	}}, true, nil
}

// ensureDatabase creates the PostgreSQL database dbURL names unless it
// exists.
func ensureDatabase(ctx context.Context, dbURL string) error {
	u, err := url.Parse(dbURL)
	if err != nil {
		return err
	}
	name := strings.TrimPrefix(u.Path, "/")
	u.Path = "/postgres"
	admin, err := sql.Open("postgres", u.String())
	if err != nil {
		return err
	}
	defer admin.Close()
	var exists bool
	if err := admin.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return fmt.Errorf("look for database %s: %w", name, err)
	}
	if !exists {
		if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+pq.QuoteIdentifier(name)); err != nil {
			return fmt.Errorf("create database %s: %w", name, err)
		}
	}
	return nil
}

// hasRecords reports whether the PostgreSQL database at dbURL holds a
// records table with rows.
func hasRecords(ctx context.Context, dbURL string) bool {
	db, err := sql.Open("postgres", dbURL)
	if err != nil {
		return false
	}
	defer db.Close()
	var n int
	return db.QueryRowContext(ctx, `SELECT 1 FROM records LIMIT 1`).Scan(&n) == nil
}

// OpenSQL opens dbURL with database/sql for the benchmark's own reads
// (sampling, planning the requests): read-only for SQLite.
func OpenSQL(dbURL string) (db *sql.DB, dialect string, err error) {
	if path, ok := strings.CutPrefix(dbURL, "sqlite://"); ok {
		db, err = sql.Open("sqlite3", "file:"+(&url.URL{Path: path}).EscapedPath()+"?mode=ro")
		return db, "sqlite", err
	}
	db, err = sql.Open("postgres", dbURL)
	return db, "postgres", err
}
