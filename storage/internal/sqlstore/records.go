package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lexview/lexview/storage"
)

const recordColumns = `uri, did, collection, rkey, cid, rev, record, indexed_at, created_at, invalid`

// RecordUpsertConflict ends each dialect's record upsert (Dialect.UpsertRecords:
// INSERT INTO records (recordColumns) SELECT ...) with the revision rule:
// a stored row with a newer non-empty rev is kept, a row at the same rev
// and CID is left as it is (unless its validation error changed: the
// record came again under another lexicon revision or validation mode),
// and a row with the same CID keeps its indexed_at and created_at.
const RecordUpsertConflict = `ON CONFLICT (uri) DO UPDATE SET
		did = excluded.did, collection = excluded.collection, rkey = excluded.rkey,
		cid = excluded.cid, rev = excluded.rev, record = excluded.record, invalid = excluded.invalid,
		indexed_at = CASE WHEN records.cid = excluded.cid THEN records.indexed_at ELSE excluded.indexed_at END,
		created_at = CASE WHEN records.cid = excluded.cid THEN records.created_at ELSE excluded.created_at END
	WHERE (records.rev = '' OR excluded.rev = '' OR excluded.rev >= records.rev)
		AND NOT (records.cid = excluded.cid AND records.rev = excluded.rev
			AND records.invalid IS NOT DISTINCT FROM excluded.invalid)`

// TombstoneConflict ends each dialect's tombstone insert
// (Dialect.DeleteRecords): a tombstone only moves to a newer rev.
const TombstoneConflict = `ON CONFLICT (uri) DO UPDATE SET rev = excluded.rev, deleted_at = excluded.deleted_at
		WHERE excluded.rev > record_tombstones.rev`

// afterPosition is the keyset condition of a newest-first listing
// continued after a position (its time twice, then its URI): the bare <=
// bounds the index range.
const afterPosition = ` AND created_at <= ? AND (created_at < ? OR uri < ?)`

// newestFirst is the order of the listings without a DID.
const newestFirst = `created_at DESC, uri DESC`

// validOnly is the condition of a listing that leaves out the records
// stored with a validation error (storage.ListQuery.ExcludeInvalid). It
// filters the rows the listing's index range yields, so the plan is the
// same; a listing without it (the validation modes reject and flag) is
// the same statement as before the column existed.
const validOnly = ` AND invalid IS NULL`

// hideIndex is the index of a statement variant: 1 leaves out invalid
// records (validOnly).
func hideIndex(exclude bool) int {
	if exclude {
		return 1
	}
	return 0
}

// queries are the hot statements, bound once for the dialect.
type queries struct {
	getRecord string
	// anyFlagged counts 1 when a collection holds a record stored with a
	// validation error (through the partial index records_invalid), else 0.
	anyFlagged string
	// list[hide][after] selects a page of a collection, newest created
	// first (records_collection_created); listByKey[hide] a page of one
	// repository's records, in a collection or in all, by URI (that is,
	// record key) descending, through the primary key. hide is 1 for the
	// variant that leaves out invalid records (validOnly).
	list      [2][2]string
	listByKey [2]string
	// The same for serving (ScanRecords, ScanRecord): only the columns
	// an answer needs.
	scanList                   [2][2]string
	scanByKey                  [2]string
	scanGet                    string
	countCollection, countAll  string
	getCursor, putCursor       string
	getRepoState, putRepoState string
	// Account states (accounts.go).
	getAccountState, putAccountState, deleteByDID string
	// setLabelCursor stores a labeler's cursor; upsertLabels[k] writes
	// 2^k labels (see labels.go).
	setLabelCursor string
	upsertLabels   [labelRowShapes]string
	// rememberProof records a DPoP proof (see dpopreplays.go).
	rememberProof string
	// The link index (links.go): a target's row, its linking accounts'
	// number, and its backlinks' pages[after].
	linkTarget, linkDIDCount string
	backlinks                [2]string
}

