package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lexview/lexview/storage"
)

// Account states (storage.AccountState): stored in the record batches,
// after their record operations and in order. An inactive account's
// records are removed in the batch that stores the state, and upserts of
// the records of an account stored as inactive are skipped, so records
// queued before the state (or by a source that does not know it, such as
// a backfill) never bring them back.

const (
	getAccountStateQuery = `SELECT active, status FROM account_states WHERE did = ?`
	putAccountStateQuery = `INSERT INTO account_states (did, active, status, updated_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (did) DO UPDATE SET active = excluded.active, status = excluded.status, updated_at = excluded.updated_at`
	deleteByDIDQuery = `DELETE FROM records WHERE uri >= ? AND uri < ?`
)

// inactiveChunk bounds the DIDs one query of skipInactive looks up.
const inactiveChunk = 500

// skipInactive returns upserts without the records of accounts stored as
// inactive. The common case (no such account among them) returns upserts
// as they are.
func (db *DB) skipInactive(ctx context.Context, tx *sql.Tx, upserts []storage.Record) ([]storage.Record, error) {
	seen := make(map[string]struct{}, min(len(upserts), 1024))
	dids := make([]string, 0, min(len(upserts), 1024))
	for _, r := range upserts {
		if _, ok := seen[r.DID]; !ok {
			seen[r.DID] = struct{}{}
			dids = append(dids, r.DID)
		}
	}
	inactive := map[string]struct{}{}
	for len(dids) > 0 {
		chunk := dids[:min(len(dids), inactiveChunk)]
		dids = dids[len(chunk):]
		q := `SELECT did FROM account_states WHERE active = ? AND did IN (?` + strings.Repeat(`, ?`, len(chunk)-1) + `)`
		args := make([]any, 0, len(chunk)+1)
		args = append(args, false)
		for _, d := range chunk {
			args = append(args, d)
		}
		if err := scanDIDs(ctx, tx, Bind(db.dialect, q), args, inactive); err != nil {
			return nil, fmt.Errorf("read inactive accounts: %w", err)
		}
	}
	if len(inactive) == 0 {
		return upserts, nil
	}
	kept := make([]storage.Record, 0, len(upserts))
	for _, r := range upserts {
		if _, skip := inactive[r.DID]; !skip {
			kept = append(kept, r)
		}
	}
	return kept, nil
}

func scanDIDs(ctx context.Context, tx *sql.Tx, q string, args []any, into map[string]struct{}) error {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var did string
		if err := rows.Scan(&did); err != nil {
			return err
		}
		into[did] = struct{}{}
	}
	return rows.Err()
}

// applyAccounts stores account states in order, removing the records of
// each inactive account.
func (db *DB) applyAccounts(ctx context.Context, tx *sql.Tx, accounts []storage.AccountState) error {
	for _, a := range accounts {
		if _, err := tx.ExecContext(ctx, db.q.putAccountState, a.DID, a.Active, a.Status, db.dialect.Time(time.Now())); err != nil {
			return fmt.Errorf("store account state %s: %w", a.DID, err)
		}
		if a.Active {
			continue
		}
		lo, hi := URIPrefixRange("at://" + a.DID + "/")
		if _, err := tx.ExecContext(ctx, db.q.deleteByDID, lo, hi); err != nil {
			return fmt.Errorf("remove the records of inactive account %s: %w", a.DID, err)
		}
	}
	return nil
}

// GetAccountState implements storage.CursorStore.
func (db *DB) GetAccountState(ctx context.Context, did string) (storage.AccountState, error) {
	st := storage.AccountState{DID: did}
	err := db.reader.QueryRowContext(ctx, db.q.getAccountState, did).Scan(&st.Active, &st.Status)
	if errors.Is(err, sql.ErrNoRows) {
		return storage.AccountState{}, storage.ErrNotFound
	}
	if err != nil {
		return storage.AccountState{}, fmt.Errorf("get account state: %w", err)
	}
	return st, nil
}
