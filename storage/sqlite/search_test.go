package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/sqlite"
)

// TestSearchRawWriteOnFreshConnection: a script's raw write is the first
// statement of a newly opened store to reach the FTS4 table. FTS4 then
// connects to its table, and runs its own statements on its shadow
// tables, under the raw statement's authorizer: the write succeeds and
// its record is found.
func TestSearchRawWriteOnFreshConnection(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "search.db")
	s, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.DeclareFieldIndex(ctx, storage.FieldIndexSpec{Collection: "app.test.post", Path: "text", Kind: storage.FieldIndexText}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.BuildFieldIndexes(ctx, 10); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s, err = sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.RawQuery(ctx, `INSERT INTO records (uri, did, collection, rkey, cid, record, indexed_at, created_at)
		VALUES ('at://did:plc:a/app.test.post/1', 'did:plc:a', 'app.test.post', '1', 'bafy', '{"text":"hello from a script"}', 1, 1)`, nil, 10, 0)
	if err != nil {
		t.Fatalf("raw insert: %v", err)
	}
	page, err := s.SearchRecords(ctx, storage.SearchQuery{Collection: "app.test.post", Query: "script"})
	if err != nil || len(page.Hits) != 1 || page.Hits[0].Record.RKey != "1" {
		t.Fatalf("search: %+v %v", page, err)
	}
}
