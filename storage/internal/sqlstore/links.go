package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/lexview/lexview/storage"
)

// Stored is a record an upsert wrote (Dialect.UpsertRecords): its index in
// the batch and the created_at its row holds.
type Stored struct {
	Index     int
	CreatedAt time.Time
}

// LinkRow is one row of the link index.
type LinkRow struct {
	Target    string
	Source    string // collection:path
	CreatedAt time.Time
	URI       string
	DID       string
}

// linkCounters counts what the link index skipped in this process, and
// when it was last read complete (linksIndexed).
type linkCounters struct {
	skipped atomic.Int64
	doneAt  atomic.Int64 // Unix nanoseconds; 0: not known complete
}

// skippedLinksTarget is the target of the mark a record whose links were
// not all indexed (storage.ExtractLinks' bounds) gets, from the source
// "collection:" (an empty path): the planner, which answers equalities on
// a link from the link index, also checks the records so marked. No
// backlink query reaches it (an empty subject is refused).
const skippedLinksTarget = ""

// appendLinks appends the link rows of a record stored with createdAt,
// and the mark of a record some of whose links were skipped.
func (db *DB) appendLinks(rows []LinkRow, r storage.Record, createdAt time.Time) []LinkRow {
	links, skipped := storage.ExtractLinks(r.Value)
	if skipped > 0 {
		db.links.skipped.Add(int64(skipped))
		rows = append(rows, LinkRow{Target: skippedLinksTarget, Source: r.Collection + ":", CreatedAt: createdAt, URI: r.URI, DID: r.DID})
	}
	for _, l := range links {
		rows = append(rows, LinkRow{Target: l.Target, Source: r.Collection + ":" + l.Path, CreatedAt: createdAt, URI: r.URI, DID: r.DID})
	}
	return rows
}

// indexLinks stores the links of the records an upsert wrote. The rows'
// previous links are gone already: the records table's triggers remove a
// record's links when the record changes or goes.
func (db *DB) indexLinks(ctx context.Context, tx *sql.Tx, recs []storage.Record, stored []Stored) error {
	var rows []LinkRow
	for _, s := range stored {
		rows = db.appendLinks(rows, recs[s.Index], s.CreatedAt)
	}
	if len(rows) == 0 {
		return nil
	}
	if err := db.dialect.InsertLinks(ctx, tx, rows); err != nil {
		return fmt.Errorf("index links: %w", err)
	}
	return nil
}

func invalidBacklinks(format string, a ...any) error {
	return fmt.Errorf("%w: %s", storage.ErrInvalidBacklinkQuery, fmt.Sprintf(format, a...))
}

// checkSubject refuses an empty or oversized subject.
func checkSubject(subject string) error {
	switch {
	case subject == "":
		return invalidBacklinks("a subject is required")
	case len(subject) > storage.MaxLinkTargetLen:
		return invalidBacklinks("subject longer than %d bytes", storage.MaxLinkTargetLen)
	}
	return nil
}

// backlinkLimit applies the default and the bounds of a page size.
func backlinkLimit(n int) (int, error) {
	switch {
	case n <= 0:
		return storage.DefaultBacklinkLimit, nil
	case n > storage.MaxBacklinkLimit:
		return 0, invalidBacklinks("limit must be between 1 and %d", storage.MaxBacklinkLimit)
	}
	return n, nil
}

