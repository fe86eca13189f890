package storagetest

import (
	"context"
	"errors"
	"testing"

	"github.com/lexview/lexview/storage"
)

// Migrator is a store whose schema can be brought to a given migration
// version (sqlite.Store and postgres.Store).
type Migrator interface {
	storage.Store
	// MigrateTo applies the pending migrations up to and including version.
	MigrateTo(ctx context.Context, version int) error
}

// RunMigrations tests the migrations that move data: each test builds the
// schema as it was before the migration, stores data the old way, migrates
// and reads it the new way. open returns an empty, unmigrated store.
func RunMigrations(t *testing.T, open func(t testing.TB) Migrator) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s Migrator)
	}{
		{"0010SourceCursors", testMigrateSourceCursors},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

// testMigrateSourceCursors: migration 10 moves the Jetstream cursor, stored
// as "jetstream" before it, to "source:jetstream" (ingest.CursorKey), and
// leaves other stream positions alone.
func testMigrateSourceCursors(t *testing.T, s Migrator) {
	ctx := context.Background()
	if err := s.MigrateTo(ctx, 9); err != nil {
		t.Fatal(err)
	}
	err := s.ApplyBatch(ctx, storage.Batch{Cursors: []storage.StreamCursor{
		{Name: "jetstream", Value: 1_767_323_045_123_456}, {Name: "other", Value: 7},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetStreamCursor(ctx, "source:jetstream"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("source:jetstream before the migration: %v", err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetStreamCursor(ctx, "source:jetstream"); err != nil || got != 1_767_323_045_123_456 {
		t.Fatalf("source:jetstream = %d, %v; want the old jetstream cursor", got, err)
	}
	if _, err := s.GetStreamCursor(ctx, "jetstream"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("the old jetstream cursor is still readable: %v", err)
	}
	if got, err := s.GetStreamCursor(ctx, "other"); err != nil || got != 7 {
		t.Fatalf("other = %d, %v", got, err)
	}
	// Migrating again changes nothing.
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetStreamCursor(ctx, "source:jetstream"); err != nil || got != 1_767_323_045_123_456 {
		t.Fatalf("after a second Migrate: %d, %v", got, err)
	}
}
