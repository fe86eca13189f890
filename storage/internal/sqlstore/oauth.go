package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/lexview/lexview/storage"
)

const provisionColumns = `id, handle_hash, client_id, sealed_key, jkt, pkce_challenge, created_at, expires_at, used_at`

const sessionColumns = `id, client_id, did, dpop_key_id, jkt, sealed_dpop_key, sealed_access_token, sealed_refresh_token,
	expires_at, scopes, pds_url, issuer, auth_kid, version, created_at, updated_at, app_token_hash, app_expires_at`

const authKeyColumns = `client_id, kid, sealed_private_key, public_jwk, status, created_at, retired_at, revoked_at`

// authKeySelect reads keys with the number of sessions pinned to each.
const authKeySelect = `SELECT ` + authKeyColumns + `,
	(SELECT COUNT(*) FROM device_sessions WHERE device_sessions.client_id = client_auth_keys.client_id
		AND device_sessions.auth_kid = client_auth_keys.kid)
	FROM client_auth_keys`

// timeOrNull stores the zero time as NULL.
func (db *DB) timeOrNull(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return db.dialect.Time(t)
}

func scanProvision(row rowScanner) (storage.DPoPProvision, error) {
	var p storage.DPoPProvision
	var pkce sql.NullString
	var created, expires, used Time
	err := row.Scan(&p.ID, &p.HandleHash, &p.ClientID, &p.SealedKey, &p.JKT, &pkce, &created, &expires, &used)
	p.PKCEChallenge = pkce.String
	p.CreatedAt, p.ExpiresAt, p.UsedAt = created.T, expires.T, used.T
	return p, err
}

func scanSession(row rowScanner) (storage.DeviceSession, error) {
	var s storage.DeviceSession
	var kid sql.NullString
	var expires, created, updated, appExpires Time
	err := row.Scan(&s.ID, &s.ClientID, &s.DID, &s.DPoPKeyID, &s.JKT, &s.SealedDPoPKey, &s.SealedAccessToken,
		&s.SealedRefreshToken, &expires, &s.Scopes, &s.PDSURL, &s.Issuer, &kid, &s.Version, &created, &updated,
		&s.AppTokenHash, &appExpires)
	s.AuthKID = kid.String
	s.ExpiresAt, s.CreatedAt, s.UpdatedAt, s.AppExpiresAt = expires.T, created.T, updated.T, appExpires.T
	return s, err
}

// scanAuthKey reads authKeyColumns, plus the session count when counted.
func scanAuthKey(counted bool) func(row rowScanner) (storage.ClientAuthKey, error) {
	return func(row rowScanner) (storage.ClientAuthKey, error) {
		var k storage.ClientAuthKey
		var jwk []byte
		var created, retired, revoked Time
		dest := []any{&k.ClientID, &k.KID, &k.SealedPrivateKey, &jwk, &k.Status, &created, &retired, &revoked}
		if counted {
			dest = append(dest, &k.SessionCount)
		}
		err := row.Scan(dest...)
		k.PublicJWK = jwk
		k.CreatedAt, k.RetiredAt, k.RevokedAt = created.T, retired.T, revoked.T
		return k, err
	}
}

// CreateDPoPProvision implements storage.OAuthStore.
func (db *DB) CreateDPoPProvision(ctx context.Context, p storage.DPoPProvision) error {
	_, err := db.exec(ctx, `INSERT INTO dpop_provisions (`+provisionColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		p.ID, p.HandleHash, p.ClientID, p.SealedKey, p.JKT, nullString(p.PKCEChallenge),
		db.dialect.Time(p.CreatedAt), db.dialect.Time(p.ExpiresAt), db.timeOrNull(p.UsedAt))
	return db.conflict("create DPoP provision", err)
}

// GetDPoPProvision implements storage.OAuthStore.
func (db *DB) GetDPoPProvision(ctx context.Context, clientID, handleHash string, now time.Time) (storage.DPoPProvision, error) {
	p, err := scanProvision(db.reader.QueryRowContext(ctx, Bind(db.dialect, `SELECT `+provisionColumns+`
		FROM dpop_provisions WHERE client_id = ? AND handle_hash = ? AND used_at IS NULL AND expires_at > ?`),
		clientID, handleHash, db.dialect.Time(now)))
	if err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return p, storage.ErrNotFound
		}
		return p, fmt.Errorf("get DPoP provision: %w", err)
	}
	return p, nil
}

