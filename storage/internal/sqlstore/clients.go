package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/lexview/lexview/storage"
)

const clientColumns = `id, client_key, secret_hash, name, client_id_url, client_uri, redirect_uris, scopes, client_type,
	allowed_origins, rate_limit_capacity, rate_limit_refill_rate, is_active, created_by, parent_client_id, owner_did,
	created_at, updated_at`

func scanClient(row rowScanner) (storage.APIClient, error) {
	var c storage.APIClient
	var redirects, origins []byte
	var capacity sql.NullInt64
	var refill sql.NullFloat64
	var parent, owner sql.NullString
	var created, updated Time
	err := row.Scan(&c.ID, &c.Key, &c.SecretHash, &c.Name, &c.ClientIDURL, &c.ClientURI, &redirects, &c.Scopes, &c.Type,
		&origins, &capacity, &refill, &c.IsActive, &c.CreatedBy, &parent, &owner, &created, &updated)
	if err != nil {
		return c, err
	}
	if c.RedirectURIs, err = parseStrings(redirects); err != nil {
		return c, err
	}
	if c.AllowedOrigins, err = parseStrings(origins); err != nil {
		return c, err
	}
	if capacity.Valid {
		n := int(capacity.Int64)
		c.RateLimitCapacity = &n
	}
	if refill.Valid {
		c.RateLimitRefillRate = &refill.Float64
	}
	c.ParentID, c.OwnerDID = parent.String, owner.String
	c.CreatedAt, c.UpdatedAt = created.T, updated.T
	return c, nil
}

func nullInt(p *int) sql.NullInt64 {
	if p == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: int64(*p), Valid: true}
}

func nullFloat(p *float64) sql.NullFloat64 {
	if p == nil {
		return sql.NullFloat64{}
	}
	return sql.NullFloat64{Float64: *p, Valid: true}
}

// CreateAPIClient implements storage.APIClientStore.
func (db *DB) CreateAPIClient(ctx context.Context, c storage.APIClient) error {
	_, err := db.exec(ctx, `INSERT INTO api_clients (`+clientColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		c.ID, c.Key, c.SecretHash, c.Name, c.ClientIDURL, c.ClientURI, jsonStrings(c.RedirectURIs), c.Scopes, c.Type,
		jsonStrings(c.AllowedOrigins), nullInt(c.RateLimitCapacity), nullFloat(c.RateLimitRefillRate), c.IsActive,
		c.CreatedBy, nullString(c.ParentID), nullString(c.OwnerDID), db.dialect.Time(c.CreatedAt), db.dialect.Time(c.UpdatedAt))
	return db.conflict("create API client", err)
}

// GetAPIClient implements storage.APIClientStore.
func (db *DB) GetAPIClient(ctx context.Context, id string) (storage.APIClient, error) {
	c, err := scanClient(db.reader.QueryRowContext(ctx, Bind(db.dialect, `SELECT `+clientColumns+` FROM api_clients WHERE id = ?`), id))
	return c, notFound(err)
}

// GetAPIClientByKey implements storage.APIClientStore.
func (db *DB) GetAPIClientByKey(ctx context.Context, key string) (storage.APIClient, error) {
	c, err := scanClient(db.reader.QueryRowContext(ctx, Bind(db.dialect, `SELECT `+clientColumns+` FROM api_clients WHERE client_key = ?`), key))
	return c, notFound(err)
}

// ListAPIClients implements storage.APIClientStore.
func (db *DB) ListAPIClients(ctx context.Context, parentID string) ([]storage.APIClient, error) {
	if parentID == "" {
		return queryAll(ctx, db.reader, `SELECT `+clientColumns+` FROM api_clients ORDER BY created_at DESC, id`, scanClient)
	}
	return queryAll(ctx, db.reader, Bind(db.dialect, `SELECT `+clientColumns+` FROM api_clients WHERE parent_client_id = ? ORDER BY created_at DESC, id`),
		scanClient, parentID)
}

// UpdateAPIClient implements storage.APIClientStore.
func (db *DB) UpdateAPIClient(ctx context.Context, c storage.APIClient) ([]string, error) {
	var keys []string
	err := db.inTx(ctx, func(tx *sql.Tx) error {
		now := db.dialect.Time(time.Now())
		res, err := tx.ExecContext(ctx, Bind(db.dialect, `UPDATE api_clients SET name = ?, client_uri = ?, redirect_uris = ?,
			scopes = ?, allowed_origins = ?, rate_limit_capacity = ?, rate_limit_refill_rate = ?, is_active = ?, updated_at = ?
			WHERE id = ?`),
			c.Name, c.ClientURI, jsonStrings(c.RedirectURIs), c.Scopes, jsonStrings(c.AllowedOrigins),
			nullInt(c.RateLimitCapacity), nullFloat(c.RateLimitRefillRate), c.IsActive, now, c.ID)
		if err != nil {
			return fmt.Errorf("update API client: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return storage.ErrNotFound
		}
		keys = append(keys, c.Key)
		if c.IsActive {
			return nil
		}
		rows, err := tx.QueryContext(ctx, Bind(db.dialect, `UPDATE api_clients SET is_active = FALSE, updated_at = ?
			WHERE parent_client_id = ? AND is_active RETURNING client_key`), now, c.ID)
		if err != nil {
			return fmt.Errorf("deactivate children: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var k string
			if err := rows.Scan(&k); err != nil {
				return err
			}
			keys = append(keys, k)
		}
		return rows.Err()
	})
	return keys, err
}

// DeleteAPIClient implements storage.APIClientStore.
func (db *DB) DeleteAPIClient(ctx context.Context, id string) ([]string, error) {
	var keys []string
	err := db.inTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, Bind(db.dialect, `SELECT client_key FROM api_clients WHERE id = ? OR parent_client_id = ?`), id, id)
		if err != nil {
			return fmt.Errorf("delete API client: %w", err)
		}
		for rows.Next() {
			var k string
			if err := rows.Scan(&k); err != nil {
				rows.Close()
				return err
			}
			keys = append(keys, k)
		}
		rows.Close()
		res, err := tx.ExecContext(ctx, Bind(db.dialect, `DELETE FROM api_clients WHERE id = ?`), id)
		if err != nil {
			return fmt.Errorf("delete API client: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return storage.ErrNotFound
		}
		return nil
	})
	return keys, err
}