// Backlinks implements storage.LinkStore.
func (db *DB) Backlinks(ctx context.Context, q storage.BacklinkQuery) (storage.BacklinkPage, error) {
	if err := checkSubject(q.Subject); err != nil {
		return storage.BacklinkPage{}, err
	}
	limit, err := backlinkLimit(q.Limit)
	if err != nil {
		return storage.BacklinkPage{}, err
	}
	if len(q.DIDs) > storage.MaxBacklinkDIDs {
		return storage.BacklinkPage{}, invalidBacklinks("at most %d accounts", storage.MaxBacklinkDIDs)
	}
	source := q.Source.String()
	scope := "backlinks\x00" + q.Subject + "\x00" + source + "\x00" + strings.Join(q.DIDs, "\x00")
	var after []any
	if q.Cursor != "" {
		pos, err := storage.DecodeCursor(scope, q.Cursor)
		if err != nil || pos.URI == "" {
			return storage.BacklinkPage{}, invalidBacklinks("invalid cursor")
		}
		t := db.dialect.Time(pos.Time)
		after = []any{t, t, pos.URI}
	}
	target, err := db.linkTarget(ctx, q.Subject, source)
	if err != nil || target.records == 0 {
		return storage.BacklinkPage{Records: []storage.Backlink{}}, err
	}
	page := storage.BacklinkPage{Total: target.records}
	var rows *sql.Rows
	if len(q.DIDs) == 0 {
		// The hot statements, prepared.
		rows, err = db.reads.query(ctx, db.q.backlinks[min(len(after), 1)], append(append([]any{target.id}, after...), limit+1)...)
	} else {
		// Statements naming accounts vary with their number: not worth a
		// place in the bounded statement cache.
		where := `tid = ? AND did IN (?` + strings.Repeat(`, ?`, len(q.DIDs)-1) + `)`
		args := []any{target.id}
		for _, d := range q.DIDs {
			args = append(args, d)
		}
		if err := db.reader.QueryRowContext(ctx, Bind(db.dialect, `SELECT COUNT(*) FROM record_links WHERE `+where), args...).Scan(&page.Total); err != nil {
			return storage.BacklinkPage{}, fmt.Errorf("count backlinks: %w", err)
		}
		if len(after) > 0 {
			where += afterPosition
		}
		rows, err = db.reader.QueryContext(ctx, Bind(db.dialect, backlinksPage(where)), append(append(args, after...), limit+1)...)
	}
	if err != nil {
		return storage.BacklinkPage{}, fmt.Errorf("backlinks: %w", err)
	}
	defer rows.Close()
	page.Records = make([]storage.Backlink, 0, min(limit+1, 32))
	for rows.Next() {
		var b storage.Backlink
		var created Time
		if err := rows.Scan(&b.URI, &b.DID, &created); err != nil {
			return storage.BacklinkPage{}, fmt.Errorf("backlinks: %w", err)
		}
		b.CreatedAt = created.T
		b.Collection, b.RKey = splitRecordURI(b.URI)
		page.Records = append(page.Records, b)
	}
	if err := rows.Err(); err != nil {
		return storage.BacklinkPage{}, fmt.Errorf("backlinks: %w", err)
	}
	if len(page.Records) > limit {
		page.Records = page.Records[:limit]
		last := page.Records[limit-1]
		page.Cursor = storage.EncodeCursor(scope, storage.Position{Time: last.CreatedAt, URI: last.URI})
	}
	return page, nil
}

// backlinksPage is the statement of a page of backlinks, newest first,
// whose links meet where.
func backlinksPage(where string) string {
	return `SELECT uri, did, created_at FROM record_links WHERE ` + where + ` ORDER BY ` + newestFirst + ` LIMIT ?`
}

// linkTargetRow is a target and source's row in link_targets: its id
// (0 when nothing links to it) and the number of links to it, kept by the
// link index's writer and triggers.
type linkTargetRow struct {
	id      int64
	records int64
}

// linkTarget reads the row of the links to subject from source.
func (db *DB) linkTarget(ctx context.Context, subject, source string) (linkTargetRow, error) {
	var t linkTargetRow
	err := db.reads.queryRow(ctx, db.q.linkTarget, subject, source).Scan(&t.id, &t.records)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return linkTargetRow{}, fmt.Errorf("read link target: %w", err)
	}
	return t, nil
}

// splitRecordURI returns the collection and record key of
// at://did/collection/rkey.
func splitRecordURI(uri string) (collection, rkey string) {
	rest := strings.TrimPrefix(uri, "at://")
	parts := strings.SplitN(rest, "/", 3)
	if len(parts) != 3 {
		return "", ""
	}
	return parts[1], parts[2]
}

// CountBacklinks implements storage.LinkStore.
func (db *DB) CountBacklinks(ctx context.Context, q storage.BacklinkCountQuery) (storage.BacklinkCount, error) {
	if err := checkSubject(q.Subject); err != nil {
		return storage.BacklinkCount{}, err
	}
	target, err := db.linkTarget(ctx, q.Subject, q.Source.String())
	if err != nil {
		return storage.BacklinkCount{}, err
	}
	c := storage.BacklinkCount{Records: target.records}
	if q.DIDs && target.records > 0 {
		err = db.reads.queryRow(ctx, db.q.linkDIDCount, target.id).Scan(&c.DIDs)
	}
	if err != nil {
		return storage.BacklinkCount{}, fmt.Errorf("count backlinks: %w", err)
	}
	return c, nil
}

