package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/lexview/lexview/storage"
)

const adminUserColumns = `id, did, is_super, permissions, created_at, last_used_at`

func jsonStrings(v []string) string {
	if v == nil {
		v = []string{}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func parseStrings(raw []byte) ([]string, error) {
	var out []string
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("decode string list: %w", err)
	}
	if out == nil {
		out = []string{}
	}
	return out, nil
}

func (db *DB) exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return db.writer.ExecContext(ctx, Bind(db.dialect, q), args...)
}

// execOne runs a write that must touch a row, else ErrNotFound.
func (db *DB) execOne(ctx context.Context, what, q string, args ...any) error {
	res, err := db.exec(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return storage.ErrNotFound
	}
	return nil
}

// conflict maps unique violations to storage.ErrConflict.
func (db *DB) conflict(what string, err error) error {
	if err == nil {
		return nil
	}
	if db.dialect.IsUniqueViolation(err) {
		return storage.ErrConflict
	}
	return fmt.Errorf("%s: %w", what, err)
}

func scanAdminUser(row rowScanner) (storage.AdminUser, error) {
	var u storage.AdminUser
	var perms []byte
	var created, used Time
	if err := row.Scan(&u.ID, &u.DID, &u.IsSuper, &perms, &created, &used); err != nil {
		return u, err
	}
	var err error
	u.Permissions, err = parseStrings(perms)
	u.CreatedAt, u.LastUsedAt = created.T, used.T
	return u, err
}

func notFound(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return storage.ErrNotFound
	}
	return err
}

