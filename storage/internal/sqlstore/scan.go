package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"unsafe"

	"github.com/lexview/lexview/storage"
)

// servedColumns are what serving a listed record needs: the record and its
// strong reference, and the sort key for the next page's position.
const servedColumns = `uri, cid, record, created_at`

// ScanRecords implements storage.RecordStore. The listings of one
// collection and of one repository read servedColumns into reused buffers
// through statements prepared once per connection; the listing of every
// collection goes through ListRecords.
func (db *DB) ScanRecords(ctx context.Context, q storage.ListQuery, fn func(storage.RecordView) error) (*storage.Position, error) {
	if q.Limit < 1 {
		return nil, fmt.Errorf("list records: limit must be positive, got %d", q.Limit)
	}
	var rows *sql.Rows
	var err error
	switch {
	case q.DID != "":
		lo, hi := db.repositoryRange(q)
		rows, err = db.reads.query(ctx, db.q.scanByKey[hideIndex(q.ExcludeInvalid)], lo, hi, q.Limit+1)
	case q.Collection != "":
		list := &db.q.scanList[hideIndex(q.ExcludeInvalid)]
		if q.After == nil {
			rows, err = db.reads.query(ctx, list[0], q.Collection, q.Limit+1)
		} else {
			t := db.dialect.Time(q.After.Time)
			rows, err = db.reads.query(ctx, list[1], q.Collection, t, t, q.After.URI, q.Limit+1)
		}
	default:
		return db.scanListed(ctx, q, fn)
	}
	if err != nil {
		return nil, fmt.Errorf("list records: %w", err)
	}
	defer rows.Close()
	var uri, cid, value sql.RawBytes
	var created Time
	var next *storage.Position
	for n := 0; rows.Next(); n++ {
		if n == q.Limit {
			// The row past the page only says that there is a next one.
			return next, closeRows(rows)
		}
		if err := rows.Scan(&uri, &cid, &value, &created); err != nil {
			return nil, fmt.Errorf("list records: %w", err)
		}
		if err := fn(storage.RecordView{URI: uri, CID: cid, Value: value}); err != nil {
			return nil, err
		}
		if n == q.Limit-1 {
			next = &storage.Position{Time: created.T, URI: string(uri)}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list records: %w", err)
	}
	return nil, nil
}

// closeRows closes rows early and reports what stopped them, if anything.
func closeRows(rows *sql.Rows) error {
	if err := rows.Close(); err != nil {
		return fmt.Errorf("list records: %w", err)
	}
	return nil
}

// scanListed serves a listing that ScanRecords has no statement of its
// own for from ListRecords.
func (db *DB) scanListed(ctx context.Context, q storage.ListQuery, fn func(storage.RecordView) error) (*storage.Position, error) {
	page, err := db.ListRecords(ctx, q)
	if err != nil {
		return nil, err
	}
	for _, r := range page.Records {
		if err := fn(storage.RecordView{URI: []byte(r.URI), CID: []byte(r.CID), Value: r.Value}); err != nil {
			return nil, err
		}
	}
	return page.Next, nil
}

// ScanRecord implements storage.RecordStore.
func (db *DB) ScanRecord(ctx context.Context, uri string, fn func(storage.RecordView) error) error {
	rows, err := db.reads.query(ctx, db.q.scanGet, uri)
	if err != nil {
		return fmt.Errorf("get record: %w", err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return fmt.Errorf("get record: %w", err)
		}
		return storage.ErrNotFound
	}
	var cid, value, invalid sql.RawBytes
	if err := rows.Scan(&cid, &value, &invalid); err != nil {
		return fmt.Errorf("get record: %w", err)
	}
	if err := fn(storage.RecordView{URI: []byte(uri), CID: cid, Value: value, Invalid: invalid}); err != nil {
		return err
	}
	if err := rows.Close(); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("get record: %w", err)
	}
	return nil
}

// servedScanner scans rows of servedColumns into records without their
// Rev and IndexedAt: the repository, collection and record key are those
// the AT URI names (substrings of it, so they cost no copy). It reuses its
// scan targets from row to row. A record's JSON that the driver hands over
// as a string of its own (go-sqlite3 makes one per row) is kept as it is;
// one it hands over in a buffer it reuses (lib/pq) is copied into one
// buffer for the page (a new one when it fills), so a page costs a few
// allocations beyond the driver's own rather than several a record.
type servedScanner struct {
	uri, cid string
	value    ownedJSON
	created  Time
}

// servedArena is the size of a servedScanner's first buffer for copied
// JSON; later ones double, up to maxServedArena.
const (
	servedArena    = 8 << 10
	maxServedArena = 256 << 10
)

// scan reads a row of servedColumns, and into extra the columns after
// them.
func (sc *servedScanner) scan(rows *sql.Rows, extra ...any) (storage.Record, error) {
	var err error
	if len(extra) == 0 {
		err = rows.Scan(&sc.uri, &sc.cid, &sc.value, &sc.created)
	} else {
		err = rows.Scan(append([]any{&sc.uri, &sc.cid, &sc.value, &sc.created}, extra...)...)
	}
	if err != nil {
		return storage.Record{}, fmt.Errorf("scan record: %w", err)
	}
	r := storage.Record{URI: sc.uri, CID: sc.cid, CreatedAt: sc.created.T, Value: sc.value.b}
	r.DID, r.Collection, r.RKey = splitURI(r.URI)
	return r, nil
}

// scanKeyed scans servedColumns followed by a field sort's key columns
// (grp, num, str).
func (sc *servedScanner) scanKeyed(rows *sql.Rows) (storage.Record, fieldKey, error) {
	var grp int64
	var num any
	var str sql.NullString
	if err := rows.Scan(&sc.uri, &sc.cid, &sc.value, &sc.created, &grp, &num, &str); err != nil {
		return storage.Record{}, fieldKey{}, fmt.Errorf("scan record: %w", err)
	}
	r := storage.Record{URI: sc.uri, CID: sc.cid, CreatedAt: sc.created.T, Value: sc.value.b}
	r.DID, r.Collection, r.RKey = splitURI(r.URI)
	k, err := scanFieldKey(grp, num, str, r.URI)
	return r, k, err
}

// ownedJSON scans a column of JSON into bytes the caller may keep.
type ownedJSON struct {
	b     []byte
	arena []byte
}

// Scan implements sql.Scanner. database/sql passes the driver's value
// as it is: a string is the driver's fresh copy of the column, which
// nothing else refers to, so its bytes are taken over without a copy
// (and never written: Record.Value is read-only); a []byte may be the
// driver's reused buffer, so it is copied.
func (o *ownedJSON) Scan(src any) error {
	switch v := src.(type) {
	case string:
		o.b = unsafe.Slice(unsafe.StringData(v), len(v))
	case []byte:
		if cap(o.arena)-len(o.arena) < len(v) {
			size := min(max(2*cap(o.arena), servedArena), maxServedArena)
			o.arena = make([]byte, 0, max(size, len(v)))
		}
		start := len(o.arena)
		o.arena = append(o.arena, v...)
		o.b = o.arena[start:len(o.arena):len(o.arena)]
	case nil:
		o.b = nil
	default:
		return fmt.Errorf("record JSON: unexpected %T", src)
	}
	return nil
}

// splitURI returns the repository, collection and record key of a
// record's AT URI (at://DID/COLLECTION/RKEY).
func splitURI(uri string) (did, collection, rkey string) {
	rest := strings.TrimPrefix(uri, "at://")
	did, rest, _ = strings.Cut(rest, "/")
	collection, rkey, _ = strings.Cut(rest, "/")
	return did, collection, rkey
}
