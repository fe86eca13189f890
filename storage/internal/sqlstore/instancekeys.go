package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/lexview/lexview/storage"
)

const instanceKeyColumns = `kid, sealed_private_key, public_jwk, status, created_at, retired_at, revoked_at`

func scanInstanceKey(row rowScanner) (storage.ClientAuthKey, error) {
	var k storage.ClientAuthKey
	var jwk []byte
	var created, retired, revoked Time
	err := row.Scan(&k.KID, &k.SealedPrivateKey, &jwk, &k.Status, &created, &retired, &revoked)
	k.PublicJWK = jwk
	k.CreatedAt, k.RetiredAt, k.RevokedAt = created.T, retired.T, revoked.T
	return k, err
}

func (db *DB) currentInstanceKey(ctx context.Context) (storage.ClientAuthKey, error) {
	k, err := scanInstanceKey(db.reader.QueryRowContext(ctx, Bind(db.dialect,
		`SELECT `+instanceKeyColumns+` FROM instance_oauth_keys WHERE status = ?`), storage.AuthKeyCurrent))
	return k, notFound(err)
}

// CreateInstanceKey implements storage.InstanceKeyStore.
func (db *DB) CreateInstanceKey(ctx context.Context, k storage.ClientAuthKey) (storage.ClientAuthKey, bool, error) {
	if cur, err := db.currentInstanceKey(ctx); err == nil {
		return cur, false, nil
	} else if !errors.Is(err, storage.ErrNotFound) {
		return cur, false, err
	}
	_, err := db.exec(ctx, `INSERT INTO instance_oauth_keys (`+instanceKeyColumns+`) VALUES (?, ?, ?::jsonb, ?, ?, NULL, NULL)`,
		k.KID, k.SealedPrivateKey, string(k.PublicJWK), storage.AuthKeyCurrent, db.dialect.Time(k.CreatedAt))
	if err == nil {
		k.ClientID, k.Status, k.SessionCount, k.RetiredAt, k.RevokedAt = "", storage.AuthKeyCurrent, 0, time.Time{}, time.Time{}
		return k, true, nil
	}
	if !db.dialect.IsUniqueViolation(err) {
		return k, false, fmt.Errorf("create instance key: %w", err)
	}
	// A concurrent creation won: return its key. Otherwise the kid is taken.
	if cur, err := db.currentInstanceKey(ctx); err == nil {
		return cur, false, nil
	}
	return k, false, storage.ErrConflict
}

// RotateInstanceKey implements storage.InstanceKeyStore.
func (db *DB) RotateInstanceKey(ctx context.Context, next storage.ClientAuthKey, at time.Time) (storage.ClientAuthKey, error) {
	var retired storage.ClientAuthKey
	err := db.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		retired, err = scanInstanceKey(tx.QueryRowContext(ctx, Bind(db.dialect, `UPDATE instance_oauth_keys
			SET status = ?, retired_at = ? WHERE status = ? RETURNING `+instanceKeyColumns),
			storage.AuthKeyRetiring, db.dialect.Time(at), storage.AuthKeyCurrent))
		if errors.Is(err, sql.ErrNoRows) {
			return storage.ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("retire instance key: %w", err)
		}
		_, err = tx.ExecContext(ctx, Bind(db.dialect, `INSERT INTO instance_oauth_keys (`+instanceKeyColumns+`)
			VALUES (?, ?, ?::jsonb, ?, ?, NULL, NULL)`),
			next.KID, next.SealedPrivateKey, string(next.PublicJWK), storage.AuthKeyCurrent, db.dialect.Time(next.CreatedAt))
		return db.conflict("insert rotated instance key", err)
	})
	if err != nil {
		return storage.ClientAuthKey{}, err
	}
	return retired, nil
}

// GetInstanceKey implements storage.InstanceKeyStore.
func (db *DB) GetInstanceKey(ctx context.Context, kid string) (storage.ClientAuthKey, error) {
	k, err := scanInstanceKey(db.reader.QueryRowContext(ctx, Bind(db.dialect,
		`SELECT `+instanceKeyColumns+` FROM instance_oauth_keys WHERE kid = ?`), kid))
	return k, notFound(err)
}

// ListInstanceKeys implements storage.InstanceKeyStore.
func (db *DB) ListInstanceKeys(ctx context.Context) ([]storage.ClientAuthKey, error) {
	out, err := queryAll(ctx, db.reader,
		`SELECT `+instanceKeyColumns+` FROM instance_oauth_keys ORDER BY created_at DESC, kid`, scanInstanceKey)
	if err != nil {
		return nil, fmt.Errorf("list instance keys: %w", err)
	}
	return out, nil
}

// RevokeInstanceKey implements storage.InstanceKeyStore.
func (db *DB) RevokeInstanceKey(ctx context.Context, kid string, at time.Time) error {
	res, err := db.exec(ctx, `UPDATE instance_oauth_keys SET status = ?, revoked_at = ? WHERE kid = ? AND status = ?`,
		storage.AuthKeyRevoked, db.dialect.Time(at), kid, storage.AuthKeyRetiring)
	if err != nil {
		return fmt.Errorf("revoke instance key: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil
	}
	k, err := db.GetInstanceKey(ctx, kid)
	switch {
	case err != nil:
		return err // storage.ErrNotFound when unknown
	case k.Status == storage.AuthKeyCurrent:
		return storage.ErrCurrentKey
	}
	return nil // already revoked
}
