package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lexview/lexview/storage"
)

const pluginAccountColumns = `plugin_id, did, session_id, external_id, external_name, sealed_tokens, sync_cursor,
	connected_at, updated_at, last_sync_at`

func scanPluginAccount(row rowScanner) (storage.PluginAccount, error) {
	var a storage.PluginAccount
	var connected, updated, synced Time
	err := row.Scan(&a.PluginID, &a.DID, &a.SessionID, &a.ExternalID, &a.ExternalName, &a.SealedTokens, &a.Cursor,
		&connected, &updated, &synced)
	a.ConnectedAt, a.UpdatedAt, a.LastSyncAt = connected.T, updated.T, synced.T
	return a, err
}

// PutPluginAccount implements storage.PluginAccountStore.
func (db *DB) PutPluginAccount(ctx context.Context, a storage.PluginAccount) error {
	if a.PluginID == "" || a.DID == "" {
		return errors.New("put plugin account: a plugin id and a DID are required")
	}
	now := time.Now()
	if a.ConnectedAt.IsZero() {
		a.ConnectedAt = now
	}
	if a.UpdatedAt.IsZero() {
		a.UpdatedAt = now
	}
	_, err := db.exec(ctx, `INSERT INTO plugin_accounts (`+pluginAccountColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (plugin_id, did) DO UPDATE SET session_id = excluded.session_id, external_id = excluded.external_id,
			external_name = excluded.external_name, sealed_tokens = excluded.sealed_tokens, sync_cursor = excluded.sync_cursor,
			updated_at = excluded.updated_at, last_sync_at = excluded.last_sync_at`,
		a.PluginID, a.DID, a.SessionID, a.ExternalID, a.ExternalName, a.SealedTokens, a.Cursor,
		db.dialect.Time(a.ConnectedAt), db.dialect.Time(a.UpdatedAt), db.nullTime(a.LastSyncAt))
	if err != nil {
		return fmt.Errorf("put plugin account %s/%s: %w", a.PluginID, a.DID, err)
	}
	return nil
}

// GetPluginAccount implements storage.PluginAccountStore.
func (db *DB) GetPluginAccount(ctx context.Context, pluginID, did string) (storage.PluginAccount, error) {
	a, err := scanPluginAccount(db.reader.QueryRowContext(ctx, Bind(db.dialect,
		`SELECT `+pluginAccountColumns+` FROM plugin_accounts WHERE plugin_id = ? AND did = ?`), pluginID, did))
	return a, notFound(err)
}

// DeletePluginAccount implements storage.PluginAccountStore.
func (db *DB) DeletePluginAccount(ctx context.Context, pluginID, did string) error {
	return db.execOne(ctx, "delete plugin account", `DELETE FROM plugin_accounts WHERE plugin_id = ? AND did = ?`, pluginID, did)
}
