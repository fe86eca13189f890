package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lexview/lexview/storage"
)

// AppendEvents implements storage.EventStore.
func (db *DB) AppendEvents(ctx context.Context, events []storage.Event) error {
	if len(events) == 0 {
		return nil
	}
	return db.inTx(ctx, func(tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, Bind(db.dialect,
			`INSERT INTO event_log (event_type, severity, actor_did, subject, detail, created_at) VALUES (?, ?, ?, ?, ?, ?)`))
		if err != nil {
			return fmt.Errorf("append events: %w", err)
		}
		defer stmt.Close()
		for _, e := range events {
			detail := string(e.Detail)
			if detail == "" {
				detail = "{}"
			}
			if _, err := stmt.ExecContext(ctx, e.Type, e.Severity, nullString(e.ActorDID), nullString(e.Subject), detail,
				db.dialect.Time(e.CreatedAt)); err != nil {
				return fmt.Errorf("append event %s: %w", e.Type, err)
			}
		}
		return nil
	})
}

// ListEvents implements storage.EventStore.
func (db *DB) ListEvents(ctx context.Context, f storage.EventFilter) ([]storage.Event, bool, error) {
	var where []string
	var args []any
	if f.Type != "" {
		where, args = append(where, `event_type = ?`), append(args, f.Type)
	}
	if f.Category != "" {
		// A prefix compared with substr, not LIKE: SQLite's LIKE ignores
		// ASCII case, so "Lexicon.x" would match category "lexicon" there.
		prefix := f.Category + "."
		where = append(where, `(event_type = ? OR substr(event_type, 1, ?::integer) = ?)`)
		args = append(args, f.Category, utf8.RuneCountInString(prefix), prefix)
	}
	if f.Severity != "" {
		where, args = append(where, `severity = ?`), append(args, f.Severity)
	}
	if f.Subject != "" {
		where, args = append(where, `subject = ?`), append(args, f.Subject)
	}
	if f.Before != "" {
		id, err := strconv.ParseInt(f.Before, 10, 64)
		if err != nil {
			return nil, false, storage.ErrInvalidCursor
		}
		where, args = append(where, `id < ?`), append(args, id)
	}
	q := `SELECT id, event_type, severity, actor_did, subject, detail, created_at FROM event_log`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, ` AND `)
	}
	q += ` ORDER BY id DESC LIMIT ?`
	args = append(args, f.Limit+1)
	events, err := queryAll(ctx, db.reader, Bind(db.dialect, q), scanEvent, args...)
	if err != nil {
		return nil, false, fmt.Errorf("list events: %w", err)
	}
	more := len(events) > f.Limit
	if more {
		events = events[:f.Limit]
	}
	return events, more, nil
}

func scanEvent(row rowScanner) (storage.Event, error) {
	var e storage.Event
	var id int64
	var actor, subject sql.NullString
	var detail []byte
	var at Time
	if err := row.Scan(&id, &e.Type, &e.Severity, &actor, &subject, &detail, &at); err != nil {
		return e, err
	}
	e.ID = strconv.FormatInt(id, 10)
	e.ActorDID, e.Subject, e.Detail, e.CreatedAt = actor.String, subject.String, detail, at.T
	return e, nil
}

// PurgeEvents implements storage.EventStore.
func (db *DB) PurgeEvents(ctx context.Context, before time.Time) (int64, error) {
	res, err := db.exec(ctx, `DELETE FROM event_log WHERE created_at < ?`, db.dialect.Time(before))
	if err != nil {
		return 0, fmt.Errorf("purge events: %w", err)
	}
	return res.RowsAffected()
}
