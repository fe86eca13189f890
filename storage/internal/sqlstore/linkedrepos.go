package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/lexview/lexview/storage"
)

const linkedRepoColumns = `id, did, handle, reason, scopes, status, last_error, last_refreshed_at, authorized_at, created_by, created_at`

func scanLinkedRepo(row rowScanner) (storage.LinkedRepoGrant, error) {
	var g storage.LinkedRepoGrant
	var did, handle, lastErr sql.NullString
	var refreshed, authorized, created Time
	err := row.Scan(&g.ID, &did, &handle, &g.Reason, &g.Scopes, &g.Status, &lastErr, &refreshed, &authorized, &g.CreatedBy, &created)
	g.DID, g.Handle, g.LastError = did.String, handle.String, lastErr.String
	g.LastRefreshedAt, g.AuthorizedAt, g.CreatedAt = refreshed.T, authorized.T, created.T
	return g, err
}

// CreateLinkedRepo implements storage.LinkedRepoStore.
func (db *DB) CreateLinkedRepo(ctx context.Context, g storage.LinkedRepoGrant) error {
	_, err := db.exec(ctx, `INSERT INTO linked_repos (`+linkedRepoColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		g.ID, nullString(g.DID), nullString(g.Handle), g.Reason, g.Scopes, g.Status, nullString(g.LastError),
		db.nullTime(g.LastRefreshedAt), db.nullTime(g.AuthorizedAt), g.CreatedBy, db.dialect.Time(g.CreatedAt))
	return db.conflict("create linked repo", err)
}

// GetLinkedRepo implements storage.LinkedRepoStore.
func (db *DB) GetLinkedRepo(ctx context.Context, id string) (storage.LinkedRepoGrant, error) {
	g, err := scanLinkedRepo(db.reader.QueryRowContext(ctx,
		Bind(db.dialect, `SELECT `+linkedRepoColumns+` FROM linked_repos WHERE id = ?`), id))
	return g, notFound(err)
}

// ListLinkedRepos implements storage.LinkedRepoStore.
func (db *DB) ListLinkedRepos(ctx context.Context) ([]storage.LinkedRepoGrant, error) {
	out, err := queryAll(ctx, db.reader, `SELECT `+linkedRepoColumns+` FROM linked_repos ORDER BY created_at DESC, id DESC`, scanLinkedRepo)
	if err != nil {
		return nil, fmt.Errorf("list linked repos: %w", err)
	}
	return out, nil
}

// DeleteLinkedRepo implements storage.LinkedRepoStore. Its invites and
// session go with it (ON DELETE CASCADE).
func (db *DB) DeleteLinkedRepo(ctx context.Context, id string) error {
	return db.execOne(ctx, "delete linked repo", `DELETE FROM linked_repos WHERE id = ?`, id)
}

// putLinkedRepoSession stores s as the session of grant id in tx.
func (db *DB) putLinkedRepoSession(ctx context.Context, tx *sql.Tx, id string, s storage.LinkedRepoSession) error {
	_, err := tx.ExecContext(ctx, Bind(db.dialect, `INSERT INTO linked_repo_sessions (grant_id, sealed, expires_at, updated_at)
		VALUES (?, ?, ?, ?) ON CONFLICT (grant_id) DO UPDATE SET sealed = excluded.sealed,
		expires_at = excluded.expires_at, updated_at = excluded.updated_at`),
		id, s.Sealed, db.dialect.Time(s.ExpiresAt), db.dialect.Time(s.UpdatedAt))
	return err
}

// updateLinkedRepoInTx runs an UPDATE of grant id in tx (ErrNotFound
// when it changes nothing) and then stores the grant's session.
func (db *DB) updateLinkedRepoInTx(ctx context.Context, tx *sql.Tx, id string, s storage.LinkedRepoSession, q string, args ...any) error {
	res, err := tx.ExecContext(ctx, Bind(db.dialect, q), args...)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return storage.ErrNotFound
	}
	return db.putLinkedRepoSession(ctx, tx, id, s)
}

// linkedRepoTxError maps the error of a grant transaction: ErrNotFound
// as is, a unique violation to ErrConflict, others wrapped.
func (db *DB) linkedRepoTxError(what string, err error) error {
	switch {
	case err == nil, errors.Is(err, storage.ErrNotFound):
		return err
	case db.dialect.IsUniqueViolation(err):
		return storage.ErrConflict
	default:
		return fmt.Errorf("%s: %w", what, err)
	}
}

// AuthorizeLinkedRepo implements storage.LinkedRepoStore.
func (db *DB) AuthorizeLinkedRepo(ctx context.Context, id, did string, s storage.LinkedRepoSession, at time.Time) error {
	err := db.inTx(ctx, func(tx *sql.Tx) error { return db.authorizeInTx(ctx, tx, id, did, s, at) })
	return db.linkedRepoTxError("authorize linked repo", err)
}

// authorizeInTx binds grant id to did and stores its session in tx.
func (db *DB) authorizeInTx(ctx context.Context, tx *sql.Tx, id, did string, s storage.LinkedRepoSession, at time.Time) error {
	return db.updateLinkedRepoInTx(ctx, tx, id, s,
		`UPDATE linked_repos SET did = ?, status = ?, last_error = NULL, authorized_at = ?, last_refreshed_at = ? WHERE id = ?`,
		did, storage.LinkedRepoActive, db.dialect.Time(at), db.dialect.Time(at), id)
}