func newQueries(d Dialect) queries {
	var q queries
	q.getRecord = Bind(d, `SELECT `+recordColumns+` FROM records WHERE uri = ?`)
	q.rememberProof = Bind(d, rememberProof)
	for hide := range 2 {
		valid := ""
		if hide == 1 {
			valid = validOnly
		}
		for after := range 2 {
			where := `collection = ?`
			if after == 1 {
				where += afterPosition
			}
			where += valid
			q.list[hide][after] = Bind(d, `SELECT `+recordColumns+` FROM records WHERE `+where+
				` ORDER BY `+newestFirst+` LIMIT ?`)
			q.scanList[hide][after] = Bind(d, `SELECT `+servedColumns+` FROM records WHERE `+where+
				` ORDER BY `+newestFirst+` LIMIT ?`)
		}
		q.scanByKey[hide] = Bind(d, `SELECT `+servedColumns+` FROM records WHERE uri >= ? AND uri < ?`+valid+` ORDER BY uri DESC LIMIT ?`)
		q.listByKey[hide] = Bind(d, `SELECT `+recordColumns+` FROM records WHERE uri >= ? AND uri < ?`+valid+` ORDER BY uri DESC LIMIT ?`)
	}
	q.scanGet = Bind(d, `SELECT cid, record, invalid FROM records WHERE uri = ?`)
	q.countCollection = Bind(d, `SELECT COUNT(*) FROM records WHERE collection = ?`)
	q.countAll = `SELECT COUNT(*) FROM records`
	q.linkTarget = Bind(d, `SELECT id, records FROM link_targets WHERE target = ? AND source = ?`)
	q.anyFlagged = Bind(d, AnyFlaggedQuery)
	q.linkDIDCount = Bind(d, `SELECT COUNT(DISTINCT did) FROM record_links WHERE tid = ?`)
	q.backlinks = [2]string{Bind(d, backlinksPage(`tid = ?`)), Bind(d, backlinksPage(`tid = ?`+afterPosition))}
	q.getCursor = Bind(d, `SELECT value FROM stream_cursors WHERE name = ?`)
	q.putCursor = Bind(d, `INSERT INTO stream_cursors (name, value, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`)
	q.getRepoState = Bind(d, `SELECT rev, data FROM repo_states WHERE did = ?`)
	q.putRepoState = Bind(d, `INSERT INTO repo_states (did, rev, data, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (did) DO UPDATE SET rev = excluded.rev, data = excluded.data, updated_at = excluded.updated_at
		WHERE excluded.rev > repo_states.rev`)
	q.getAccountState = Bind(d, getAccountStateQuery)
	q.putAccountState = Bind(d, putAccountStateQuery)
	q.deleteByDID = Bind(d, deleteByDIDQuery)
	q.setLabelCursor = Bind(d, `UPDATE labelers SET cursor = ? WHERE did = ?`)
	for k := range q.upsertLabels {
		q.upsertLabels[k] = Bind(d, upsertLabelsQuery(1<<k))
	}
	return q
}

// AnyFlaggedQuery counts 1 when a collection holds a record stored with a
// validation error, else 0: one probe of the partial index records_invalid
// on both databases (the dialects' plan tests check it).
const AnyFlaggedQuery = `SELECT COUNT(*) FROM (SELECT 1 FROM records WHERE collection = ? AND invalid IS NOT NULL LIMIT 1) f`

