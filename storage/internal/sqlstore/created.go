package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/lexview/lexview/storage"
)

// fillChunk is the number of records fillCreatedAt reads and updates per
// statement.
const fillChunk = 500

// fillCreatedAt is the step of the migration that adds records.created_at:
// it sets the column of every existing record to storage.CreationTime of
// its record key, value and indexing time (as writes do from then on), in
// chunks of fillChunk records in URI order.
func fillCreatedAt(ctx context.Context, db *DB, tx *sql.Tx) error {
	read := Bind(db.dialect, `SELECT uri, rkey, record, indexed_at FROM records WHERE uri > ? ORDER BY uri LIMIT ?`)
	after := ""
	for {
		uris, times, err := creationTimes(ctx, tx, read, after)
		if err != nil || len(uris) == 0 {
			return err
		}
		rows := strings.Repeat(`(?::text, ?::timestamptz), `, len(uris))
		update := Bind(db.dialect, `UPDATE records SET created_at = v.column2 FROM (VALUES `+
			rows[:len(rows)-2]+`) AS v WHERE records.uri = v.column1`)
		args := make([]any, 0, 2*len(uris))
		for i, uri := range uris {
			args = append(args, uri, db.dialect.Time(times[i]))
		}
		if _, err := tx.ExecContext(ctx, update, args...); err != nil {
			return fmt.Errorf("set created_at: %w", err)
		}
		after = uris[len(uris)-1]
	}
}

// creationTimes reads the chunk of records after the URI after and
// returns their URIs and creation times.
func creationTimes(ctx context.Context, tx *sql.Tx, query, after string) (uris []string, times []time.Time, err error) {
	rows, err := tx.QueryContext(ctx, query, after, fillChunk)
	if err != nil {
		return nil, nil, fmt.Errorf("read records: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var uri, rkey string
		var value []byte
		var at Time
		if err := rows.Scan(&uri, &rkey, &value, &at); err != nil {
			return nil, nil, fmt.Errorf("read records: %w", err)
		}
		uris = append(uris, uri)
		times = append(times, storage.CreationTime(rkey, value, at.T))
	}
	return uris, times, rows.Err()
}