// BacklinkDIDs implements storage.LinkStore.
func (db *DB) BacklinkDIDs(ctx context.Context, q storage.BacklinkDIDQuery) (storage.BacklinkDIDPage, error) {
	if err := checkSubject(q.Subject); err != nil {
		return storage.BacklinkDIDPage{}, err
	}
	limit, err := backlinkLimit(q.Limit)
	if err != nil {
		return storage.BacklinkDIDPage{}, err
	}
	source := q.Source.String()
	target, err := db.linkTarget(ctx, q.Subject, source)
	if err != nil {
		return storage.BacklinkDIDPage{}, err
	}
	var page storage.BacklinkDIDPage
	if err := db.reads.queryRow(ctx, db.q.linkDIDCount, target.id).Scan(&page.Total); err != nil {
		return storage.BacklinkDIDPage{}, fmt.Errorf("count linking accounts: %w", err)
	}
	where := `tid = ?`
	args := []any{target.id}
	scope := "backlink-dids\x00" + q.Subject + "\x00" + source
	if q.Cursor != "" {
		pos, err := storage.DecodeCursor(scope, q.Cursor)
		if err != nil || pos.URI == "" {
			return storage.BacklinkDIDPage{}, invalidBacklinks("invalid cursor")
		}
		where += ` AND did > ?`
		args = append(args, pos.URI)
	}
	rows, err := db.reads.query(ctx, Bind(db.dialect, `SELECT DISTINCT did FROM record_links WHERE `+where+
		` ORDER BY did LIMIT ?`), append(args, limit+1)...)
	if err != nil {
		return storage.BacklinkDIDPage{}, fmt.Errorf("linking accounts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var did string
		if err := rows.Scan(&did); err != nil {
			return storage.BacklinkDIDPage{}, fmt.Errorf("linking accounts: %w", err)
		}
		page.DIDs = append(page.DIDs, did)
	}
	if err := rows.Err(); err != nil {
		return storage.BacklinkDIDPage{}, fmt.Errorf("linking accounts: %w", err)
	}
	if len(page.DIDs) > limit {
		page.DIDs = page.DIDs[:limit]
		page.Cursor = storage.EncodeCursor(scope, storage.Position{URI: page.DIDs[limit-1]})
	}
	return page, nil
}

// LinkIndexStatus implements storage.LinkStore.
func (db *DB) LinkIndexStatus(ctx context.Context) (storage.LinkIndexStatus, error) {
	var s storage.LinkIndexStatus
	err := db.reader.QueryRowContext(ctx, `SELECT done, scanned FROM link_index_state WHERE id = 1`).Scan(&s.Done, &s.Scanned)
	if err != nil {
		return storage.LinkIndexStatus{}, fmt.Errorf("link index status: %w", err)
	}
	s.Skipped = db.links.skipped.Load()
	return s, nil
}

// IndexStoredLinks implements storage.LinkStore. The records of a step
// are read inside its write transaction, locked against writers on
// PostgreSQL (SQLite has one writer): a record changed meanwhile either
// commits first, and the step reads the new version, or waits for the
// step and then replaces its links (the records' triggers remove them).
func (db *DB) IndexStoredLinks(ctx context.Context, n int) (done bool, err error) {
	if n <= 0 {
		n = 500
	}
	err = db.inTx(ctx, func(tx *sql.Tx) error {
		var after string
		var scanned int64
		if err := tx.QueryRowContext(ctx, `SELECT after_uri, scanned, done FROM link_index_state WHERE id = 1`).Scan(&after, &scanned, &done); err != nil {
			return fmt.Errorf("read link index state: %w", err)
		}
		if done {
			return nil
		}
		rows, err := tx.QueryContext(ctx, Bind(db.dialect, `SELECT uri, did, collection, created_at, record FROM records
			WHERE uri > ? ORDER BY uri LIMIT ?`+db.dialect.LockShared()), after, n)
		if err != nil {
			return fmt.Errorf("read records: %w", err)
		}
		var links []LinkRow
		k := 0
		for rows.Next() {
			var r storage.Record
			var created Time
			var value []byte
			if err := rows.Scan(&r.URI, &r.DID, &r.Collection, &created, &value); err != nil {
				rows.Close()
				return fmt.Errorf("read records: %w", err)
			}
			r.Value = value
			links = db.appendLinks(links, r, created.T)
			after = r.URI
			k++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("read records: %w", err)
		}
		if len(links) > 0 {
			if err := db.dialect.InsertLinks(ctx, tx, links); err != nil {
				return fmt.Errorf("index links: %w", err)
			}
		}
		done = k < n
		_, err = tx.ExecContext(ctx, Bind(db.dialect, `UPDATE link_index_state SET after_uri = ?, scanned = ?, done = ? WHERE id = 1`),
			after, scanned+int64(k), done)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("index stored links: %w", err)
	}
	return done, nil
}