// BootstrapSuperUser implements storage.AdminStore.
func (db *DB) BootstrapSuperUser(ctx context.Context, u storage.AdminUser) (bool, error) {
	res, err := db.exec(ctx, `INSERT INTO admin_users (`+adminUserColumns+`)
		SELECT ?::text, ?::text, TRUE, ?::jsonb, ?::timestamptz, NULL WHERE NOT EXISTS (SELECT 1 FROM admin_users)`,
		u.ID, u.DID, jsonStrings(u.Permissions), db.dialect.Time(u.CreatedAt))
	if err != nil {
		if db.dialect.IsUniqueViolation(err) {
			return false, nil // another bootstrap won the race
		}
		return false, fmt.Errorf("bootstrap super user: %w", err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// CreateAdminUser implements storage.AdminStore.
func (db *DB) CreateAdminUser(ctx context.Context, u storage.AdminUser) error {
	_, err := db.exec(ctx, `INSERT INTO admin_users (`+adminUserColumns+`) VALUES (?, ?, ?, ?, ?, NULL)`,
		u.ID, u.DID, u.IsSuper, jsonStrings(u.Permissions), db.dialect.Time(u.CreatedAt))
	return db.conflict("create admin user", err)
}

// GetAdminUser implements storage.AdminStore.
func (db *DB) GetAdminUser(ctx context.Context, id string) (storage.AdminUser, error) {
	u, err := scanAdminUser(db.reader.QueryRowContext(ctx, Bind(db.dialect, `SELECT `+adminUserColumns+` FROM admin_users WHERE id = ?`), id))
	return u, notFound(err)
}

// GetAdminUserByDID implements storage.AdminStore.
func (db *DB) GetAdminUserByDID(ctx context.Context, did string) (storage.AdminUser, error) {
	u, err := scanAdminUser(db.reader.QueryRowContext(ctx, Bind(db.dialect, `SELECT `+adminUserColumns+` FROM admin_users WHERE did = ?`), did))
	return u, notFound(err)
}

// ListAdminUsers implements storage.AdminStore.
func (db *DB) ListAdminUsers(ctx context.Context) ([]storage.AdminUser, error) {
	return queryAll(ctx, db.reader, `SELECT `+adminUserColumns+` FROM admin_users ORDER BY created_at, id`, scanAdminUser)
}

// CountAdminUsers implements storage.AdminStore.
func (db *DB) CountAdminUsers(ctx context.Context) (int, error) {
	var n int
	err := db.reader.QueryRowContext(ctx, `SELECT COUNT(*) FROM admin_users`).Scan(&n)
	return n, err
}

// SetAdminUserPermissions implements storage.AdminStore.
func (db *DB) SetAdminUserPermissions(ctx context.Context, id string, perms []string) error {
	return db.execOne(ctx, "set permissions", `UPDATE admin_users SET permissions = ? WHERE id = ?`, jsonStrings(perms), id)
}

// DeleteAdminUser implements storage.AdminStore.
func (db *DB) DeleteAdminUser(ctx context.Context, id string) error {
	return db.execOne(ctx, "delete admin user", `DELETE FROM admin_users WHERE id = ?`, id)
}

// TransferSuper implements storage.AdminStore.
func (db *DB) TransferSuper(ctx context.Context, fromID, toID string, perms []string) error {
	return db.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, Bind(db.dialect, `UPDATE admin_users SET is_super = FALSE WHERE id = ? AND is_super`), fromID)
		if err != nil {
			return fmt.Errorf("transfer super: %w", err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return storage.ErrNotFound
		}
		res, err = tx.ExecContext(ctx, Bind(db.dialect, `UPDATE admin_users SET is_super = TRUE, permissions = ? WHERE id = ?`), jsonStrings(perms), toID)
		if err != nil {
			return fmt.Errorf("transfer super: %w", err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return storage.ErrNotFound
		}
		return nil
	})
}

// TouchAdminUser implements storage.AdminStore.
func (db *DB) TouchAdminUser(ctx context.Context, id string, at time.Time) error {
	_, err := db.exec(ctx, `UPDATE admin_users SET last_used_at = ? WHERE id = ?`, db.dialect.Time(at), id)
	return err
}

const apiKeyColumns = `id, user_id, name, key_prefix, key_hash, permissions, created_at, last_used_at`

func scanAPIKey(row rowScanner) (storage.AdminAPIKey, error) {
	var k storage.AdminAPIKey
	var perms []byte
	var created, used Time
	if err := row.Scan(&k.ID, &k.UserID, &k.Name, &k.Prefix, &k.Hash, &perms, &created, &used); err != nil {
		return k, err
	}
	var err error
	k.Permissions, err = parseStrings(perms)
	k.CreatedAt, k.LastUsedAt = created.T, used.T
	return k, err
}

// CreateAdminAPIKey implements storage.AdminStore.
func (db *DB) CreateAdminAPIKey(ctx context.Context, k storage.AdminAPIKey) error {
	_, err := db.exec(ctx, `INSERT INTO admin_api_keys (`+apiKeyColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, NULL)`,
		k.ID, k.UserID, k.Name, k.Prefix, k.Hash, jsonStrings(k.Permissions), db.dialect.Time(k.CreatedAt))
	return db.conflict("create admin API key", err)
}

// GetAdminAPIKeyByHash implements storage.AdminStore.
func (db *DB) GetAdminAPIKeyByHash(ctx context.Context, hash string) (storage.AdminAPIKey, error) {
	k, err := scanAPIKey(db.reader.QueryRowContext(ctx, Bind(db.dialect, `SELECT `+apiKeyColumns+` FROM admin_api_keys WHERE key_hash = ?`), hash))
	return k, notFound(err)
}

// ListAdminAPIKeys implements storage.AdminStore.
func (db *DB) ListAdminAPIKeys(ctx context.Context) ([]storage.AdminAPIKey, error) {
	return queryAll(ctx, db.reader, `SELECT `+apiKeyColumns+` FROM admin_api_keys ORDER BY created_at DESC, id`, scanAPIKey)
}

// DeleteAdminAPIKey implements storage.AdminStore.
func (db *DB) DeleteAdminAPIKey(ctx context.Context, id string) error {
	return db.execOne(ctx, "delete admin API key", `DELETE FROM admin_api_keys WHERE id = ?`, id)
}

// TouchAdminAPIKey implements storage.AdminStore.
func (db *DB) TouchAdminAPIKey(ctx context.Context, id string, at time.Time) error {
	_, err := db.exec(ctx, `UPDATE admin_api_keys SET last_used_at = ? WHERE id = ?`, db.dialect.Time(at), id)
	return err
}

// queryAll runs q (already bound) and scans every row.
func queryAll[T any](ctx context.Context, db *sql.DB, q string, scan func(rowScanner) (T, error), args ...any) ([]T, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
