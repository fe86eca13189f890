package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/lexview/lexview/storage"
)

const lexiconColumns = `id, revision, lexicon_type, lexicon_json, backfill, target_collection, script, index_hook, created_at, updated_at`

// PutLexicon implements storage.LexiconStore.
func (db *DB) PutLexicon(ctx context.Context, l storage.Lexicon) (storage.Lexicon, bool, error) {
	now := db.dialect.Time(time.Now())
	q := Bind(db.dialect, `INSERT INTO lexicons (`+lexiconColumns+`)
		VALUES (?, 1, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET
			revision = lexicons.revision + 1,
			lexicon_type = excluded.lexicon_type,
			lexicon_json = excluded.lexicon_json,
			backfill = excluded.backfill,
			target_collection = excluded.target_collection,
			script = excluded.script,
			index_hook = excluded.index_hook,
			updated_at = excluded.updated_at
		RETURNING `+lexiconColumns)
	stored, err := scanLexicon(db.writer.QueryRowContext(ctx, q,
		l.ID, l.Type, string(l.JSON), l.Backfill,
		nullString(l.TargetCollection), nullString(l.Script), nullString(l.IndexHook), now, now))
	if err != nil {
		return storage.Lexicon{}, false, fmt.Errorf("put lexicon %s: %w", l.ID, err)
	}
	return stored, stored.Revision == 1, nil
}

// GetLexicon implements storage.LexiconStore.
func (db *DB) GetLexicon(ctx context.Context, id string) (storage.Lexicon, error) {
	l, err := scanLexicon(db.reader.QueryRowContext(ctx,
		Bind(db.dialect, `SELECT `+lexiconColumns+` FROM lexicons WHERE id = ?`), id))
	if errors.Is(err, sql.ErrNoRows) {
		return l, storage.ErrNotFound
	}
	if err != nil {
		return l, fmt.Errorf("get lexicon %s: %w", id, err)
	}
	return l, nil
}

// ListLexicons implements storage.LexiconStore.
func (db *DB) ListLexicons(ctx context.Context) ([]storage.Lexicon, error) {
	rows, err := db.reader.QueryContext(ctx, `SELECT `+lexiconColumns+` FROM lexicons ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("list lexicons: %w", err)
	}
	defer rows.Close()
	var out []storage.Lexicon
	for rows.Next() {
		l, err := scanLexicon(rows)
		if err != nil {
			return nil, fmt.Errorf("list lexicons: %w", err)
		}
		out = append(out, l)
	}
	return out, rows.Err()
}

// DeleteLexicon implements storage.LexiconStore.
func (db *DB) DeleteLexicon(ctx context.Context, id string) error {
	res, err := db.writer.ExecContext(ctx, Bind(db.dialect, `DELETE FROM lexicons WHERE id = ?`), id)
	if err != nil {
		return fmt.Errorf("delete lexicon %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return storage.ErrNotFound
	}
	return nil
}

func scanLexicon(row rowScanner) (storage.Lexicon, error) {
	var l storage.Lexicon
	var raw []byte
	var target, script, hook sql.NullString
	var created, updated Time
	err := row.Scan(&l.ID, &l.Revision, &l.Type, &raw, &l.Backfill, &target, &script, &hook, &created, &updated)
	if err != nil {
		return l, err
	}
	l.JSON = raw
	l.TargetCollection, l.Script, l.IndexHook = target.String, script.String, hook.String
	l.CreatedAt, l.UpdatedAt = created.T, updated.T
	return l, nil
}

func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }
