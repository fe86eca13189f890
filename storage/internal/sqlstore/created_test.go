package sqlstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/internal/sqlstore"
	"github.com/lexview/lexview/storage/storagetest"
)

// TestMigrationSteps: a migration may name only a Go step that exists.
func TestMigrationSteps(t *testing.T) {
	ok := fstest.MapFS{"0001_a.sql": {Data: []byte("CREATE TABLE a (x INTEGER);\n" + sqlstore.StepMarker + "fill-created-at\nDROP TABLE a;\n")}}
	if ms, err := sqlstore.LoadMigrations(ok); err != nil || len(ms) != 1 {
		t.Fatalf("known step: %v %v", ms, err)
	}
	bad := fstest.MapFS{"0001_a.sql": {Data: []byte("SELECT 1;\n" + sqlstore.StepMarker + "no-such-step\n")}}
	if _, err := sqlstore.LoadMigrations(bad); err == nil || !strings.Contains(err.Error(), `unknown step "no-such-step"`) {
		t.Fatalf("unknown step: %v", err)
	}
}

// TestQueryRefusesCursorsOfTheIndexingOrder: a db.query cursor made before
// listings went by creation time (scope "records-query") is refused, not
// read as a position in the new order.
func TestQueryRefusesCursorsOfTheIndexingOrder(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		s := open(t)
		const coll = "app.test.post"
		r := storagetest.Rec("did:plc:a", coll, "k", time.Now(), nil)
		if err := s.ApplyBatch(context.Background(), storage.Batch{Ops: []storage.RecordOp{{Record: r}}}); err != nil {
			t.Fatal(err)
		}
		old := storage.EncodeCursor(strings.Join([]string{"records-query", coll, "", "", "desc", "null"}, "\x00"),
			storage.Position{Time: time.Now(), URI: r.URI})
		_, err := s.QueryRecords(context.Background(), storage.RecordQuery{Collection: coll, Cursor: old})
		if !errors.Is(err, storage.ErrInvalidCursor) {
			t.Fatalf("old cursor: %v", err)
		}
	})
}
