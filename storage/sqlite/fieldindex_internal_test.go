package sqlite

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lexview/lexview/storage/internal/sqlstore"
)

// TestFieldIndexTriggerSQL: the triggers that keep value indexes
// (migration 0030) compute the entries with the filter's own expressions,
// as sqlstore renders them today: a change to SQLiteJSON.JSONField needs
// a migration that replaces the triggers (and rebuilds the indexes).
func TestFieldIndexTriggerSQL(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "f.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	want := sqlstore.FieldValueTriggerSQL(dialect{}, "fi.json_path")
	for _, name := range []string{"records_field_index_insert", "records_field_index_update"} {
		var body string
		if err := s.Writer().QueryRowContext(ctx, `SELECT sql FROM sqlite_schema WHERE type = 'trigger' AND name = ?`, name).Scan(&body); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !strings.Contains(strings.Join(strings.Fields(body), " "), want) {
			t.Errorf("trigger %s does not compute the entries with\n%s\nit is\n%s", name, want, body)
		}
	}
}
