package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/lexview/lexview/storage"
)

const pluginColumns = `id, url, sha256, manifest, wasm, enabled, installed_at, updated_at`

func scanPlugin(row rowScanner) (storage.Plugin, error) {
	var p storage.Plugin
	var sum sql.NullString
	var installed, updated Time
	err := row.Scan(&p.ID, &p.URL, &sum, &p.Manifest, &p.WASM, &p.Enabled, &installed, &updated)
	p.SHA256, p.InstalledAt, p.UpdatedAt = sum.String, installed.T, updated.T
	return p, err
}

// PutPlugin implements storage.PluginStore.
func (db *DB) PutPlugin(ctx context.Context, p storage.Plugin) error {
	if p.ID == "" {
		return errors.New("put plugin: an id is required")
	}
	now := time.Now()
	if p.InstalledAt.IsZero() {
		p.InstalledAt = now
	}
	if p.UpdatedAt.IsZero() {
		p.UpdatedAt = now
	}
	_, err := db.exec(ctx, `INSERT INTO plugins (`+pluginColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET url = excluded.url, sha256 = excluded.sha256, manifest = excluded.manifest,
			wasm = excluded.wasm, enabled = excluded.enabled, updated_at = excluded.updated_at`,
		p.ID, p.URL, nullString(p.SHA256), p.Manifest, p.WASM, p.Enabled,
		db.dialect.Time(p.InstalledAt), db.dialect.Time(p.UpdatedAt))
	if err != nil {
		return fmt.Errorf("put plugin %s: %w", p.ID, err)
	}
	return nil
}

// GetPlugin implements storage.PluginStore.
func (db *DB) GetPlugin(ctx context.Context, id string) (storage.Plugin, error) {
	p, err := scanPlugin(db.reader.QueryRowContext(ctx, Bind(db.dialect, `SELECT `+pluginColumns+` FROM plugins WHERE id = ?`), id))
	return p, notFound(err)
}

// ListPlugins implements storage.PluginStore.
func (db *DB) ListPlugins(ctx context.Context) ([]storage.Plugin, error) {
	out, err := queryAll(ctx, db.reader, `SELECT `+pluginColumns+` FROM plugins ORDER BY id`, scanPlugin)
	if err != nil {
		return nil, fmt.Errorf("list plugins: %w", err)
	}
	return out, nil
}

// DeletePlugin implements storage.PluginStore; the secrets stay.
func (db *DB) DeletePlugin(ctx context.Context, id string) error {
	return db.execOne(ctx, "delete plugin", `DELETE FROM plugins WHERE id = ?`, id)
}

// ListPluginSecrets implements storage.PluginStore.
func (db *DB) ListPluginSecrets(ctx context.Context, pluginID string) ([]storage.PluginSecret, error) {
	out, err := queryAll(ctx, db.reader, Bind(db.dialect, `SELECT plugin_id, key, sealed, updated_at FROM plugin_secrets WHERE plugin_id = ? ORDER BY key`),
		func(row rowScanner) (storage.PluginSecret, error) {
			var s storage.PluginSecret
			var updated Time
			err := row.Scan(&s.PluginID, &s.Key, &s.Sealed, &updated)
			s.UpdatedAt = updated.T
			return s, err
		}, pluginID)
	if err != nil {
		return nil, fmt.Errorf("list plugin secrets: %w", err)
	}
	return out, nil
}

// UpdatePluginSecrets implements storage.PluginStore.
func (db *DB) UpdatePluginSecrets(ctx context.Context, pluginID string, set []storage.PluginSecret, clear []string) error {
	now := time.Now()
	return db.inTx(ctx, func(tx *sql.Tx) error {
		for _, s := range set {
			if s.UpdatedAt.IsZero() {
				s.UpdatedAt = now
			}
			_, err := tx.ExecContext(ctx, Bind(db.dialect, `INSERT INTO plugin_secrets (plugin_id, key, sealed, updated_at) VALUES (?, ?, ?, ?)
				ON CONFLICT (plugin_id, key) DO UPDATE SET sealed = excluded.sealed, updated_at = excluded.updated_at`),
				pluginID, s.Key, s.Sealed, db.dialect.Time(s.UpdatedAt))
			if err != nil {
				return fmt.Errorf("put plugin secret %s/%s: %w", pluginID, s.Key, err)
			}
		}
		for _, key := range clear {
			if _, err := tx.ExecContext(ctx, Bind(db.dialect, `DELETE FROM plugin_secrets WHERE plugin_id = ? AND key = ?`), pluginID, key); err != nil {
				return fmt.Errorf("clear plugin secret %s/%s: %w", pluginID, key, err)
			}
		}
		return nil
	})
}
