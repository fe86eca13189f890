package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lexview/lexview/storage"
)

const deadLetterColumns = `id, kind, lexicon_id, uri, did, collection, rkey, action, cid, rev, error, attempts, created_at, resolved_at`

func scanDeadLetter(row rowScanner, withRecord bool) (storage.DeadLetter, error) {
	var d storage.DeadLetter
	var created, resolved Time
	var record []byte
	dest := []any{&d.ID, &d.Kind, &d.LexiconID, &d.URI, &d.DID, &d.Collection, &d.RKey, &d.Action,
		&d.CID, &d.Rev, &d.Error, &d.Attempts, &created, &resolved}
	if withRecord {
		dest = append(dest, &record)
	}
	if err := row.Scan(dest...); err != nil {
		return d, err
	}
	d.CreatedAt, d.ResolvedAt = created.T, resolved.T
	if record != nil {
		d.Record = record
	}
	return d, nil
}

// AddDeadLetter implements storage.DeadLetterStore.
func (db *DB) AddDeadLetter(ctx context.Context, d storage.DeadLetter) (storage.DeadLetter, error) {
	if d.ID == "" {
		d.ID = storage.NewID()
	}
	if d.CreatedAt.IsZero() {
		d.CreatedAt = time.Now()
	}
	d.CreatedAt = d.CreatedAt.UTC().Truncate(time.Microsecond)
	if !d.ResolvedAt.IsZero() {
		d.ResolvedAt = d.ResolvedAt.UTC().Truncate(time.Microsecond)
	}
	if err := db.conflict("add dead letter", db.insertDeadLetter(ctx, db.writer, d)); err != nil {
		return storage.DeadLetter{}, err
	}
	return d, nil
}

// execer runs a statement: the writer pool or a transaction.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// insertDeadLetter inserts d as it is (ID and times set).
func (db *DB) insertDeadLetter(ctx context.Context, x execer, d storage.DeadLetter) error {
	_, err := x.ExecContext(ctx, Bind(db.dialect, `INSERT INTO dead_letters (`+deadLetterColumns+`, record)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?::timestamptz, ?::jsonb)`),
		d.ID, d.Kind, d.LexiconID, d.URI, d.DID, d.Collection, d.RKey, d.Action, d.CID, d.Rev, d.Error, d.Attempts,
		db.dialect.Time(d.CreatedAt), db.nullTime(d.ResolvedAt), jsonText(d.Record))
	return err
}

// jsonText is a JSON column's argument: the text, or NULL when empty.
func jsonText(raw []byte) any {
	if len(raw) == 0 {
		return nil
	}
	return string(raw)
}

// GetDeadLetter implements storage.DeadLetterStore.
func (db *DB) GetDeadLetter(ctx context.Context, id string) (storage.DeadLetter, error) {
	d, err := scanDeadLetter(db.reader.QueryRowContext(ctx,
		Bind(db.dialect, `SELECT `+deadLetterColumns+`, record FROM dead_letters WHERE id = ?`), id), true)
	if err = notFound(err); err != nil && !errors.Is(err, storage.ErrNotFound) {
		err = fmt.Errorf("get dead letter %s: %w", id, err)
	}
	return d, err
}

// deadLetterWhere renders the collection and resolved filters of q.
func deadLetterWhere(q storage.DeadLetterQuery) ([]string, []any) {
	var where []string
	var args []any
	if q.Collection != "" {
		where, args = append(where, `collection = ?`), append(args, q.Collection)
	}
	if q.Resolved != nil {
		if *q.Resolved {
			where = append(where, `resolved_at IS NOT NULL`)
		} else {
			where = append(where, `resolved_at IS NULL`)
		}
	}
	return where, args
}

func whereClause(where []string) string {
	if len(where) == 0 {
		return ""
	}
	return ` WHERE ` + strings.Join(where, ` AND `)
}

// ListDeadLetters implements storage.DeadLetterStore.
func (db *DB) ListDeadLetters(ctx context.Context, q storage.DeadLetterQuery) ([]storage.DeadLetter, *storage.DeadLetterPosition, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = storage.DefaultDeadLetterPage
	}
	limit = min(limit, storage.MaxDeadLetterPage)
	where, args := deadLetterWhere(q)
	if q.After != nil {
		t := db.dialect.Time(q.After.CreatedAt)
		where = append(where, `created_at <= ? AND (created_at < ? OR id < ?)`)
		args = append(args, t, t, q.After.ID)
	}
	args = append(args, limit+1)
	page, err := queryAll(ctx, db.reader,
		Bind(db.dialect, `SELECT `+deadLetterColumns+` FROM dead_letters`+whereClause(where)+
			` ORDER BY created_at DESC, id DESC LIMIT ?`),
		func(row rowScanner) (storage.DeadLetter, error) { return scanDeadLetter(row, false) }, args...)
	if err != nil {
		return nil, nil, fmt.Errorf("list dead letters: %w", err)
	}
	if len(page) <= limit {
		return page, nil, nil
	}
	page = page[:limit]
	last := page[limit-1]
	return page, &storage.DeadLetterPosition{CreatedAt: last.CreatedAt, ID: last.ID}, nil
}

// CountDeadLetters implements storage.DeadLetterStore.
func (db *DB) CountDeadLetters(ctx context.Context, q storage.DeadLetterQuery) (int64, error) {
	where, args := deadLetterWhere(q)
	var n int64
	err := db.reader.QueryRowContext(ctx,
		Bind(db.dialect, `SELECT COUNT(*) FROM dead_letters`+whereClause(where)), args...).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count dead letters: %w", err)
	}
	return n, nil
}

// ResolveDeadLetter implements storage.DeadLetterStore.
func (db *DB) ResolveDeadLetter(ctx context.Context, id string, at time.Time) error {
	return db.execOne(ctx, "resolve dead letter",
		`UPDATE dead_letters SET resolved_at = ? WHERE id = ? AND resolved_at IS NULL`, db.dialect.Time(at), id)
}

// RecordDeadLetterFailure implements storage.DeadLetterStore.
func (db *DB) RecordDeadLetterFailure(ctx context.Context, id, errMsg string, attempts int) error {
	return db.execOne(ctx, "record dead letter failure",
		`UPDATE dead_letters SET error = ?, attempts = ? WHERE id = ? AND resolved_at IS NULL`, errMsg, attempts, id)
}
