package sqlstore

import (
	"context"
	"fmt"

	"github.com/lexview/lexview/storage"
)

const listVersions = `SELECT rkey, rev, indexed_at FROM records WHERE uri > ? AND uri < ? ORDER BY uri LIMIT ?`

// ListRecordVersions implements storage.BackfillStore. The records of one
// repository's collection share the URI prefix at://DID/COLLECTION/, so
// the primary key serves the range; the record values are never read,
// which is most of what listing them would cost.
func (db *DB) ListRecordVersions(ctx context.Context, did, collection, after string, limit int) ([]storage.RecordVersion, error) {
	if limit < 1 {
		return nil, fmt.Errorf("list record versions: limit must be positive, got %d", limit)
	}
	lo, hi := URIPrefixRange("at://" + did + "/" + collection + "/")
	// Record keys are never empty, so no URI equals the bare prefix.
	rows, err := db.reader.QueryContext(ctx, Bind(db.dialect, listVersions), lo+after, hi, limit)
	if err != nil {
		return nil, fmt.Errorf("list record versions: %w", err)
	}
	defer rows.Close()
	out := make([]storage.RecordVersion, 0, min(limit, 1024))
	for rows.Next() {
		var v storage.RecordVersion
		var at Time
		if err := rows.Scan(&v.RKey, &v.Rev, &at); err != nil {
			return nil, fmt.Errorf("list record versions: %w", err)
		}
		v.IndexedAt = at.T
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list record versions: %w", err)
	}
	return out, nil
}
