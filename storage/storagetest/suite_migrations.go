package storagetest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

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
		{"0012RecordsCreatedAt", testMigrateCreatedAt},
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

// testMigrateCreatedAt: migration 12 gives the records stored before it
// the creation time writes compute from then on (storage.CreationTime), in
// chunks (more records than one chunk of the migration's step), and
// listings then come in creation order.
func testMigrateCreatedAt(t *testing.T, s Migrator) {
	ctx := context.Background()
	if err := s.MigrateTo(ctx, 11); err != nil {
		t.Fatal(err)
	}
	var recs []storage.Record
	for i := range 1234 {
		at := base.Add(time.Duration(i) * time.Millisecond)
		created := base.Add(-time.Duration(i%97) * time.Hour)
		var r storage.Record
		switch i % 4 {
		case 0:
			r = Rec("did:plc:old", "app.test.post", TIDKey(created, uint(i%1024)), at, nil)
		case 1:
			r = Rec("did:plc:old", "app.test.post", fmt.Sprintf("c%04d", i), at, map[string]any{"createdAt": created.Format(time.RFC3339Nano)})
		case 2:
			r = Rec("did:plc:old", "app.test.like", fmt.Sprintf("n%04d", i), at, nil)
		case 3:
			r = Rec("did:plc:old", "app.test.post", fmt.Sprintf("f%04d", i), at, map[string]any{"createdAt": "2999-01-01T00:00:00Z"})
		}
		recs = append(recs, r)
	}
	insertBefore12(t, s, recs)
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Time{}
	for _, r := range recs {
		want[r.URI] = storage.CreationTime(r.RKey, r.Value, r.IndexedAt)
	}
	for range 2 { // migrating again changes nothing
		page, err := s.ListRecords(ctx, storage.ListQuery{Limit: 2000})
		if err != nil || len(page.Records) != len(recs) {
			t.Fatalf("listed %d records, %v", len(page.Records), err)
		}
		var got []string
		for _, r := range page.Records {
			if !r.CreatedAt.Equal(want[r.URI]) {
				t.Fatalf("%s: CreatedAt %v, want %v", r.URI, r.CreatedAt, want[r.URI])
			}
			got = append(got, r.URI)
		}
		if wantOrder := createdFirst(recs, want, false); !reflect.DeepEqual(got, wantOrder) {
			t.Fatal("the migrated records do not list in creation order")
		}
		if err := s.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// insertBefore12 stores records as the records table before migration 12
// held them (no created_at).
func insertBefore12(t *testing.T, s Migrator, recs []storage.Record) {
	t.Helper()
	w, ok := s.(interface{ Writer() *sql.DB })
	if !ok {
		t.Fatalf("store %T exposes no Writer", s)
	}
	q := `INSERT INTO records (uri, did, collection, rkey, cid, rev, record, indexed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`
	at := func(t time.Time) any { return t.UnixMicro() }
	if s.Dialect() == "postgres" {
		for i := 1; strings.Contains(q, "?"); i++ {
			q = strings.Replace(q, "?", fmt.Sprintf("$%d", i), 1)
		}
		at = func(t time.Time) any { return t }
	}
	tx, err := w.Writer().Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	stmt, err := tx.Prepare(q)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if _, err := stmt.Exec(r.URI, r.DID, r.Collection, r.RKey, r.CID, r.Rev, string(r.Value), at(r.IndexedAt)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}
