package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// rememberProof inserts a proof hash unless a live record of it exists:
// a conflict with an expired record (a sweep has not run yet) takes its
// place, a conflict with a live one changes nothing and affects no row.
const rememberProof = `INSERT INTO dpop_replays (proof_hash, expires_at) VALUES (?, ?)
	ON CONFLICT (proof_hash) DO UPDATE SET expires_at = excluded.expires_at
	WHERE dpop_replays.expires_at <= ?`

// RememberDPoPProof implements storage.DPoPReplayStore. It runs one
// prepared statement on the writer pool: a single round trip.
func (db *DB) RememberDPoPProof(ctx context.Context, hash []byte, expires, now time.Time) (bool, error) {
	if len(hash) == 0 {
		return false, errors.New("remember DPoP proof: empty hash")
	}
	stmt, err := db.writeStmt(ctx, db.q.rememberProof)
	if err != nil {
		return false, fmt.Errorf("remember DPoP proof: %w", err)
	}
	res, err := stmt.ExecContext(ctx, hash, db.dialect.Time(expires), db.dialect.Time(now))
	if err != nil {
		return false, fmt.Errorf("remember DPoP proof: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("remember DPoP proof: %w", err)
	}
	return n == 1, nil
}

// PurgeDPoPProofs implements storage.DPoPReplayStore.
func (db *DB) PurgeDPoPProofs(ctx context.Context, before time.Time) (int64, error) {
	res, err := db.exec(ctx, `DELETE FROM dpop_replays WHERE expires_at < ?`, db.dialect.Time(before))
	if err != nil {
		return 0, fmt.Errorf("purge DPoP proofs: %w", err)
	}
	return res.RowsAffected()
}
