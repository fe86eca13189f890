package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/lexview/lexview/storage"
)

const scriptRetryColumns = `id, lexicon_id, uri, did, collection, rkey, action, cid, rev, error, attempts, created_at, due_at, record`

// defaultRetryClaim is the claim size when ClaimScriptRetries is given
// none.
const defaultRetryClaim = 100

func scanScriptRetry(row rowScanner) (storage.ScriptRetry, error) {
	var r storage.ScriptRetry
	var created, due Time
	var record []byte
	if err := row.Scan(&r.ID, &r.LexiconID, &r.URI, &r.DID, &r.Collection, &r.RKey, &r.Action, &r.CID, &r.Rev,
		&r.Error, &r.Attempts, &created, &due, &record); err != nil {
		return r, err
	}
	r.Kind = storage.DeadLetterRecord
	r.CreatedAt, r.DueAt = created.T, due.T
	if record != nil {
		r.Record = record
	}
	return r, nil
}

// AddScriptRetry implements storage.ScriptRetryStore.
func (db *DB) AddScriptRetry(ctx context.Context, r storage.ScriptRetry) (storage.ScriptRetry, error) {
	if r.ID == "" {
		r.ID = storage.NewID()
	}
	if r.CreatedAt.IsZero() {
		r.CreatedAt = time.Now()
	}
	r.Kind, r.ResolvedAt = storage.DeadLetterRecord, time.Time{}
	r.CreatedAt = r.CreatedAt.UTC().Truncate(time.Microsecond)
	r.DueAt = r.DueAt.UTC().Truncate(time.Microsecond)
	_, err := db.exec(ctx, `INSERT INTO script_retries (`+scriptRetryColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?::timestamptz, ?::timestamptz, ?::jsonb)`,
		r.ID, r.LexiconID, r.URI, r.DID, r.Collection, r.RKey, r.Action, r.CID, r.Rev, r.Error, r.Attempts,
		db.dialect.Time(r.CreatedAt), db.dialect.Time(r.DueAt), jsonText(r.Record))
	if err := db.conflict("add script retry", err); err != nil {
		return storage.ScriptRetry{}, err
	}
	return r, nil
}

// ClaimScriptRetries implements storage.ScriptRetryStore. On PostgreSQL
// the rows are locked with SKIP LOCKED, so concurrent claims take
// different retries; SQLite's write transactions are serialised already.
func (db *DB) ClaimScriptRetries(ctx context.Context, now, until time.Time, limit int) ([]storage.ScriptRetry, error) {
	if limit <= 0 {
		limit = defaultRetryClaim
	}
	lock := ""
	if db.dialect.Name() != "sqlite" {
		lock = ` FOR UPDATE SKIP LOCKED`
	}
	claimed, err := queryAll(ctx, db.writer, Bind(db.dialect, `UPDATE script_retries SET due_at = ?::timestamptz
		WHERE id IN (SELECT id FROM script_retries WHERE due_at <= ?::timestamptz ORDER BY due_at, id LIMIT ?`+lock+`)
		RETURNING `+scriptRetryColumns),
		scanScriptRetry, db.dialect.Time(until), db.dialect.Time(now), limit)
	if err != nil {
		return nil, fmt.Errorf("claim script retries: %w", err)
	}
	return claimed, nil
}

// NextScriptRetryDue implements storage.ScriptRetryStore.
func (db *DB) NextScriptRetryDue(ctx context.Context) (time.Time, error) {
	var next Time
	if err := db.writer.QueryRowContext(ctx, `SELECT MIN(due_at) FROM script_retries`).Scan(&next); err != nil {
		return time.Time{}, fmt.Errorf("next script retry: %w", err)
	}
	return next.T, nil
}

// RescheduleScriptRetry implements storage.ScriptRetryStore.
func (db *DB) RescheduleScriptRetry(ctx context.Context, id, errMsg string, attempts int, due time.Time) error {
	return db.execOne(ctx, "reschedule script retry",
		`UPDATE script_retries SET error = ?, attempts = ?, due_at = ?::timestamptz WHERE id = ?`,
		errMsg, attempts, db.dialect.Time(due), id)
}

// DeleteScriptRetry implements storage.ScriptRetryStore.
func (db *DB) DeleteScriptRetry(ctx context.Context, id string) error {
	return db.execOne(ctx, "delete script retry", `DELETE FROM script_retries WHERE id = ?`, id)
}

// PromoteScriptRetry implements storage.ScriptRetryStore.
func (db *DB) PromoteScriptRetry(ctx context.Context, id, errMsg string, attempts int, at time.Time) (storage.DeadLetter, error) {
	var d storage.DeadLetter
	err := db.inTx(ctx, func(tx *sql.Tx) error {
		r, err := scanScriptRetry(tx.QueryRowContext(ctx,
			Bind(db.dialect, `DELETE FROM script_retries WHERE id = ? RETURNING `+scriptRetryColumns), id))
		if err != nil {
			return notFound(err)
		}
		d = r.DeadLetter
		d.Error, d.Attempts, d.CreatedAt = errMsg, attempts, at.UTC().Truncate(time.Microsecond)
		return db.insertDeadLetter(ctx, tx, d)
	})
	if err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return storage.DeadLetter{}, err
		}
		return storage.DeadLetter{}, fmt.Errorf("promote script retry %s: %w", id, err)
	}
	return d, nil
}
