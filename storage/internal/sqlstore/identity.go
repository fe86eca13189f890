package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/lexview/lexview/storage"
)

const domainColumns = `id, url, is_primary, created_at, updated_at`

func scanDomain(row rowScanner) (storage.Domain, error) {
	var d storage.Domain
	var created, updated Time
	err := row.Scan(&d.ID, &d.URL, &d.IsPrimary, &created, &updated)
	d.CreatedAt, d.UpdatedAt = created.T, updated.T
	return d, err
}

// ListDomains implements storage.IdentityStore.
func (db *DB) ListDomains(ctx context.Context) ([]storage.Domain, error) {
	out, err := queryAll(ctx, db.reader, `SELECT `+domainColumns+` FROM domains ORDER BY is_primary DESC, created_at, id`, scanDomain)
	if err != nil {
		return nil, fmt.Errorf("list domains: %w", err)
	}
	return out, nil
}

// GetDomain implements storage.IdentityStore.
func (db *DB) GetDomain(ctx context.Context, id string) (storage.Domain, error) {
	d, err := scanDomain(db.reader.QueryRowContext(ctx, Bind(db.dialect, `SELECT `+domainColumns+` FROM domains WHERE id = ?`), id))
	return d, notFound(err)
}

// CreateDomain implements storage.IdentityStore.
func (db *DB) CreateDomain(ctx context.Context, d storage.Domain) error {
	_, err := db.exec(ctx, `INSERT INTO domains (`+domainColumns+`) VALUES (?, ?, ?, ?, ?)`,
		d.ID, d.URL, d.IsPrimary, db.dialect.Time(d.CreatedAt), db.dialect.Time(d.UpdatedAt))
	return db.conflict("create domain", err)
}

// DeleteDomain implements storage.IdentityStore.
func (db *DB) DeleteDomain(ctx context.Context, id string) error {
	res, err := db.exec(ctx, `DELETE FROM domains WHERE id = ? AND NOT is_primary`, id)
	if err != nil {
		return fmt.Errorf("delete domain: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil
	}
	if _, err := db.GetDomain(ctx, id); err != nil {
		return err // storage.ErrNotFound when absent
	}
	return storage.ErrPrimaryDomain
}

// SetPrimaryDomain implements storage.IdentityStore. Concurrent changes can deadlock on PostgreSQL (the unset and the set
// lock rows in different orders); the database then rolls one back, which
// is tried again.
func (db *DB) SetPrimaryDomain(ctx context.Context, id string, at time.Time) error {
	for attempt := 1; ; attempt++ {
		err := db.setPrimaryDomain(ctx, id, at)
		if !db.dialect.IsDeadlock(err) || attempt == 5 {
			return err
		}
	}
}

func (db *DB) setPrimaryDomain(ctx context.Context, id string, at time.Time) error {
	return db.inTx(ctx, func(tx *sql.Tx) error {
		var n int
		err := tx.QueryRowContext(ctx, Bind(db.dialect, `SELECT COUNT(*) FROM domains WHERE id = ?`), id).Scan(&n)
		if err != nil {
			return fmt.Errorf("set primary domain: %w", err)
		}
		if n == 0 {
			return storage.ErrNotFound
		}
		// Unset first: the unique index allows one primary at a time.
		_, err = tx.ExecContext(ctx, Bind(db.dialect, `UPDATE domains SET is_primary = FALSE, updated_at = ? WHERE is_primary AND id <> ?`),
			db.dialect.Time(at), id)
		if err != nil {
			return fmt.Errorf("unset primary domain: %w", err)
		}
		_, err = tx.ExecContext(ctx, Bind(db.dialect, `UPDATE domains SET is_primary = TRUE, updated_at = ? WHERE id = ? AND NOT is_primary`),
			db.dialect.Time(at), id)
		if err != nil {
			if db.dialect.IsUniqueViolation(err) {
				return storage.ErrConflict // a concurrent change made another primary
			}
			return fmt.Errorf("set primary domain: %w", err)
		}
		return nil
	})
}

const verificationMethodColumns = `fragment, key_type, public_key_multibase, sealed_private_key, created_at`

func scanVerificationMethod(row rowScanner) (storage.VerificationMethod, error) {
	var m storage.VerificationMethod
	var created Time
	err := row.Scan(&m.Fragment, &m.KeyType, &m.PublicKeyMultibase, &m.SealedPrivateKey, &created)
	m.CreatedAt = created.T
	return m, err
}

// ListVerificationMethods implements storage.IdentityStore.
func (db *DB) ListVerificationMethods(ctx context.Context) ([]storage.VerificationMethod, error) {
	out, err := queryAll(ctx, db.reader, `SELECT `+verificationMethodColumns+` FROM verification_methods ORDER BY fragment`, scanVerificationMethod)
	if err != nil {
		return nil, fmt.Errorf("list verification methods: %w", err)
	}
	return out, nil
}

// CreateVerificationMethod implements storage.IdentityStore.
func (db *DB) CreateVerificationMethod(ctx context.Context, m storage.VerificationMethod) error {
	_, err := db.exec(ctx, `INSERT INTO verification_methods (`+verificationMethodColumns+`) VALUES (?, ?, ?, ?, ?)`,
		m.Fragment, m.KeyType, m.PublicKeyMultibase, m.SealedPrivateKey, db.dialect.Time(m.CreatedAt))
	return db.conflict("create verification method", err)
}

// DeleteVerificationMethod implements storage.IdentityStore.
func (db *DB) DeleteVerificationMethod(ctx context.Context, fragment string) error {
	return db.execOne(ctx, "delete verification method", `DELETE FROM verification_methods WHERE fragment = ?`, fragment)
}
