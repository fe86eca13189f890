package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lexview/lexview/storage"
)

const backfillJobColumns = `id, collection, did, scope, dids, status, stage, total_repos, resolved_repos,
	processed_repos, total_records, error, relay_cursor, started_at, completed_at, created_at,
	claimed_by, lease_expires_at, lease_token, failed_repos`

func scanBackfillJob(row rowScanner) (storage.BackfillJob, error) {
	var j storage.BackfillJob
	var collection, did, errMsg, cursor, claimedBy sql.NullString
	var dids []byte
	var total, resolved, processed, records, failed sql.NullInt64
	var started, completed, created, leaseExpires Time
	err := row.Scan(&j.ID, &collection, &did, &j.Scope, &dids, &j.Status, &j.Stage, &total, &resolved,
		&processed, &records, &errMsg, &cursor, &started, &completed, &created,
		&claimedBy, &leaseExpires, &j.LeaseToken, &failed)
	if err != nil {
		return j, err
	}
	j.Collection, j.DID, j.Error, j.RelayCursor = collection.String, did.String, errMsg.String, cursor.String
	j.ClaimedBy, j.LeaseExpiresAt = claimedBy.String, leaseExpires.T
	j.TotalRepos, j.ResolvedRepos = int64Ptr(total), int64Ptr(resolved)
	j.ProcessedRepos, j.TotalRecords, j.FailedRepos = int64Ptr(processed), int64Ptr(records), int64Ptr(failed)
	j.StartedAt, j.CompletedAt, j.CreatedAt = started.T, completed.T, created.T
	if err := json.Unmarshal(dids, &j.DIDs); err != nil {
		return j, fmt.Errorf("decode backfill job dids: %w", err)
	}
	return j, nil
}

func int64Ptr(n sql.NullInt64) *int64 {
	if !n.Valid {
		return nil
	}
	v := n.Int64
	return &v
}