// ApplyBatch implements storage.RecordStore.
func (db *DB) ApplyBatch(ctx context.Context, b storage.Batch) error {
	upserts, deletes := collapse(b.Ops)
	if len(upserts) == 0 && len(deletes) == 0 && len(b.Cursors) == 0 && len(b.Repos) == 0 && len(b.Accounts) == 0 {
		return nil
	}
	return db.inTx(ctx, func(tx *sql.Tx) error {
		if b.Fence != nil {
			if err := db.checkFence(ctx, tx, *b.Fence); err != nil {
				return err
			}
		}
		if len(upserts) > 0 {
			var err error
			if upserts, err = db.skipInactive(ctx, tx, upserts); err != nil {
				return err
			}
		}
		if len(deletes) > 0 {
			if err := db.dialect.DeleteRecords(ctx, tx, deletes, time.Now()); err != nil {
				return fmt.Errorf("delete records: %w", err)
			}
		}
		if len(upserts) > 0 {
			stored, err := db.dialect.UpsertRecords(ctx, tx, upserts)
			if err != nil {
				return fmt.Errorf("upsert records: %w", err)
			}
			if err := db.indexLinks(ctx, tx, upserts, stored); err != nil {
				return err
			}
		}
		for _, c := range b.Cursors {
			if _, err := tx.ExecContext(ctx, db.q.putCursor, c.Name, c.Value, db.dialect.Time(time.Now())); err != nil {
				return fmt.Errorf("store cursor %s: %w", c.Name, err)
			}
		}
		for _, r := range b.Repos {
			if _, err := tx.ExecContext(ctx, db.q.putRepoState, r.DID, r.Rev, r.Data, db.dialect.Time(time.Now())); err != nil {
				return fmt.Errorf("store repository state %s: %w", r.DID, err)
			}
		}
		return db.applyAccounts(ctx, tx, b.Accounts)
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
		r.CreatedAt = storage.CreationTime(r.RKey, r.Value, r.IndexedAt)
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
	res, err := db.exec(ctx, deleteByDIDQuery, lo, hi)
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
	rec, err := scanRecord(db.reads.queryRow(ctx, db.q.getRecord, uri))
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
	var recs []storage.Record
	var err error
	switch {
	case q.DID != "":
		lo, hi := db.repositoryRange(q)
		recs, err = db.queryRecords(ctx, min(q.Limit, 128), db.q.listByKey[hideIndex(q.ExcludeInvalid)], lo, hi, q.Limit+1)
	case q.Collection != "":
		args := make([]any, 0, 5)
		args = append(args, q.Collection)
		after := 0
		if q.After != nil {
			after = 1
			t := db.dialect.Time(q.After.Time)
			args = append(args, t, t, q.After.URI)
		}
		args = append(args, q.Limit+1)
		recs, err = db.queryRecords(ctx, min(q.Limit, 128), db.q.list[hideIndex(q.ExcludeInvalid)][after], args...)
	default:
		recs, err = db.listEveryCollection(ctx, q)
	}
	if err != nil {
		return storage.Page{}, fmt.Errorf("list records: %w", err)
	}
	page := storage.Page{Records: recs}
	if len(recs) > q.Limit {
		page.Records = recs[:q.Limit]
		last := page.Records[q.Limit-1]
		page.Next = &storage.Position{Time: last.CreatedAt, URI: last.URI}
	}
	return page, nil
}

// repositoryRange returns the URI range lo <= uri < hi of the listing of
// one repository (q.DID): its records share the URI prefix at://DID/,
// those of one collection at://DID/COLLECTION/, so the primary key serves
// the listing. A position moves the upper bound down to its URI.
func (db *DB) repositoryRange(q storage.ListQuery) (lo, hi string) {
	prefix := "at://" + q.DID + "/"
	if q.Collection != "" {
		prefix += q.Collection + "/"
	}
	lo, hi = URIPrefixRange(prefix)
	if q.After != nil && q.After.URI < hi {
		hi = q.After.URI
	}
	return lo, hi
}

// collectionsPerStatement bounds the collections one statement of
// listEveryCollection merges, and so its bind parameters (5 each).
const collectionsPerStatement = 100

// CollectionsQuery lists the collections holding records by a skip scan:
// one seek of records_collection_created per collection (collections are
// NSIDs, never empty, so the empty string sorts before them all).
const CollectionsQuery = `WITH RECURSIVE c (collection) AS (
		SELECT CAST('' AS TEXT)
		UNION ALL
		SELECT (SELECT collection FROM records WHERE collection > c.collection ORDER BY collection LIMIT 1)
		FROM c WHERE c.collection IS NOT NULL
	)
	SELECT collection FROM c WHERE collection IS NOT NULL AND collection <> ''`

// MergedHeadsQuery is the statement, with ? placeholders, that selects the
// next page (newest created first) of the records of n collections: the
// head of each collection's keyset listing, a range of
// records_collection_created,
// merged, then the page's records fetched by URI. Its parameters are, per
// collection, the collection, then (when after) the position's time twice
// and URI, then the page size plus one; and last the page size plus one.
func MergedHeadsQuery(n int, after bool) string {
	head := ""
	if after {
		head = afterPosition
	}
	var b strings.Builder
	b.WriteString(`SELECT ` + recordColumns + ` FROM records WHERE uri IN (SELECT uri FROM (`)
	for i := range n {
		if i > 0 {
			b.WriteString(` UNION ALL `)
		}
		fmt.Fprintf(&b, `SELECT created_at, uri FROM (SELECT created_at, uri FROM records WHERE collection = ?%s
			ORDER BY `+newestFirst+` LIMIT ?) AS c%d`, head, i)
	}
	b.WriteString(` ORDER BY ` + newestFirst + ` LIMIT ?) AS heads) ORDER BY ` + newestFirst)
	return b.String()
}

// listEveryCollection returns up to q.Limit+1 records of every collection,
// newest created first. No index orders all records by (created_at, uri): it would
// cost every record write one more B-tree insert (a quarter to a third of
// SQLite's batched insert throughput, measured with BenchmarkWriteBatch)
// for the sake of an admin listing. Instead the heads of the collections' own listings are merged
// (CollectionsQuery, then MergedHeadsQuery for up to
// collectionsPerStatement collections at a time). A page costs time in
// proportion to the number of collections, not of records.
func (db *DB) listEveryCollection(ctx context.Context, q storage.ListQuery) ([]storage.Record, error) {
	collections, err := db.recordCollections(ctx)
	if err != nil {
		return nil, err
	}
	var head []any
	if q.After != nil {
		t := db.dialect.Time(q.After.Time)
		head = []any{t, t, q.After.URI}
	}
	out := make([]storage.Record, 0, min(q.Limit+1, 128))
	for len(collections) > 0 {
		chunk := collections[:min(len(collections), collectionsPerStatement)]
		collections = collections[len(chunk):]
		args := make([]any, 0, len(chunk)*(len(head)+2)+1)
		for _, c := range chunk {
			args = append(args, c)
			args = append(args, head...)
			args = append(args, q.Limit+1)
		}
		args = append(args, q.Limit+1)
		recs, err := db.queryRecords(ctx, min(q.Limit+1, 128), Bind(db.dialect, MergedHeadsQuery(len(chunk), q.After != nil)), args...)
		if err != nil {
			return nil, err
		}
		out = append(out, recs...)
	}
	// Each statement returned its chunk's records in order; merge them.
	// (A URI names its collection, so no record comes twice.)
	slices.SortFunc(out, func(a, b storage.Record) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.URI, a.URI)
	})
	return out[:min(len(out), q.Limit+1)], nil
}

