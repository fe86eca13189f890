package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lexview/lexview/storage"
)

const authRequestColumns = `state, purpose, subject, domain_origin, client_id, account_did, sealed_data, created_at, expires_at`

func scanAuthRequest(row rowScanner) (storage.OAuthAuthRequest, error) {
	var r storage.OAuthAuthRequest
	var created, expires Time
	err := row.Scan(&r.State, &r.Purpose, &r.Subject, &r.DomainOrigin, &r.ClientID, &r.AccountDID, &r.SealedData,
		&created, &expires)
	r.CreatedAt, r.ExpiresAt = created.T, expires.T
	return r, err
}

// CreateOAuthAuthRequest implements storage.OAuthClientStore.
func (db *DB) CreateOAuthAuthRequest(ctx context.Context, r storage.OAuthAuthRequest) error {
	_, err := db.exec(ctx, `INSERT INTO oauth_client_requests (`+authRequestColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.State, r.Purpose, r.Subject, r.DomainOrigin, r.ClientID, r.AccountDID, r.SealedData,
		db.dialect.Time(r.CreatedAt), db.dialect.Time(r.ExpiresAt))
	return db.conflict("create oauth auth request", err)
}

// TakeOAuthAuthRequest implements storage.OAuthClientStore.
func (db *DB) TakeOAuthAuthRequest(ctx context.Context, state string, now time.Time) (storage.OAuthAuthRequest, error) {
	r, err := scanAuthRequest(db.writer.QueryRowContext(ctx, Bind(db.dialect,
		`DELETE FROM oauth_client_requests WHERE state = ? RETURNING `+authRequestColumns), state))
	if err = notFound(err); errors.Is(err, storage.ErrNotFound) {
		return storage.OAuthAuthRequest{}, err
	} else if err != nil {
		return storage.OAuthAuthRequest{}, fmt.Errorf("take oauth auth request: %w", err)
	}
	if !r.ExpiresAt.After(now) {
		return storage.OAuthAuthRequest{}, storage.ErrNotFound
	}
	return r, nil
}

// DeleteExpiredOAuthAuthRequests implements storage.OAuthClientStore.
func (db *DB) DeleteExpiredOAuthAuthRequests(ctx context.Context, now time.Time) (int64, error) {
	res, err := db.exec(ctx, `DELETE FROM oauth_client_requests WHERE expires_at <= ?`, db.dialect.Time(now))
	if err != nil {
		return 0, fmt.Errorf("delete expired oauth auth requests: %w", err)
	}
	return res.RowsAffected()
}

const clientSessionColumns = `did, session_id, purpose, domain_origin, client_id, sealed_data, created_at, updated_at`

func scanClientSession(row rowScanner) (storage.OAuthClientSession, error) {
	var s storage.OAuthClientSession
	var created, updated Time
	err := row.Scan(&s.DID, &s.SessionID, &s.Purpose, &s.DomainOrigin, &s.ClientID, &s.SealedData, &created, &updated)
	s.CreatedAt, s.UpdatedAt = created.T, updated.T
	return s, err
}

// PutOAuthClientSession implements storage.OAuthClientStore.
func (db *DB) PutOAuthClientSession(ctx context.Context, s storage.OAuthClientSession) error {
	_, err := db.exec(ctx, `INSERT INTO oauth_client_sessions (`+clientSessionColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (did, session_id) DO UPDATE SET purpose = excluded.purpose, domain_origin = excluded.domain_origin,
			client_id = excluded.client_id, sealed_data = excluded.sealed_data, updated_at = excluded.updated_at`,
		s.DID, s.SessionID, s.Purpose, s.DomainOrigin, s.ClientID, s.SealedData,
		db.dialect.Time(s.CreatedAt), db.dialect.Time(s.UpdatedAt))
	if err != nil {
		return fmt.Errorf("put oauth client session: %w", err)
	}
	return nil
}

// GetOAuthClientSession implements storage.OAuthClientStore.
func (db *DB) GetOAuthClientSession(ctx context.Context, did, sessionID string) (storage.OAuthClientSession, error) {
	s, err := scanClientSession(db.reader.QueryRowContext(ctx, Bind(db.dialect,
		`SELECT `+clientSessionColumns+` FROM oauth_client_sessions WHERE did = ? AND session_id = ?`), did, sessionID))
	return s, notFound(err)
}

// DeleteOAuthClientSession implements storage.OAuthClientStore.
func (db *DB) DeleteOAuthClientSession(ctx context.Context, did, sessionID string) error {
	return db.execOne(ctx, "delete oauth client session",
		`DELETE FROM oauth_client_sessions WHERE did = ? AND session_id = ?`, did, sessionID)
}
