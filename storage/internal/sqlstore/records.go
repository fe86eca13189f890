package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/lexview/lexview/storage"
)

const recordColumns = `uri, did, collection, rkey, cid, rev, record, indexed_at`

// queries are the hot statements, bound once for the dialect.
type queries struct {
	getRecord string
	// list[after] selects a page of a collection, newest first; listByKey
	// a page of one repository's records in a collection, by URI (that is,
	// record key) descending, through the primary key.
	list                      [2]string
	listByKey                 string
	countCollection, countAll string
	getCursor, putCursor      string
}

func newQueries(d Dialect) queries {
	var q queries
	q.getRecord = Bind(d, `SELECT `+recordColumns+` FROM records WHERE uri = ?`)
	for after := range 2 {
		where := `collection = ?`
		if after == 1 {
			where += ` AND indexed_at <= ? AND (indexed_at < ? OR uri < ?)` // the bare <= bounds the index range
		}
		q.list[after] = Bind(d, `SELECT `+recordColumns+` FROM records WHERE `+where+
			` ORDER BY indexed_at DESC, uri DESC LIMIT ?`)
	}
	q.listByKey = Bind(d, `SELECT `+recordColumns+` FROM records WHERE uri >= ? AND uri < ? ORDER BY uri DESC LIMIT ?`)
	q.countCollection = Bind(d, `SELECT COUNT(*) FROM records WHERE collection = ?`)
	q.countAll = `SELECT COUNT(*) FROM records`
	q.getCursor = Bind(d, `SELECT value FROM stream_cursors WHERE name = ?`)
	q.putCursor = Bind(d, `INSERT INTO stream_cursors (name, value, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`)
	return q
}

// ApplyBatch implements storage.RecordStore.
func (db *DB) ApplyBatch(ctx context.Context, b storage.Batch) error {
	upserts, deletes := collapse(b.Ops)
	if len(upserts) == 0 && len(deletes) == 0 && len(b.Cursors) == 0 {
		return nil
	}
	return db.inTx(ctx, func(tx *sql.Tx) error {
		if len(deletes) > 0 {
			if err := db.dialect.DeleteRecords(ctx, tx, deletes, time.Now()); err != nil {
				return fmt.Errorf("delete records: %w", err)
			}
		}
		if len(upserts) > 0 {
			if err := db.dialect.UpsertRecords(ctx, tx, upserts); err != nil {
				return fmt.Errorf("upsert records: %w", err)
			}
		}
		for _, c := range b.Cursors {
			if _, err := tx.ExecContext(ctx, db.q.putCursor, c.Name, c.Value, db.dialect.Time(time.Now())); err != nil {
				return fmt.Errorf("store cursor %s: %w", c.Name, err)
			}
		}
		return nil
	})
}

// collapse reduces ops to the last operation per URI, keeping first-seen
// order, and splits them into upserts and deletes. Because each URI then
// appears once, the two sets can be applied in either order.
func collapse(ops []storage.RecordOp) (upserts, deletes []storage.Record) {
	last := make(map[string]int, len(ops))
	for i, op := range ops {
		last[op.Record.URI] = i
	}
	for i, op := range ops {
		if last[op.Record.URI] != i {
			continue
		}
		if op.Delete {
			deletes = append(deletes, op.Record)
			continue
		}
		r := op.Record
		if r.IndexedAt.IsZero() {
			r.IndexedAt = time.Now()
		}
		r.IndexedAt = r.IndexedAt.UTC().Truncate(time.Microsecond)
		upserts = append(upserts, r)
	}
	return upserts, deletes
}

// URIPrefixRange returns the bounds lo <= uri < hi of the AT URIs that
// start with prefix, which must end in "/": in byte order nothing falls
// between "/" and "0".
func URIPrefixRange(prefix string) (lo, hi string) {
	return prefix, prefix[:len(prefix)-1] + "0"
}

// DeleteRecordsByDID implements storage.RecordStore. An account's records
// share the URI prefix at://DID/, so the primary key finds them.
func (db *DB) DeleteRecordsByDID(ctx context.Context, did string) (int64, error) {
	lo, hi := URIPrefixRange("at://" + did + "/")
	res, err := db.exec(ctx, `DELETE FROM records WHERE uri >= ? AND uri < ?`, lo, hi)
	if err != nil {
		return 0, fmt.Errorf("delete records of %s: %w", did, err)
	}
	return res.RowsAffected()
}

