package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/lexview/lexview/storage"
)

// nowMillis is the SQL expression of the database clock's time in
// milliseconds since the Unix epoch.
func (db *DB) nowMillis() string {
	if db.dialect.Name() == "postgres" {
		return `(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT`
	}
	return `CAST(unixepoch('subsec') * 1000 AS INTEGER)`
}

func millisTime(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// AcquireLease implements storage.ClusterStore.
func (db *DB) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (storage.Lease, bool, error) {
	if name == "" || holder == "" {
		return storage.Lease{}, false, errors.New("acquire lease: name and holder are required")
	}
	now := db.nowMillis()
	q := Bind(db.dialect, `INSERT INTO leases (name, holder, token, expires_ms, acquired_ms)
		VALUES (?, ?, 1, `+now+` + ?, `+now+`)
		ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, token = leases.token + 1,
			expires_ms = excluded.expires_ms, acquired_ms = excluded.acquired_ms
		WHERE leases.expires_ms < `+now+` OR leases.holder = excluded.holder OR leases.holder = ''
		RETURNING token`)
	var token int64
	err := db.writer.QueryRowContext(ctx, q, name, holder, ttl.Milliseconds()).Scan(&token)
	if errors.Is(err, sql.ErrNoRows) {
		return storage.Lease{}, false, nil
	}
	if err != nil {
		return storage.Lease{}, false, fmt.Errorf("acquire lease %s: %w", name, err)
	}
	return storage.Lease{Name: name, Holder: holder, Token: token}, true, nil
}

// RenewLease implements storage.ClusterStore.
func (db *DB) RenewLease(ctx context.Context, l storage.Lease, ttl time.Duration) (bool, error) {
	res, err := db.writer.ExecContext(ctx, Bind(db.dialect, `UPDATE leases SET expires_ms = `+db.nowMillis()+` + ?
		WHERE name = ? AND holder = ? AND token = ?`), ttl.Milliseconds(), l.Name, l.Holder, l.Token)
	if err != nil {
		return false, fmt.Errorf("renew lease %s: %w", l.Name, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("renew lease %s: %w", l.Name, err)
	}
	return n == 1, nil
}

// ReleaseLease implements storage.ClusterStore.
func (db *DB) ReleaseLease(ctx context.Context, l storage.Lease) error {
	_, err := db.writer.ExecContext(ctx, Bind(db.dialect, `UPDATE leases SET holder = '', expires_ms = 0
		WHERE name = ? AND holder = ? AND token = ?`), l.Name, l.Holder, l.Token)
	if err != nil {
		return fmt.Errorf("release lease %s: %w", l.Name, err)
	}
	return nil
}

// GetLease implements storage.ClusterStore.
func (db *DB) GetLease(ctx context.Context, name string) (storage.LeaseInfo, error) {
	var info storage.LeaseInfo
	var expires, now int64
	err := db.writer.QueryRowContext(ctx, Bind(db.dialect, `SELECT holder, token, expires_ms, `+db.nowMillis()+`
		FROM leases WHERE name = ?`), name).Scan(&info.Holder, &info.Token, &expires, &now)
	if errors.Is(err, sql.ErrNoRows) {
		return storage.LeaseInfo{}, nil
	}
	if err != nil {
		return storage.LeaseInfo{}, fmt.Errorf("read lease %s: %w", name, err)
	}
	if expires > 0 {
		info.ExpiresAt = millisTime(expires)
	}
	info.Live = info.Holder != "" && expires > now
	return info, nil
}

// checkFence fails with storage.ErrFenced, inside tx, when the lease f
// has been acquired again since f was taken (its token moved on). A lease
// released since, or expired but not taken, still fences nothing: no one
// else can have written as its holder. On PostgreSQL
// the row is locked FOR SHARE until tx ends, so that no acquisition can
// slip in between the check and the commit.
func (db *DB) checkFence(ctx context.Context, tx *sql.Tx, f storage.Lease) error {
	q := `SELECT token FROM leases WHERE name = ?`
	if db.dialect.Name() == "postgres" {
		q += ` FOR SHARE`
	}
	var token int64
	err := tx.QueryRowContext(ctx, Bind(db.dialect, q), f.Name).Scan(&token)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && token != f.Token) {
		return storage.ErrFenced
	}
	if err != nil {
		return fmt.Errorf("check lease %s: %w", f.Name, err)
	}
	return nil
}

// Heartbeat implements storage.ClusterStore.
func (db *DB) Heartbeat(ctx context.Context, inst storage.Instance) error {
	now := db.nowMillis()
	info := string(inst.Info)
	if info == "" {
		info = "{}"
	}
	_, err := db.writer.ExecContext(ctx, Bind(db.dialect, `INSERT INTO instances (id, started_ms, seen_ms, info)
		VALUES (?, ?, `+now+`, ?)
		ON CONFLICT (id) DO UPDATE SET seen_ms = excluded.seen_ms, info = excluded.info`),
		inst.ID, inst.StartedAt.UnixMilli(), info)
	if err != nil {
		return fmt.Errorf("heartbeat of %s: %w", inst.ID, err)
	}
	return nil
}

// ListInstances implements storage.ClusterStore.
func (db *DB) ListInstances(ctx context.Context, within time.Duration) ([]storage.Instance, error) {
	rows, err := db.writer.QueryContext(ctx, Bind(db.dialect, `SELECT id, started_ms, seen_ms, info FROM instances
		WHERE seen_ms > `+db.nowMillis()+` - ? ORDER BY started_ms, id`), within.Milliseconds())
	if err != nil {
		return nil, fmt.Errorf("list instances: %w", err)
	}
	defer rows.Close()
	var out []storage.Instance
	for rows.Next() {
		var in storage.Instance
		var started, seen int64
		var info string
		if err := rows.Scan(&in.ID, &started, &seen, &info); err != nil {
			return nil, fmt.Errorf("list instances: %w", err)
		}
		in.StartedAt, in.SeenAt, in.Info = millisTime(started), millisTime(seen), []byte(info)
		out = append(out, in)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list instances: %w", err)
	}
	return out, nil
}

// RemoveInstance implements storage.ClusterStore.
func (db *DB) RemoveInstance(ctx context.Context, id string, staleAfter time.Duration) error {
	_, err := db.writer.ExecContext(ctx, Bind(db.dialect, `DELETE FROM instances WHERE id = ? OR seen_ms < `+db.nowMillis()+` - ?`),
		id, staleAfter.Milliseconds())
	if err != nil {
		return fmt.Errorf("remove instance %s: %w", id, err)
	}
	return nil
}
