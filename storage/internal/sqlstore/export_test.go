package sqlstore

import (
	"context"

	"github.com/lexview/lexview/storage"
)

// RunRawUnguarded runs a raw statement without guardRaw, under the
// dialect's own enforcement of the allow-list only: the tests of that
// enforcement use it.
func RunRawUnguarded(ctx context.Context, db *DB, stmt string, write bool) (storage.RawResult, error) {
	return db.runRaw(ctx, stmt, nil, rawLimits{rows: 100}, write)
}