// PurgeTombstones implements storage.RecordStore.
func (db *DB) PurgeTombstones(ctx context.Context, before time.Time) (int64, error) {
	res, err := db.exec(ctx, `DELETE FROM record_tombstones WHERE deleted_at < ?`, db.dialect.Time(before))
	if err != nil {
		return 0, fmt.Errorf("purge tombstones: %w", err)
	}
	return res.RowsAffected()
}

// GetRecord implements storage.RecordStore.
func (db *DB) GetRecord(ctx context.Context, uri string) (storage.Record, error) {
	rec, err := scanRecord(db.reader.QueryRowContext(ctx, db.q.getRecord, uri))
	if errors.Is(err, sql.ErrNoRows) {
		return storage.Record{}, storage.ErrNotFound
	}
	return rec, err
}

// ListRecords implements storage.RecordStore.
func (db *DB) ListRecords(ctx context.Context, q storage.ListQuery) (storage.Page, error) {
	if q.Limit < 1 {
		return storage.Page{}, fmt.Errorf("list records: limit must be positive, got %d", q.Limit)
	}
	var rows *sql.Rows
	var err error
	if q.DID != "" {
		// One repository's records of a collection share the URI prefix
		// at://DID/COLLECTION/, so the primary key serves the listing.
		lo, hi := URIPrefixRange("at://" + q.DID + "/" + q.Collection + "/")
		if q.After != nil && q.After.URI < hi {
			hi = q.After.URI
		}
		rows, err = db.reader.QueryContext(ctx, db.q.listByKey, lo, hi, q.Limit+1)
	} else {
		args := make([]any, 0, 5)
		args = append(args, q.Collection)
		after := 0
		if q.After != nil {
			after = 1
			t := db.dialect.Time(q.After.IndexedAt)
			args = append(args, t, t, q.After.URI)
		}
		args = append(args, q.Limit+1)
		rows, err = db.reader.QueryContext(ctx, db.q.list[after], args...)
	}
	if err != nil {
		return storage.Page{}, fmt.Errorf("list records: %w", err)
	}
	defer rows.Close()
	page := storage.Page{Records: make([]storage.Record, 0, min(q.Limit, 128))}
	for rows.Next() {
		rec, err := scanRecord(rows)
		if err != nil {
			return storage.Page{}, err
		}
		page.Records = append(page.Records, rec)
	}
	if err := rows.Err(); err != nil {
		return storage.Page{}, fmt.Errorf("list records: %w", err)
	}
	if len(page.Records) > q.Limit {
		page.Records = page.Records[:q.Limit]
		last := page.Records[q.Limit-1]
		page.Next = &storage.Position{IndexedAt: last.IndexedAt, URI: last.URI}
	}
	return page, nil
}

// CountRecords implements storage.RecordStore.
func (db *DB) CountRecords(ctx context.Context, collection string) (int64, error) {
	var n int64
	var err error
	if collection == "" {
		err = db.reader.QueryRowContext(ctx, db.q.countAll).Scan(&n)
	} else {
		err = db.reader.QueryRowContext(ctx, db.q.countCollection, collection).Scan(&n)
	}
	if err != nil {
		return 0, fmt.Errorf("count records: %w", err)
	}
	return n, nil
}

// GetStreamCursor implements storage.CursorStore.
func (db *DB) GetStreamCursor(ctx context.Context, name string) (int64, error) {
	var v int64
	err := db.reader.QueryRowContext(ctx, db.q.getCursor, name).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, storage.ErrNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("get stream cursor: %w", err)
	}
	return v, nil
}

type rowScanner interface{ Scan(dest ...any) error }

func scanRecord(row rowScanner) (storage.Record, error) {
	var r storage.Record
	var value []byte
	var at Time
	if err := row.Scan(&r.URI, &r.DID, &r.Collection, &r.RKey, &r.CID, &r.Rev, &value, &at); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return r, err
		}
		return r, fmt.Errorf("scan record: %w", err)
	}
	r.Value = value
	r.IndexedAt = at.T
	return r, nil
}
