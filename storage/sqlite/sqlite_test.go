package sqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/internal/sqlstore"
	"github.com/lexview/lexview/storage/sqlite"
	"github.com/lexview/lexview/storage/storagetest"
)

// doc-snippet: suite
// TestSuite runs every suite of storage/storagetest.
func TestSuite(t *testing.T) {
	storagetest.RunAll(t, func(t testing.TB) storage.Store { return storagetest.SQLite(t) })
}

// doc-snippet: end

func TestMigrations(t *testing.T) {
	storagetest.RunMigrations(t, func(t testing.TB) storagetest.Migrator { return storagetest.SQLiteUnmigrated(t) })
}

func TestPragmas(t *testing.T) {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "sub", "dir", "p.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	var mode string
	var fk int
	if err := s.Reader().QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal_mode = %q, %v", mode, err)
	}
	if err := s.Writer().QueryRowContext(ctx, "PRAGMA foreign_keys").Scan(&fk); err != nil || fk != 1 {
		t.Fatalf("foreign_keys = %d, %v", fk, err)
	}
	if _, err := s.Reader().ExecContext(ctx, "DELETE FROM records"); err == nil {
		t.Fatal("reader pool accepted a write")
	}
	if got := s.Writer().Stats().MaxOpenConnections; got != 1 {
		t.Fatalf("writer pool allows %d connections", got)
	}
}

func TestQueryPlansUseIndexes(t *testing.T) {
	s := storagetest.SQLite(t).(*sqlite.Store)
	cases := map[string]string{
		"collection page":              "SELECT uri FROM records WHERE collection = ? ORDER BY created_at DESC, uri DESC LIMIT 21",
		"collection deep page":         "SELECT uri FROM records WHERE collection = ? AND created_at <= ? AND (created_at < ? OR uri < ?) ORDER BY created_at DESC, uri DESC LIMIT 21",
		"query page, oldest first":     "SELECT uri FROM records WHERE collection = ? AND created_at >= ? AND (created_at > ? OR uri > ?) ORDER BY created_at ASC, uri ASC LIMIT 21",
		"did page":                     "SELECT uri FROM records WHERE collection = ? AND did = ? AND (created_at < ? OR (created_at = ? AND uri < ?)) ORDER BY created_at DESC, uri DESC LIMIT 21",
		"by uri":                       "SELECT uri FROM records WHERE uri = ?",
		"collection page, valid only":  "SELECT uri FROM records WHERE collection = ? AND created_at <= ? AND (created_at < ? OR uri < ?) AND invalid IS NULL ORDER BY created_at DESC, uri DESC LIMIT 21",
		"flagged of a collection":      "SELECT uri FROM records WHERE collection = ? AND invalid IS NOT NULL",
		"any flagged":                  sqlstore.AnyFlaggedQuery,
		"filtered query page":          "SELECT uri FROM records WHERE collection = ? AND (CASE WHEN json_type(record, ?) = 'text' THEN json_extract(record, ?) END) LIKE ? ESCAPE ? ORDER BY created_at DESC, uri DESC LIMIT 21",
		"dead letters":                 "SELECT id FROM dead_letters WHERE created_at <= ? AND (created_at < ? OR id < ?) ORDER BY created_at DESC, id DESC LIMIT 51",
		"dead letters of a collection": "SELECT id FROM dead_letters WHERE collection = ? AND resolved_at IS NULL ORDER BY created_at DESC, id DESC LIMIT 51",
		"unresolved dead letters":      "SELECT id FROM dead_letters WHERE resolved_at IS NULL ORDER BY created_at, id LIMIT 100",
	}
	for name, q := range cases {
		joined := queryPlan(t, s, name, q, "c", "d", 1, 1, "u")
		if strings.Contains(joined, "SCAN records") || strings.Contains(joined, "TEMP B-TREE") {
			t.Errorf("%s: plan scans or sorts: %s", name, joined)
		}
	}
}

// TestEveryCollectionPlans: listing every collection seeks
// records_collection_created, once per collection, and never scans records.
// (Its sorts are of at most a page per collection.)
func TestEveryCollectionPlans(t *testing.T) {
	s := storagetest.SQLite(t).(*sqlite.Store)
	queries := map[string]string{
		"collections":  sqlstore.CollectionsQuery,
		"merged heads": sqlstore.MergedHeadsQuery(2, true),
	}
	for name, q := range queries {
		joined := queryPlan(t, s, name, q, "c", 1, 1, "u", 3, "d", 1, 1, "u", 3, 4)
		if strings.Contains(joined, "SCAN records") || !strings.Contains(joined, "SEARCH records USING COVERING INDEX records_collection_created") {
			t.Errorf("%s: plan scans records or misses the index: %s", name, joined)
		}
	}
}

// queryPlan is SQLite's plan of the query q (named name) with args, its
// steps joined by "; ".
func queryPlan(t *testing.T, s *sqlite.Store, name, q string, args ...any) string {
	t.Helper()
	rows, err := s.Reader().QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return strings.Join(plan, "; ")
}

// A new database and its directory are private to the service's user
// (issue 12, finding 12): 0600 files (the WAL too), a 0700 directory.
func TestNewDatabaseIsPrivate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	path := filepath.Join(dir, "appview.db")
	s, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]os.FileMode{dir: 0o700, path: 0o600, path + "-wal": 0o600} {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %o, want %o", filepath.Base(name), got, want)
		}
	}
}