func intOrNull(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

// CreateBackfillJob implements storage.BackfillStore.
func (db *DB) CreateBackfillJob(ctx context.Context, j storage.BackfillJob) error {
	dids := j.DIDs
	if dids == nil {
		dids = []string{}
	}
	raw, err := json.Marshal(dids)
	if err != nil {
		return fmt.Errorf("encode backfill job dids: %w", err)
	}
	_, err = db.exec(ctx, `INSERT INTO backfill_jobs (id, collection, did, scope, dids, status, stage, total_repos,
		resolved_repos, processed_repos, total_records, failed_repos, error, relay_cursor, started_at, completed_at, created_at)
		VALUES (?, ?, ?, ?, ?::jsonb, ?, ?, ?::bigint, ?::bigint, ?::bigint, ?::bigint, ?::bigint, ?, ?, ?::timestamptz, ?::timestamptz, ?)`,
		j.ID, nullString(j.Collection), nullString(j.DID), j.Scope, string(raw), j.Status, j.Stage,
		intOrNull(j.TotalRepos), intOrNull(j.ResolvedRepos), intOrNull(j.ProcessedRepos), intOrNull(j.TotalRecords), intOrNull(j.FailedRepos),
		nullString(j.Error), nullString(j.RelayCursor), db.nullTime(j.StartedAt), db.nullTime(j.CompletedAt),
		db.dialect.Time(j.CreatedAt))
	return db.conflict("create backfill job", err)
}

// GetBackfillJob implements storage.BackfillStore.
func (db *DB) GetBackfillJob(ctx context.Context, id string) (storage.BackfillJob, error) {
	j, err := scanBackfillJob(db.reader.QueryRowContext(ctx,
		Bind(db.dialect, `SELECT `+backfillJobColumns+` FROM backfill_jobs WHERE id = ?`), id))
	return j, notFound(err)
}

// ListBackfillJobs implements storage.BackfillStore.
func (db *DB) ListBackfillJobs(ctx context.Context) ([]storage.BackfillJob, error) {
	jobs, err := queryAll(ctx, db.reader, `SELECT `+backfillJobColumns+` FROM backfill_jobs ORDER BY created_at DESC, id DESC`,
		scanBackfillJob)
	if err != nil {
		return nil, fmt.Errorf("list backfill jobs: %w", err)
	}
	return jobs, nil
}

// UpdateBackfillJob implements storage.BackfillStore.
func (db *DB) UpdateBackfillJob(ctx context.Context, id string, u storage.BackfillJobUpdate) (storage.BackfillJob, bool, error) {
	var sets []string
	var args []any
	set := func(expr string, v ...any) { sets, args = append(sets, expr), append(args, v...) }
	if u.Status != "" {
		set(`status = ?`, u.Status)
	}
	if u.Stage != "" {
		set(`stage = ?`, u.Stage)
	}
	if u.Error != nil {
		set(`error = ?`, nullString(*u.Error))
	}
	if !u.StartedAt.IsZero() {
		set(`started_at = COALESCE(started_at, ?::timestamptz)`, db.dialect.Time(u.StartedAt))
	}
	if !u.CompletedAt.IsZero() {
		set(`completed_at = ?`, db.dialect.Time(u.CompletedAt))
	}
	if u.Release {
		set(`claimed_by = NULL, lease_expires_at = NULL`)
	}
	if u.StartCounters {
		set(`total_repos = COALESCE(total_repos, 0), resolved_repos = COALESCE(resolved_repos, 0),
			processed_repos = COALESCE(processed_repos, 0), total_records = COALESCE(total_records, 0),
			failed_repos = COALESCE(failed_repos, 0)`)
	}
	var job storage.BackfillJob
	changed := false
	err := db.inTx(ctx, func(tx *sql.Tx) error {
		if len(sets) > 0 {
			q := `UPDATE backfill_jobs SET ` + strings.Join(sets, ", ") + ` WHERE id = ?`
			args = append(args, id)
			if len(u.From) > 0 {
				q += ` AND status IN (` + strings.TrimSuffix(strings.Repeat("?, ", len(u.From)), ", ") + `)`
				for _, s := range u.From {
					args = append(args, s)
				}
			}
			if u.Lease != nil {
				q, args = q+` AND lease_token = ?`, append(args, u.Lease.Token)
			}
			if u.Unleased {
				q += ` AND ` + db.leaseFree("lease_expires_at")
			}
			res, err := tx.ExecContext(ctx, Bind(db.dialect, q), args...)
			if err != nil {
				return fmt.Errorf("update backfill job: %w", err)
			}
			n, _ := res.RowsAffected()
			changed = n > 0
		}
		var err error
		job, err = scanBackfillJob(tx.QueryRowContext(ctx, Bind(db.dialect, `SELECT `+backfillJobColumns+` FROM backfill_jobs WHERE id = ?`), id))
		if err != nil {
			return notFound(err)
		}
		if u.Lease != nil && job.LeaseToken != u.Lease.Token {
			return storage.ErrLeaseLost
		}
		return nil
	})
	return job, changed, err
}

// AddBackfillRepos implements storage.BackfillStore.
func (db *DB) AddBackfillRepos(ctx context.Context, l storage.BackfillLease, dids []string, relayCursor string) (int, error) {
	jobID := l.JobID
	added := 0
	err := db.inTx(ctx, func(tx *sql.Tx) error {
		if err := db.fence(ctx, tx, l); err != nil {
			return err
		}
		if len(dids) > 0 {
			stmt, err := tx.PrepareContext(ctx, Bind(db.dialect, `INSERT INTO backfill_repos (job_id, did, status, records_fetched)
				VALUES (?, ?, ?, 0) ON CONFLICT (job_id, did) DO NOTHING`))
			if err != nil {
				return fmt.Errorf("add backfill repos: %w", err)
			}
			defer stmt.Close()
			for _, did := range dids {
				res, err := stmt.ExecContext(ctx, jobID, did, storage.RepoDiscovered)
				if err != nil {
					return fmt.Errorf("add backfill repo %s: %w", did, err)
				}
				n, _ := res.RowsAffected()
				added += int(n)
			}
		}
		_, err := tx.ExecContext(ctx, Bind(db.dialect, `UPDATE backfill_jobs
			SET total_repos = COALESCE(total_repos, 0) + ?, relay_cursor = ? WHERE id = ?`), added, nullString(relayCursor), jobID)
		if err != nil {
			return fmt.Errorf("count backfill repos: %w", err)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return added, nil
}

// UpdateBackfillRepo implements storage.BackfillStore.
func (db *DB) UpdateBackfillRepo(ctx context.Context, l storage.BackfillLease, r storage.BackfillRepo) error {
	jobID := l.JobID
	return db.inTx(ctx, func(tx *sql.Tx) error {
		var oldPDS sql.NullString
		var oldStatus string
		var oldRecords int64
		err := tx.QueryRowContext(ctx, Bind(db.dialect, `SELECT pds_endpoint, status, records_fetched
			FROM backfill_repos WHERE job_id = ? AND did = ?`), jobID, r.DID).Scan(&oldPDS, &oldStatus, &oldRecords)
		if err != nil {
			return notFound(err)
		}
		pds := r.PDSEndpoint
		if pds == "" {
			pds = oldPDS.String
		}
		_, err = tx.ExecContext(ctx, Bind(db.dialect, `UPDATE backfill_repos
			SET pds_endpoint = ?, status = ?, records_fetched = ?, error = ?, failure_reason = ?, attempts = ?, fetch_method = ?
			WHERE job_id = ? AND did = ?`),
			nullString(pds), r.Status, r.RecordsFetched, nullString(r.Error), nullString(r.FailureReason), r.Attempts,
			nullString(r.FetchMethod), jobID, r.DID)
		if err != nil {
			return fmt.Errorf("update backfill repo: %w", err)
		}
		var resolved, processed int
		if pds != "" && oldPDS.String == "" {
			resolved = 1
		}
		if r.Status == storage.RepoFetched && oldStatus != storage.RepoFetched {
			processed = 1
		} else if r.Status != storage.RepoFetched && oldStatus == storage.RepoFetched {
			processed = -1
		}
		failed := 0
		if r.Status == storage.RepoFailed && oldStatus != storage.RepoFailed {
			failed = 1
		} else if r.Status != storage.RepoFailed && oldStatus == storage.RepoFailed {
			failed = -1
		}
		records := r.RecordsFetched - oldRecords
		// The counters, fenced by the lease, even when they do not move:
		// the statement locks the job's row until commit, which orders
		// this write against any claim of the job (a claim committed
		// first makes it match nothing), and it comes last so that the
		// lock is held briefly, as concurrent repositories share it.
		res, err := tx.ExecContext(ctx, Bind(db.dialect, `UPDATE backfill_jobs SET
			resolved_repos = COALESCE(resolved_repos, 0) + ?, processed_repos = COALESCE(processed_repos, 0) + ?,
			failed_repos = COALESCE(failed_repos, 0) + ?, total_records = COALESCE(total_records, 0) + ?
			WHERE id = ? AND lease_token = ?`),
			resolved, processed, failed, records, jobID, l.Token)
		if err != nil {
			return fmt.Errorf("update backfill counters: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return db.fence(ctx, tx, l) // names the reason: the lease lost, or the job gone
		}
		return nil
	})
}

// ListBackfillRepos implements storage.BackfillStore.
func (db *DB) ListBackfillRepos(ctx context.Context, jobID string, f storage.BackfillRepoFilter) ([]storage.BackfillRepo, error) {
	q := `SELECT did, pds_endpoint, status, records_fetched, error, failure_reason, attempts, fetch_method FROM backfill_repos WHERE job_id = ?`
	args := []any{jobID}
	if len(f.Statuses) > 0 {
		q += ` AND status IN (` + strings.TrimSuffix(strings.Repeat("?, ", len(f.Statuses)), ", ") + `)`
		for _, s := range f.Statuses {
			args = append(args, s)
		}
	}
	if f.Resolved {
		q += ` AND pds_endpoint IS NOT NULL`
	}
	if f.After != "" {
		q, args = q+` AND did > ?`, append(args, f.After)
	}
	q, args = q+` ORDER BY did LIMIT ?`, append(args, max(f.Limit, 1))
	repos, err := queryAll(ctx, db.reader, Bind(db.dialect, q), func(row rowScanner) (storage.BackfillRepo, error) {
		var r storage.BackfillRepo
		var pds, errMsg, reason, method sql.NullString
		err := row.Scan(&r.DID, &pds, &r.Status, &r.RecordsFetched, &errMsg, &reason, &r.Attempts, &method)
		r.PDSEndpoint, r.Error, r.FailureReason, r.FetchMethod = pds.String, errMsg.String, reason.String, method.String
		return r, err
	}, args...)
	if err != nil {
		return nil, fmt.Errorf("list backfill repos: %w", err)
	}
	return repos, nil
}

// BackfillPDSSummary implements storage.BackfillStore.
func (db *DB) BackfillPDSSummary(ctx context.Context, jobID string) ([]storage.PDSSummary, error) {
	out, err := queryAll(ctx, db.reader, Bind(db.dialect, `SELECT pds_endpoint, COUNT(*),
			CAST(SUM(CASE WHEN status = ? THEN 1 ELSE 0 END) AS BIGINT), CAST(COALESCE(SUM(records_fetched), 0) AS BIGINT)
		FROM backfill_repos WHERE job_id = ? AND pds_endpoint IS NOT NULL
		GROUP BY pds_endpoint ORDER BY COUNT(*) DESC, pds_endpoint`),
		func(row rowScanner) (storage.PDSSummary, error) {
			var s storage.PDSSummary
			err := row.Scan(&s.PDSEndpoint, &s.TotalRepos, &s.CompletedRepos, &s.TotalRecords)
			return s, err
		}, storage.RepoFetched, jobID)
	if err != nil {
		return nil, fmt.Errorf("backfill PDS summary: %w", err)
	}
	return out, nil
}

// BackfillFailures implements storage.BackfillStore.
func (db *DB) BackfillFailures(ctx context.Context, jobID string) (map[string]int64, error) {
	out := map[string]int64{}
	_, err := queryAll(ctx, db.reader, Bind(db.dialect, `SELECT COALESCE(failure_reason, ''), COUNT(*)
		FROM backfill_repos WHERE job_id = ? AND status = ? GROUP BY COALESCE(failure_reason, '')`),
		func(row rowScanner) (struct{}, error) {
			var reason string
			var n int64
			err := row.Scan(&reason, &n)
			out[reason] = n
			return struct{}{}, err
		}, jobID, storage.RepoFailed)
	if err != nil {
		return nil, fmt.Errorf("backfill failures: %w", err)
	}
	return out, nil
}

// RetryBackfillRepos implements storage.BackfillStore.
func (db *DB) RetryBackfillRepos(ctx context.Context, jobID string, from []string) (int64, error) {
	var reset int64
	err := db.inTx(ctx, func(tx *sql.Tx) error {
		var status string
		err := tx.QueryRowContext(ctx, Bind(db.dialect, `SELECT status FROM backfill_jobs WHERE id = ?`), jobID).Scan(&status)
		if err != nil {
			return notFound(err)
		}
		if !slices.Contains(from, status) {
			return nil
		}
		res, err := tx.ExecContext(ctx, Bind(db.dialect, `UPDATE backfill_repos
			SET status = CASE WHEN pds_endpoint IS NULL THEN ? ELSE ? END, error = NULL, failure_reason = NULL, attempts = 0
			WHERE job_id = ? AND status = ?`), storage.RepoDiscovered, storage.RepoResolved, jobID, storage.RepoFailed)
		if err != nil {
			return fmt.Errorf("reset failed backfill repos: %w", err)
		}
		reset, _ = res.RowsAffected()
		_, err = tx.ExecContext(ctx, Bind(db.dialect, `UPDATE backfill_jobs SET status = ?, stage = ?, failed_repos = 0,
			error = NULL, completed_at = NULL WHERE id = ?`), storage.BackfillRunning, storage.StageFetching, jobID)
		if err != nil {
			return fmt.Errorf("restart backfill job: %w", err)
		}
		return nil
	})
	return reset, err
}

// DeleteBackfillRepos implements storage.BackfillStore.
func (db *DB) DeleteBackfillRepos(ctx context.Context, jobID string) (int64, error) {
	res, err := db.exec(ctx, `DELETE FROM backfill_repos WHERE job_id = ?`, jobID)
	if err != nil {
		return 0, fmt.Errorf("delete backfill repos: %w", err)
	}
	return res.RowsAffected()
}

// DeleteFinishedBackfillRepos implements storage.BackfillStore.
func (db *DB) DeleteFinishedBackfillRepos(ctx context.Context) (int64, error) {
	res, err := db.exec(ctx, `DELETE FROM backfill_repos WHERE job_id IN
		(SELECT id FROM backfill_jobs WHERE status IN (?, ?, ?, ?))`,
		storage.BackfillCompleted, storage.BackfillCompletedWithErrors, storage.BackfillCancelled, storage.BackfillFailed)
	if err != nil {
		return 0, fmt.Errorf("delete finished backfill repos: %w", err)
	}
	return res.RowsAffected()
}

// nullTime stores the zero time as NULL.
func (db *DB) nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return db.dialect.Time(t)
}
