package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/lexview/lexview/storage"
)

// Backfill job leases (storage.BackfillStore's ClaimBackfillJob and the
// fenced writes). Lease times are read from the database's clock, never a
// host's, so that instances on hosts whose clocks disagree measure leases
// alike.

// backfillClaimLockID is the PostgreSQL advisory lock that serialises
// claims ("lxvbfclm"): with it, the one-job-at-a-time check and the claim
// see every claim committed before them.
const backfillClaimLockID int64 = 0x6c78766266636c6d

// leaseNow is the SQL of the database's current time as lease_expires_at
// stores it.
func (db *DB) leaseNow() string {
	if db.dialect.Name() == "sqlite" {
		return `CAST(unixepoch('subsec') * 1000000 AS INTEGER)`
	}
	return `clock_timestamp()`
}

// leaseUntil is the SQL of the database's current time plus a bound
// number of microseconds (one placeholder).
func (db *DB) leaseUntil() string {
	if db.dialect.Name() == "sqlite" {
		return db.leaseNow() + ` + ?`
	}
	return `clock_timestamp() + ?::bigint * interval '1 microsecond'`
}

// leaseFree is the SQL condition that the lease whose expiry is column is
// not live (none, or run out).
func (db *DB) leaseFree(column string) string {
	return `(` + column + ` IS NULL OR ` + column + ` <= ` + db.leaseNow() + `)`
}

// fence locks the lease's job row for the rest of tx and checks that the
// job's fencing token is still the lease's: ErrLeaseLost if not,
// ErrNotFound when the job does not exist. Holding the row until commit
// orders the write against any claim of the job.
func (db *DB) fence(ctx context.Context, tx *sql.Tx, l storage.BackfillLease) error {
	q := `SELECT lease_token FROM backfill_jobs WHERE id = ?`
	if db.dialect.Name() != "sqlite" { // SQLite's write transactions are exclusive already
		q += ` FOR UPDATE`
	}
	var token int64
	if err := tx.QueryRowContext(ctx, Bind(db.dialect, q), l.JobID).Scan(&token); err != nil {
		return notFound(err)
	}
	if token != l.Token {
		return storage.ErrLeaseLost
	}
	return nil
}

// ClaimBackfillJob implements storage.BackfillStore.
func (db *DB) ClaimBackfillJob(ctx context.Context, holder string, ttl time.Duration) (storage.BackfillJob, storage.BackfillLease, error) {
	var job storage.BackfillJob
	err := db.inTx(ctx, func(tx *sql.Tx) error {
		if db.dialect.Name() != "sqlite" { // SQLite's write transactions are serialised already
			if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, backfillClaimLockID); err != nil {
				return fmt.Errorf("lock backfill claims: %w", err)
			}
		}
		free := db.leaseFree("lease_expires_at")
		var err error
		job, err = scanBackfillJob(tx.QueryRowContext(ctx, Bind(db.dialect, `UPDATE backfill_jobs
			SET claimed_by = ?, lease_expires_at = `+db.leaseUntil()+`, lease_token = lease_token + 1
			WHERE id = (
				SELECT id FROM backfill_jobs WHERE status = ? AND `+free+`
				AND NOT EXISTS (SELECT 1 FROM backfill_jobs held WHERE held.status IN (?, ?, ?)
					AND NOT `+db.leaseFree("held.lease_expires_at")+`)
				ORDER BY created_at, id LIMIT 1)
			AND `+free+`
			RETURNING `+backfillJobColumns),
			holder, ttl.Microseconds(), storage.BackfillRunning,
			storage.BackfillRunning, storage.BackfillPausing, storage.BackfillCancelling))
		return notFound(err)
	})
	if err != nil {
		return job, storage.BackfillLease{}, err
	}
	return job, storage.BackfillLease{JobID: job.ID, Holder: holder, Token: job.LeaseToken}, nil
}

// RenewBackfillLease implements storage.BackfillStore.
func (db *DB) RenewBackfillLease(ctx context.Context, l storage.BackfillLease, ttl time.Duration) error {
	res, err := db.exec(ctx, `UPDATE backfill_jobs SET lease_expires_at = `+db.leaseUntil()+`
		WHERE id = ? AND lease_token = ? AND claimed_by = ?`, ttl.Microseconds(), l.JobID, l.Token, l.Holder)
	if err != nil {
		return fmt.Errorf("renew backfill lease: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return storage.ErrLeaseLost
	}
	return nil
}

// ReleaseBackfillLease implements storage.BackfillStore.
func (db *DB) ReleaseBackfillLease(ctx context.Context, l storage.BackfillLease) error {
	res, err := db.exec(ctx, `UPDATE backfill_jobs SET claimed_by = NULL, lease_expires_at = NULL
		WHERE id = ? AND lease_token = ? AND claimed_by = ?`, l.JobID, l.Token, l.Holder)
	if err != nil {
		return fmt.Errorf("release backfill lease: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return storage.ErrLeaseLost
	}
	return nil
}
