package postgres_test

import (
	"context"
	"testing"

	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/postgres"
	"github.com/lexview/lexview/storage/storagetest"
)

func TestSuite(t *testing.T) {
	storagetest.Run(t, func(t testing.TB) storage.Store { return storagetest.Postgres(t) })
	storagetest.RunAdmin(t, func(t testing.TB) storage.Store { return storagetest.Postgres(t) })
}

func TestMigrations(t *testing.T) {
	storagetest.RunMigrations(t, func(t testing.TB) storagetest.Migrator { return storagetest.PostgresUnmigrated(t) })
}

func TestBackfillSuite(t *testing.T) {
	storagetest.RunBackfill(t, func(t testing.TB) storage.Store { return storagetest.Postgres(t) })
}

func TestOAuthSuite(t *testing.T) {
	storagetest.RunOAuth(t, func(t testing.TB) storage.Store { return storagetest.Postgres(t) })
}

func TestAccessSuite(t *testing.T) {
	storagetest.RunAccess(t, func(t testing.TB) storage.Store { return storagetest.Postgres(t) })
}

func TestScriptsSuite(t *testing.T) {
	storagetest.RunScripts(t, func(t testing.TB) storage.Store { return storagetest.Postgres(t) })
}

func TestNativeColumnTypes(t *testing.T) {
	s := storagetest.Postgres(t).(*postgres.Store)
	want := map[string]string{
		"records.record":        "jsonb",
		"records.indexed_at":    "timestamp with time zone",
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
