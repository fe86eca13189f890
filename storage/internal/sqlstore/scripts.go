package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lexview/lexview/storage"
)

const scriptColumns = `id, trigger, source, description, revision, created_at, updated_at`

func scanScript(row rowScanner) (storage.Script, error) {
	var s storage.Script
	var created, updated Time
	if err := row.Scan(&s.ID, &s.Trigger, &s.Source, &s.Description, &s.Revision, &created, &updated); err != nil {
		return s, err
	}
	s.CreatedAt, s.UpdatedAt = created.T, updated.T
	return s, nil
}

// PutScript implements storage.ScriptStore. The upsert keys on the
// trigger; the revision grows only when the source differs.
func (db *DB) PutScript(ctx context.Context, s storage.Script) (storage.Script, bool, error) {
	if s.Trigger == "" {
		return storage.Script{}, false, errors.New("put script: a trigger is required")
	}
	id := storage.NewID()
	now := db.dialect.Time(time.Now())
	stored, err := scanScript(db.writer.QueryRowContext(ctx, Bind(db.dialect, `INSERT INTO scripts (`+scriptColumns+`)
		VALUES (?, ?, ?, ?, 1, ?, ?)
		ON CONFLICT (trigger) DO UPDATE SET
			revision = CASE WHEN scripts.source = excluded.source THEN scripts.revision ELSE scripts.revision + 1 END,
			source = excluded.source,
			description = excluded.description,
			updated_at = excluded.updated_at
		RETURNING `+scriptColumns),
		id, s.Trigger, s.Source, s.Description, now, now))
	if err != nil {
		return storage.Script{}, false, fmt.Errorf("put script %s: %w", s.Trigger, err)
	}
	return stored, stored.ID == id, nil
}

// UpdateScript implements storage.ScriptStore.
func (db *DB) UpdateScript(ctx context.Context, id string, source, description *string) (storage.Script, error) {
	if source == nil && description == nil {
		return db.GetScript(ctx, id)
	}
	var src, desc any
	if source != nil {
		src = *source
	}
	if description != nil {
		desc = *description
	}
	s, err := scanScript(db.writer.QueryRowContext(ctx, Bind(db.dialect, `UPDATE scripts SET
			revision = CASE WHEN ?::text IS NOT NULL AND ?::text <> source THEN revision + 1 ELSE revision END,
			source = COALESCE(?::text, source),
			description = COALESCE(?::text, description),
			updated_at = ?
		WHERE id = ?
		RETURNING `+scriptColumns),
		src, src, src, desc, db.dialect.Time(time.Now()), id))
	if err != nil {
		if err = notFound(err); errors.Is(err, storage.ErrNotFound) {
			return storage.Script{}, err
		}
		return storage.Script{}, fmt.Errorf("update script %s: %w", id, err)
	}
	return s, nil
}

// GetScript implements storage.ScriptStore.
func (db *DB) GetScript(ctx context.Context, id string) (storage.Script, error) {
	s, err := scanScript(db.reader.QueryRowContext(ctx,
		Bind(db.dialect, `SELECT `+scriptColumns+` FROM scripts WHERE id = ?`), id))
	if err = notFound(err); err != nil && !errors.Is(err, storage.ErrNotFound) {
		err = fmt.Errorf("get script %s: %w", id, err)
	}
	return s, err
}

// ListScripts implements storage.ScriptStore.
func (db *DB) ListScripts(ctx context.Context) ([]storage.Script, error) {
	out, err := queryAll(ctx, db.reader, `SELECT `+scriptColumns+` FROM scripts ORDER BY trigger`, scanScript)
	if err != nil {
		return nil, fmt.Errorf("list scripts: %w", err)
	}
	return out, nil
}

// DeleteScript implements storage.ScriptStore.
func (db *DB) DeleteScript(ctx context.Context, id string) error {
	return db.execOne(ctx, "delete script", `DELETE FROM scripts WHERE id = ?`, id)
}

// PutScriptVariable implements storage.ScriptStore.
func (db *DB) PutScriptVariable(ctx context.Context, v storage.ScriptVariable) error {
	if v.Key == "" {
		return errors.New("put script variable: a key is required")
	}
	now := time.Now()
	if v.CreatedAt.IsZero() {
		v.CreatedAt = now
	}
	if v.UpdatedAt.IsZero() {
		v.UpdatedAt = now
	}
	_, err := db.exec(ctx, `INSERT INTO script_variables (key, sealed, created_at, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (key) DO UPDATE SET sealed = excluded.sealed, updated_at = excluded.updated_at`,
		v.Key, v.Sealed, db.dialect.Time(v.CreatedAt), db.dialect.Time(v.UpdatedAt))
	if err != nil {
		return fmt.Errorf("put script variable %s: %w", v.Key, err)
	}
	return nil
}

// ListScriptVariables implements storage.ScriptStore.
func (db *DB) ListScriptVariables(ctx context.Context) ([]storage.ScriptVariable, error) {
	out, err := queryAll(ctx, db.reader, `SELECT key, sealed, created_at, updated_at FROM script_variables ORDER BY key`,
		func(row rowScanner) (storage.ScriptVariable, error) {
			var v storage.ScriptVariable
			var created, updated Time
			err := row.Scan(&v.Key, &v.Sealed, &created, &updated)
			v.CreatedAt, v.UpdatedAt = created.T, updated.T
			return v, err
		})
	if err != nil {
		return nil, fmt.Errorf("list script variables: %w", err)
	}
	return out, nil
}

// DeleteScriptVariable implements storage.ScriptStore.
func (db *DB) DeleteScriptVariable(ctx context.Context, key string) error {
	return db.execOne(ctx, "delete script variable", `DELETE FROM script_variables WHERE key = ?`, key)
}
