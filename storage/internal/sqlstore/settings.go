package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/lexview/lexview/storage"
)

// ListSettings implements storage.SettingsStore.
func (db *DB) ListSettings(ctx context.Context) (map[string]string, error) {
	rows, err := db.reader.QueryContext(ctx, `SELECT key, value FROM settings ORDER BY key`)
	if err != nil {
		return nil, fmt.Errorf("list settings: %w", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, rows.Err()
}

// GetSetting implements storage.SettingsStore.
func (db *DB) GetSetting(ctx context.Context, key string) (string, error) {
	var v string
	err := db.reader.QueryRowContext(ctx, Bind(db.dialect, `SELECT value FROM settings WHERE key = ?`), key).Scan(&v)
	return v, notFound(err)
}

// PutSetting implements storage.SettingsStore.
func (db *DB) PutSetting(ctx context.Context, key, value string) error {
	_, err := db.exec(ctx, `INSERT INTO settings (key, value, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
		key, value, db.dialect.Time(time.Now()))
	return err
}

// DeleteSetting implements storage.SettingsStore.
func (db *DB) DeleteSetting(ctx context.Context, key string) error {
	return db.execOne(ctx, "delete setting", `DELETE FROM settings WHERE key = ?`, key)
}

// PutBlob implements storage.SettingsStore.
func (db *DB) PutBlob(ctx context.Context, key string, b storage.Blob) error {
	_, err := db.exec(ctx, `INSERT INTO setting_blobs (key, content_type, data, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (key) DO UPDATE SET content_type = excluded.content_type, data = excluded.data, updated_at = excluded.updated_at`,
		key, b.ContentType, b.Data, db.dialect.Time(time.Now()))
	return err
}

// GetBlob implements storage.SettingsStore.
func (db *DB) GetBlob(ctx context.Context, key string) (storage.Blob, error) {
	var b storage.Blob
	var at Time
	err := db.reader.QueryRowContext(ctx, Bind(db.dialect, `SELECT content_type, data, updated_at FROM setting_blobs WHERE key = ?`), key).
		Scan(&b.ContentType, &b.Data, &at)
	b.UpdatedAt = at.T
	return b, notFound(err)
}

// DeleteBlob implements storage.SettingsStore.
func (db *DB) DeleteBlob(ctx context.Context, key string) error {
	return db.execOne(ctx, "delete blob", `DELETE FROM setting_blobs WHERE key = ?`, key)
}

// CollectionCounts implements storage.OperatorStore.
func (db *DB) CollectionCounts(ctx context.Context) ([]storage.CollectionCount, error) {
	return queryAll(ctx, db.reader, `SELECT collection, COUNT(*) FROM records GROUP BY collection ORDER BY COUNT(*) DESC, collection`,
		func(row rowScanner) (storage.CollectionCount, error) {
			var c storage.CollectionCount
			err := row.Scan(&c.Collection, &c.Count)
			return c, err
		})
}

// DeleteCollection implements storage.OperatorStore.
func (db *DB) DeleteCollection(ctx context.Context, collection string) (int64, error) {
	res, err := db.exec(ctx, `DELETE FROM records WHERE collection = ?`, collection)
	if err != nil {
		return 0, fmt.Errorf("delete collection: %w", err)
	}
	return res.RowsAffected()
}

// DBInfo implements storage.OperatorStore.
func (db *DB) DBInfo(ctx context.Context) (storage.DBInfo, error) {
	return db.dialect.DBInfo(ctx, db)
}