// recordCollections returns the collections that hold records.
func (db *DB) recordCollections(ctx context.Context) ([]string, error) {
	rows, err := db.reader.QueryContext(ctx, CollectionsQuery)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// queryRecords runs a query selecting recordColumns and scans every row.
func (db *DB) queryRecords(ctx context.Context, capacity int, query string, args ...any) ([]storage.Record, error) {
	rows, err := db.reads.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]storage.Record, 0, capacity)
	for rows.Next() {
		rec, err := scanRecord(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	return out, rows.Err()
}

// CountRecords implements storage.RecordStore.
func (db *DB) CountRecords(ctx context.Context, collection string) (int64, error) {
	var n int64
	var err error
	if collection == "" {
		err = db.reads.queryRow(ctx, db.q.countAll).Scan(&n)
	} else {
		err = db.reads.queryRow(ctx, db.q.countCollection, collection).Scan(&n)
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

// GetRepoState implements storage.CursorStore.
func (db *DB) GetRepoState(ctx context.Context, did string) (storage.RepoState, error) {
	st := storage.RepoState{DID: did}
	err := db.reader.QueryRowContext(ctx, db.q.getRepoState, did).Scan(&st.Rev, &st.Data)
	if errors.Is(err, sql.ErrNoRows) {
		return storage.RepoState{}, storage.ErrNotFound
	}
	if err != nil {
		return storage.RepoState{}, fmt.Errorf("get repository state: %w", err)
	}
	return st, nil
}

type rowScanner interface{ Scan(dest ...any) error }

func scanRecord(row rowScanner) (storage.Record, error) {
	var r storage.Record
	var value []byte
	var at, created Time
	var invalid sql.NullString
	if err := row.Scan(&r.URI, &r.DID, &r.Collection, &r.RKey, &r.CID, &r.Rev, &value, &at, &created, &invalid); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return r, err
		}
		return r, fmt.Errorf("scan record: %w", err)
	}
	r.Value = value
	r.IndexedAt, r.CreatedAt, r.Invalid = at.T, created.T, invalid.String
	return r, nil
}
