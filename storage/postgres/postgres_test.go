package postgres_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/internal/sqlstore"
	"github.com/lexview/lexview/storage/postgres"
	"github.com/lexview/lexview/storage/storagetest"
)

// TestSuite runs every suite of storage/storagetest.
func TestSuite(t *testing.T) {
	storagetest.RunAll(t, func(t testing.TB) storage.Store { return storagetest.Postgres(t) })
}

func TestMigrations(t *testing.T) {
	storagetest.RunMigrations(t, func(t testing.TB) storagetest.Migrator { return storagetest.PostgresUnmigrated(t) })
}

func TestNativeColumnTypes(t *testing.T) {
	s := storagetest.Postgres(t).(*postgres.Store)
	want := map[string]string{
		"records.record":        "jsonb",
		"records.indexed_at":    "timestamp with time zone",
		"records.created_at":    "timestamp with time zone",
		"lexicons.created_at":   "timestamp with time zone",
		"lexicons.lexicon_json": "json",
	}
	for col, typ := range want {
		var got string
		err := s.Reader().QueryRowContext(context.Background(),
			`SELECT data_type FROM information_schema.columns WHERE table_name || '.' || column_name = $1`, col).Scan(&got)
		if err != nil || got != typ {
			t.Errorf("%s: type %q (%v), want %q", col, got, err, typ)
		}
	}
}

// TestEveryCollectionPlans: listing every collection seeks
// records_collection_created and never scans records, with sequential scans
// priced out as on a large table.
func TestEveryCollectionPlans(t *testing.T) {
	s := storagetest.Postgres(t).(*postgres.Store)
	ctx := context.Background()
	conn, err := s.Reader().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SET enable_seqscan = off"); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	queries := map[string]struct {
		sql  string
		args []any
	}{
		"collections":  {sqlstore.CollectionsQuery, nil},
		"merged heads": {dollars(sqlstore.MergedHeadsQuery(2, true)), []any{"c", at, at, "u", 3, "d", at, at, "u", 3, 4}},
	}
	for name, q := range queries {
		// ANALYZE: a work table scan sets up its target list, and so shows
		// its subplan, only when it runs.
		joined := explainPlan(t, conn, name, "EXPLAIN (ANALYZE) "+q.sql, q.args...)
		if strings.Contains(joined, "Seq Scan") || !strings.Contains(joined, "using records_collection_created") {
			t.Errorf("%s: plan scans records or misses the index:\n%s", name, joined)
		}
	}
}

// explainPlan runs an EXPLAIN statement on conn and returns its plan's
// lines joined.
func explainPlan(t *testing.T, conn *sql.Conn, name, explain string, args ...any) string {
	t.Helper()
	rows, err := conn.QueryContext(context.Background(), explain, args...)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, line)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return strings.Join(plan, "\n")
}

// dollars numbers the ? placeholders of q as PostgreSQL's $1, $2, ...
func dollars(q string) string {
	var b strings.Builder
	n := 0
	for _, c := range q {
		if c == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

// TestValidOnlyPlans: a listing that leaves out flagged records (the
// validation mode hide) keeps the listing's index, its condition a filter,
// and the flagged records of a collection (search's exclusion, the
// counts) come from the partial index records_invalid.
func TestValidOnlyPlans(t *testing.T) {
	s := storagetest.Postgres(t).(*postgres.Store)
	ctx := context.Background()
	conn, err := s.Reader().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SET enable_seqscan = off"); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for name, q := range map[string]struct {
		sql, index string
		args       []any
	}{
		"valid-only deep page": {`SELECT uri, cid, record, created_at FROM records WHERE collection = $1 AND created_at <= $2
			AND (created_at < $3 OR uri < $4) AND invalid IS NULL ORDER BY created_at DESC, uri DESC LIMIT $5`,
			"records_collection_created", []any{"c", at, at, "u", 21}},
		"flagged of a collection": {`SELECT uri FROM records WHERE collection = $1 AND invalid IS NOT NULL`,
			"records_invalid", []any{"c"}},
		"any flagged": {dollars(sqlstore.AnyFlaggedQuery), "records_invalid", []any{"c"}},
	} {
		joined := explainPlan(t, conn, name, "EXPLAIN "+q.sql, q.args...)
		if strings.Contains(joined, "Seq Scan") || !strings.Contains(joined, q.index) || strings.Contains(joined, "Sort") {
			t.Errorf("%s: plan scans, sorts or misses %s:\n%s", name, q.index, joined)
		}
	}
}
