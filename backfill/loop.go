package backfill

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/lexview/lexview/storage"
)

// Run processes jobs until ctx ends. It first applies the restart rules
// (pausing becomes paused, cancelling becomes cancelled, for jobs no
// instance holds), then claims running jobs one at a time, oldest first,
// each under a lease (see ClaimBackfillJob): among the instances sharing
// the database, one works a job at a time, and a job whose lease runs out
// (its instance died) is claimed by the next instance looking for work.
// An idle worker looks every 10 PollIntervals, and at once when a job is
// created or resumed on this instance. Run also runs the on-demand
// fetches of single accounts (FetchAccount), beside the jobs.
func (m *Manager) Run(ctx context.Context) {
	m.startOnDemand(ctx)
	m.recoverJobs(ctx)
	for ctx.Err() == nil {
		if job, act := m.claim(ctx); act != nil {
			m.process(ctx, job, act)
			continue
		}
		select {
		case <-ctx.Done():
		case <-m.wake:
		case <-time.After(10 * m.cfg.PollInterval):
			m.recoverJobs(ctx) // settles a stop request whose settling failed, or whose worker died
		}
	}
}

func (m *Manager) recoverJobs(ctx context.Context) {
	jobs, err := m.cfg.Store.ListBackfillJobs(ctx)
	if err != nil {
		if ctx.Err() == nil {
			m.cfg.Logger.Error("backfill: listing jobs at start failed", "err", err)
		}
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, j := range jobs {
		if j.Status == storage.BackfillPausing || j.Status == storage.BackfillCancelling {
			if _, err := m.settleStopped(ctx, j.ID, nil); err != nil {
				m.cfg.Logger.Error("backfill: settling a stopped job failed", "job", j.ID, "err", err)
			}
		}
	}
}

// claim leases the next running job to this instance and marks it as the
// worker's; nil when there is none to claim.
func (m *Manager) claim(ctx context.Context) (storage.BackfillJob, *active) {
	m.mu.Lock()
	defer m.mu.Unlock()
	job, lease, err := m.cfg.Store.ClaimBackfillJob(ctx, m.cfg.Instance, m.cfg.LeaseDuration)
	if err != nil {
		if !errors.Is(err, storage.ErrNotFound) && ctx.Err() == nil {
			m.cfg.Logger.Error("backfill: claiming the next job failed", "err", err)
		}
		return job, nil
	}
	m.current = &active{id: job.ID, lease: lease, stop: make(chan struct{})}
	return job, m.current
}

// process runs one job until it finishes, stops at a checkpoint, loses its
// lease, or ctx ends (it then stays running, and its lease is given up for
// another instance, or the next start, to resume it).
func (m *Manager) process(ctx context.Context, job storage.BackfillJob, act *active) {
	log := m.cfg.Logger.With("job", job.ID, "instance", m.cfg.Instance, "lease_token", act.lease.Token)
	log.Info("backfill job running", "collection", job.Collection, "scope", job.Scope, "stage", job.Stage)
	r := newRun(m, job, act)
	err := r.execute(ctx)

	m.mu.Lock()
	defer m.mu.Unlock()
	m.current = nil
	deleted := m.deleted[job.ID] + r.deleted.Load()
	if deleted > 0 {
		m.deleted[job.ID] = deleted // kept while the job is paused; finish forgets it
	}
	bg := context.WithoutCancel(ctx)
	lease := &act.lease
	if act.lost.Load() || errors.Is(err, storage.ErrLeaseLost) {
		log.Warn("backfill: the job's lease was lost; another instance works it now", "err", err)
		return
	}
	defer m.release(bg, act.lease, log)
	if ctx.Err() != nil {
		log.Info("backfill job interrupted by shutdown; another instance or the next start resumes it")
		return
	}
	live := []string{storage.BackfillRunning, storage.BackfillPausing, storage.BackfillCancelling}
	switch {
	case errors.Is(err, errStopped):
		if job, err := m.settleStopped(bg, job.ID, lease); err != nil {
			log.Error("backfill: settling a stopped job failed", "err", err)
		} else {
			log.Info("backfill job stopped", "status", job.Status)
		}
	case err != nil:
		done, ferr := m.finish(bg, job.ID, lease, live, storage.BackfillFailed, storage.StageFailed, err.Error())
		log.Error("backfill job failed", "err", err)
		if ferr == nil && done.Status == storage.BackfillFailed {
			m.audit(bg, AuditEntry{Type: "backfill.failed", Severity: "error", Subject: job.ID, Detail: summary(done, deleted)})
		}
	default:
		// Completed only when every repository was fetched.
		status, severity := storage.BackfillCompleted, ""
		if now, err := m.cfg.Store.GetBackfillJob(bg, job.ID); err == nil && deref(now.FailedRepos) > 0 {
			status, severity = storage.BackfillCompletedWithErrors, "warn"
		}
		done, ferr := m.finish(bg, job.ID, lease, live, status, storage.StageCompleted, "")
		if ferr != nil {
			log.Error("backfill: completing a job failed", "err", ferr)
			return
		}
		detail := summary(done, deleted)
		detail["failures"] = m.failures(bg, done)
		log.Info("backfill job completed", "status", done.Status, "repos", deref(done.ProcessedRepos),
			"failed", deref(done.FailedRepos), "records", deref(done.TotalRecords))
		m.audit(bg, AuditEntry{Type: "backfill.completed", Severity: severity, Subject: job.ID, Detail: detail})
	}
}

// releaseTimeout bounds giving a lease up; should it fail, the lease runs
// out by itself.
const releaseTimeout = 5 * time.Second

// release gives the worker's lease up, so that another instance may claim
// the job (a running one) at once.
func (m *Manager) release(ctx context.Context, lease storage.BackfillLease, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, releaseTimeout)
	defer cancel()
	if err := m.cfg.Store.ReleaseBackfillLease(ctx, lease); err != nil && !errors.Is(err, storage.ErrLeaseLost) {
		log.Warn("backfill: giving the job's lease up failed; it runs out by itself", "err", err)
	}
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// summary is the audit detail of a finished job; deleted counts the stored
// records its runs in this process removed because their repositories no
// longer hold them.
func summary(j storage.BackfillJob, deleted int64) map[string]any {
	return map[string]any{
		"collection": nullable(j.Collection), "scope": j.Scope, "status": j.Status, "error": nullable(j.Error),
		"total_repos": j.TotalRepos, "processed_repos": j.ProcessedRepos, "failed_repos": j.FailedRepos, "total_records": j.TotalRecords,
		"records_deleted": deleted,
	}
}