// ConsumeDPoPProvision implements storage.OAuthStore.
func (db *DB) ConsumeDPoPProvision(ctx context.Context, clientID, handleHash string, now time.Time) (storage.DPoPProvision, error) {
	at := db.dialect.Time(now)
	p, err := scanProvision(db.writer.QueryRowContext(ctx, Bind(db.dialect, `UPDATE dpop_provisions SET used_at = ?
		WHERE client_id = ? AND handle_hash = ? AND used_at IS NULL AND expires_at > ?
		RETURNING `+provisionColumns), at, clientID, handleHash, at))
	if err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return p, storage.ErrNotFound
		}
		return p, fmt.Errorf("consume DPoP provision: %w", err)
	}
	return p, nil
}

// PurgeDPoPProvisions implements storage.OAuthStore.
func (db *DB) PurgeDPoPProvisions(ctx context.Context, before time.Time) (int64, error) {
	res, err := db.exec(ctx, `DELETE FROM dpop_provisions WHERE expires_at < ?`, db.dialect.Time(before))
	if err != nil {
		return 0, fmt.Errorf("purge DPoP provisions: %w", err)
	}
	return res.RowsAffected()
}

// CreateDeviceSession implements storage.OAuthStore.
func (db *DB) CreateDeviceSession(ctx context.Context, s storage.DeviceSession) error {
	_, err := db.exec(ctx, `INSERT INTO device_sessions (`+sessionColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?)`,
		s.ID, s.ClientID, s.DID, s.DPoPKeyID, s.JKT, s.SealedDPoPKey, s.SealedAccessToken, s.SealedRefreshToken,
		db.dialect.Time(s.ExpiresAt), s.Scopes, s.PDSURL, s.Issuer, nullString(s.AuthKID),
		db.dialect.Time(s.CreatedAt), db.dialect.Time(s.UpdatedAt), s.AppTokenHash, db.dialect.Time(s.AppExpiresAt))
	return db.conflict("create device session", err)
}

// GetDeviceSession implements storage.OAuthStore.
func (db *DB) GetDeviceSession(ctx context.Context, id string) (storage.DeviceSession, error) {
	s, err := scanSession(db.reader.QueryRowContext(ctx, Bind(db.dialect,
		`SELECT `+sessionColumns+` FROM device_sessions WHERE id = ?`), id))
	return s, notFound(err)
}

// GetDeviceSessionByJKT implements storage.OAuthStore.
func (db *DB) GetDeviceSessionByJKT(ctx context.Context, clientID, jkt string) (storage.DeviceSession, error) {
	s, err := scanSession(db.reader.QueryRowContext(ctx, Bind(db.dialect,
		`SELECT `+sessionColumns+` FROM device_sessions WHERE client_id = ? AND jkt = ?`), clientID, jkt))
	return s, notFound(err)
}

// ListDeviceSessions implements storage.OAuthStore.
func (db *DB) ListDeviceSessions(ctx context.Context, clientID, did string) ([]storage.DeviceSession, error) {
	out, err := queryAll(ctx, db.reader, Bind(db.dialect, `SELECT `+sessionColumns+` FROM device_sessions
		WHERE client_id = ? AND did = ? ORDER BY created_at DESC, id`), scanSession, clientID, did)
	if err != nil {
		return nil, fmt.Errorf("list device sessions: %w", err)
	}
	return out, nil
}

// DeleteDeviceSession implements storage.OAuthStore.
func (db *DB) DeleteDeviceSession(ctx context.Context, clientID, did, id string) error {
	return db.execOne(ctx, "delete device session",
		`DELETE FROM device_sessions WHERE id = ? AND client_id = ? AND did = ?`, id, clientID, did)
}

// DeleteDeviceSessions implements storage.OAuthStore.
func (db *DB) DeleteDeviceSessions(ctx context.Context, clientID, did string) (int64, error) {
	res, err := db.exec(ctx, `DELETE FROM device_sessions WHERE client_id = ? AND did = ?`, clientID, did)
	if err != nil {
		return 0, fmt.Errorf("delete device sessions: %w", err)
	}
	return res.RowsAffected()
}

// UpdateDeviceSessionTokens implements storage.OAuthStore.
func (db *DB) UpdateDeviceSessionTokens(ctx context.Context, t storage.SessionTokens) (storage.DeviceSession, error) {
	s, err := scanSession(db.writer.QueryRowContext(ctx, Bind(db.dialect, `UPDATE device_sessions
		SET sealed_access_token = ?, sealed_refresh_token = ?, expires_at = ?,
			scopes = COALESCE(NULLIF(?::text, ''), scopes), version = version + 1, updated_at = ?
		WHERE id = ? AND version = ?
		RETURNING `+sessionColumns),
		t.SealedAccessToken, t.SealedRefreshToken, db.dialect.Time(t.ExpiresAt), t.Scopes, db.dialect.Time(t.UpdatedAt),
		t.SessionID, t.Version))
	if err == nil {
		return s, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return s, fmt.Errorf("update device session tokens: %w", err)
	}
	if _, err := db.GetDeviceSession(ctx, t.SessionID); err != nil {
		return storage.DeviceSession{}, err // ErrNotFound: the session is gone
	}
	return storage.DeviceSession{}, storage.ErrStale
}

// CreateClientAuthKey implements storage.OAuthStore.
func (db *DB) CreateClientAuthKey(ctx context.Context, k storage.ClientAuthKey) (storage.ClientAuthKey, bool, error) {
	if cur, err := db.GetCurrentClientAuthKey(ctx, k.ClientID); err == nil {
		return cur, false, nil
	} else if !errors.Is(err, storage.ErrNotFound) {
		return cur, false, err
	}
	_, err := db.exec(ctx, `INSERT INTO client_auth_keys (`+authKeyColumns+`) VALUES (?, ?, ?, ?::jsonb, ?, ?, NULL, NULL)`,
		k.ClientID, k.KID, k.SealedPrivateKey, string(k.PublicJWK), storage.AuthKeyCurrent, db.dialect.Time(k.CreatedAt))
	if err == nil {
		k.Status, k.SessionCount, k.RetiredAt, k.RevokedAt = storage.AuthKeyCurrent, 0, time.Time{}, time.Time{}
		return k, true, nil
	}
	if !db.dialect.IsUniqueViolation(err) {
		return k, false, fmt.Errorf("create client auth key: %w", err)
	}
	// A concurrent creation won: return its key. Otherwise the kid is taken.
	if cur, err := db.GetCurrentClientAuthKey(ctx, k.ClientID); err == nil {
		return cur, false, nil
	}
	return k, false, storage.ErrConflict
}

// RotateClientAuthKey implements storage.OAuthStore.
func (db *DB) RotateClientAuthKey(ctx context.Context, clientID string, next storage.ClientAuthKey, at time.Time) (storage.ClientAuthKey, error) {
	var retired storage.ClientAuthKey
	err := db.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		retired, err = scanAuthKey(false)(tx.QueryRowContext(ctx, Bind(db.dialect, `UPDATE client_auth_keys
			SET status = ?, retired_at = ? WHERE client_id = ? AND status = ? RETURNING `+authKeyColumns),
			storage.AuthKeyRetiring, db.dialect.Time(at), clientID, storage.AuthKeyCurrent))
		if errors.Is(err, sql.ErrNoRows) {
			return storage.ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("retire client auth key: %w", err)
		}
		_, err = tx.ExecContext(ctx, Bind(db.dialect, `INSERT INTO client_auth_keys (`+authKeyColumns+`)
			VALUES (?, ?, ?, ?::jsonb, ?, ?, NULL, NULL)`),
			clientID, next.KID, next.SealedPrivateKey, string(next.PublicJWK), storage.AuthKeyCurrent, db.dialect.Time(next.CreatedAt))
		return db.conflict("insert rotated client auth key", err)
	})
	if err != nil {
		return storage.ClientAuthKey{}, err
	}
	retired.SessionCount, err = db.countKeySessions(ctx, clientID, retired.KID)
	return retired, err
}

func (db *DB) countKeySessions(ctx context.Context, clientID, kid string) (int64, error) {
	var n int64
	err := db.reader.QueryRowContext(ctx, Bind(db.dialect,
		`SELECT COUNT(*) FROM device_sessions WHERE client_id = ? AND auth_kid = ?`), clientID, kid).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count key sessions: %w", err)
	}
	return n, nil
}

// GetClientAuthKey implements storage.OAuthStore.
func (db *DB) GetClientAuthKey(ctx context.Context, clientID, kid string) (storage.ClientAuthKey, error) {
	k, err := scanAuthKey(true)(db.reader.QueryRowContext(ctx, Bind(db.dialect,
		authKeySelect+` WHERE client_id = ? AND kid = ?`), clientID, kid))
	return k, notFound(err)
}

// GetCurrentClientAuthKey implements storage.OAuthStore.
func (db *DB) GetCurrentClientAuthKey(ctx context.Context, clientID string) (storage.ClientAuthKey, error) {
	k, err := scanAuthKey(true)(db.reader.QueryRowContext(ctx, Bind(db.dialect,
		authKeySelect+` WHERE client_id = ? AND status = ?`), clientID, storage.AuthKeyCurrent))
	return k, notFound(err)
}

// ListClientAuthKeys implements storage.OAuthStore.
func (db *DB) ListClientAuthKeys(ctx context.Context, clientID string) ([]storage.ClientAuthKey, error) {
	out, err := queryAll(ctx, db.reader, Bind(db.dialect, authKeySelect+` WHERE client_id = ? ORDER BY created_at DESC, kid`),
		scanAuthKey(true), clientID)
	if err != nil {
		return nil, fmt.Errorf("list client auth keys: %w", err)
	}
	return out, nil
}

// RevokeClientAuthKey implements storage.OAuthStore.
func (db *DB) RevokeClientAuthKey(ctx context.Context, clientID, kid string, at time.Time) (int64, error) {
	var sessions int64
	err := db.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, Bind(db.dialect, `UPDATE client_auth_keys SET status = ?, revoked_at = ?
			WHERE client_id = ? AND kid = ? AND status = ?`),
			storage.AuthKeyRevoked, db.dialect.Time(at), clientID, kid, storage.AuthKeyRetiring)
		if err != nil {
			return fmt.Errorf("revoke client auth key: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			var status string
			err := tx.QueryRowContext(ctx, Bind(db.dialect, `SELECT status FROM client_auth_keys WHERE client_id = ? AND kid = ?`),
				clientID, kid).Scan(&status)
			switch {
			case errors.Is(err, sql.ErrNoRows):
				return storage.ErrNotFound
			case err != nil:
				return fmt.Errorf("revoke client auth key: %w", err)
			case status == storage.AuthKeyCurrent:
				return storage.ErrCurrentKey
			}
			return nil // already revoked
		}
		res, err = tx.ExecContext(ctx, Bind(db.dialect, `DELETE FROM device_sessions WHERE client_id = ? AND auth_kid = ?`), clientID, kid)
		if err != nil {
			return fmt.Errorf("delete sessions of revoked key: %w", err)
		}
		sessions, err = res.RowsAffected()
		return err
	})
	return sessions, err
}

// RevokeAllClientAuthKeys implements storage.OAuthStore.
func (db *DB) RevokeAllClientAuthKeys(ctx context.Context, clientID string, at time.Time) (int64, int64, error) {
	var keys, sessions int64
	err := db.inTx(ctx, func(tx *sql.Tx) error {
		// The client holds the keys it has not revoked; with none, nothing
		// changes.
		res, err := tx.ExecContext(ctx, Bind(db.dialect, `UPDATE client_auth_keys SET status = ?, revoked_at = ?
			WHERE client_id = ? AND status <> ?`), storage.AuthKeyRevoked, db.dialect.Time(at), clientID, storage.AuthKeyRevoked)
		if err != nil {
			return fmt.Errorf("revoke all client auth keys: %w", err)
		}
		if keys, err = res.RowsAffected(); err != nil {
			return err
		}
		if keys == 0 {
			return storage.ErrNotFound
		}
		res, err = tx.ExecContext(ctx, Bind(db.dialect, `DELETE FROM device_sessions WHERE client_id = ? AND auth_kid IN
			(SELECT kid FROM client_auth_keys WHERE client_id = ?)`), clientID, clientID)
		if err != nil {
			return fmt.Errorf("delete sessions of revoked keys: %w", err)
		}
		sessions, err = res.RowsAffected()
		return err
	})
	return keys, sessions, err
}

// SweepRetiringClientAuthKeys implements storage.OAuthStore.
func (db *DB) SweepRetiringClientAuthKeys(ctx context.Context, retiredBefore time.Time) ([]storage.ClientAuthKey, error) {
	rows, err := db.writer.QueryContext(ctx, Bind(db.dialect, `DELETE FROM client_auth_keys
		WHERE status = ? AND retired_at < ? AND NOT EXISTS (SELECT 1 FROM device_sessions
			WHERE device_sessions.client_id = client_auth_keys.client_id AND device_sessions.auth_kid = client_auth_keys.kid)
		RETURNING `+authKeyColumns), storage.AuthKeyRetiring, db.dialect.Time(retiredBefore))
	if err != nil {
		return nil, fmt.Errorf("sweep retiring client auth keys: %w", err)
	}
	defer rows.Close()
	out := []storage.ClientAuthKey{}
	for rows.Next() {
		k, err := scanAuthKey(false)(rows)
		if err != nil {
			return nil, fmt.Errorf("sweep retiring client auth keys: %w", err)
		}
		out = append(out, k)
	}
	return out, rows.Err()
}