// RefreshLinkedRepo implements storage.LinkedRepoStore.
func (db *DB) RefreshLinkedRepo(ctx context.Context, id string, s storage.LinkedRepoSession, at time.Time) error {
	err := db.inTx(ctx, func(tx *sql.Tx) error {
		return db.updateLinkedRepoInTx(ctx, tx, id, s, `UPDATE linked_repos SET last_refreshed_at = ? WHERE id = ?`, db.dialect.Time(at), id)
	})
	return db.linkedRepoTxError("refresh linked repo", err)
}

// LinkedRepoNeedsReauth implements storage.LinkedRepoStore.
func (db *DB) LinkedRepoNeedsReauth(ctx context.Context, id, msg string) error {
	return db.execOne(ctx, "linked repo needs reauth", `UPDATE linked_repos SET status = ?, last_error = ? WHERE id = ?`,
		storage.LinkedRepoNeedsReauth, msg, id)
}

// GetLinkedRepoSession implements storage.LinkedRepoStore.
func (db *DB) GetLinkedRepoSession(ctx context.Context, id string) (storage.LinkedRepoSession, error) {
	s := storage.LinkedRepoSession{GrantID: id}
	var expires, updated Time
	err := db.reader.QueryRowContext(ctx, Bind(db.dialect,
		`SELECT sealed, expires_at, updated_at FROM linked_repo_sessions WHERE grant_id = ?`), id).Scan(&s.Sealed, &expires, &updated)
	s.ExpiresAt, s.UpdatedAt = expires.T, updated.T
	return s, notFound(err)
}

const linkedRepoInviteColumns = `invite_id, grant_id, created_at, expires_at, used_at, revoked_at`

func scanLinkedRepoInvite(row rowScanner) (storage.LinkedRepoInvite, error) {
	var i storage.LinkedRepoInvite
	var created, expires, used, revoked Time
	err := row.Scan(&i.ID, &i.GrantID, &created, &expires, &used, &revoked)
	i.CreatedAt, i.ExpiresAt, i.UsedAt, i.RevokedAt = created.T, expires.T, used.T, revoked.T
	return i, err
}

// CreateLinkedRepoInvite implements storage.LinkedRepoStore.
func (db *DB) CreateLinkedRepoInvite(ctx context.Context, inv storage.LinkedRepoInvite) error {
	// INSERT ... SELECT inserts nothing when the grant is absent.
	res, err := db.exec(ctx, `INSERT INTO linked_repo_invites (`+linkedRepoInviteColumns+`)
		SELECT ?, id, ?, ?, ?, ? FROM linked_repos WHERE id = ?`,
		inv.ID, db.dialect.Time(inv.CreatedAt), db.dialect.Time(inv.ExpiresAt), db.nullTime(inv.UsedAt), db.nullTime(inv.RevokedAt), inv.GrantID)
	if err != nil {
		return db.conflict("create linked repo invite", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return storage.ErrNotFound
	}
	return nil
}

// GetLinkedRepoInvite implements storage.LinkedRepoStore.
func (db *DB) GetLinkedRepoInvite(ctx context.Context, inviteID string) (storage.LinkedRepoInvite, error) {
	i, err := scanLinkedRepoInvite(db.reader.QueryRowContext(ctx,
		Bind(db.dialect, `SELECT `+linkedRepoInviteColumns+` FROM linked_repo_invites WHERE invite_id = ?`), inviteID))
	return i, notFound(err)
}

// ListLinkedRepoInvites implements storage.LinkedRepoStore.
func (db *DB) ListLinkedRepoInvites(ctx context.Context, grantID string, now time.Time) ([]storage.LinkedRepoInvite, error) {
	out, err := queryAll(ctx, db.reader, Bind(db.dialect, `SELECT `+linkedRepoInviteColumns+` FROM linked_repo_invites
		WHERE grant_id = ? AND used_at IS NULL AND revoked_at IS NULL AND expires_at > ?
		ORDER BY created_at DESC, invite_id`), scanLinkedRepoInvite, grantID, db.dialect.Time(now))
	if err != nil {
		return nil, fmt.Errorf("list linked repo invites: %w", err)
	}
	if len(out) == 0 {
		if _, err := db.GetLinkedRepo(ctx, grantID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// RevokeLinkedRepoInvite implements storage.LinkedRepoStore.
func (db *DB) RevokeLinkedRepoInvite(ctx context.Context, grantID, inviteID string, now time.Time) error {
	return db.execOne(ctx, "revoke linked repo invite", `UPDATE linked_repo_invites SET revoked_at = ?
		WHERE invite_id = ? AND grant_id = ? AND used_at IS NULL AND revoked_at IS NULL AND expires_at > ?`,
		db.dialect.Time(now), inviteID, grantID, db.dialect.Time(now))
}

// RedeemLinkedRepoInvite implements storage.LinkedRepoStore.
func (db *DB) RedeemLinkedRepoInvite(ctx context.Context, inviteID, id, did string, s storage.LinkedRepoSession, at time.Time) error {
	err := db.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, Bind(db.dialect, `UPDATE linked_repo_invites SET used_at = ?
			WHERE invite_id = ? AND grant_id = ? AND used_at IS NULL AND revoked_at IS NULL AND expires_at > ?`),
			db.dialect.Time(at), inviteID, id, db.dialect.Time(at))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return storage.ErrNotFound
		}
		return db.authorizeInTx(ctx, tx, id, did, s, at)
	})
	return db.linkedRepoTxError("redeem linked repo invite", err)
}
