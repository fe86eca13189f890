package backfill

import (
	"context"
	"errors"
	"time"

	"github.com/lexview/lexview/storage"
)

// Run processes jobs until ctx ends. It first applies the restart rules
// (pausing becomes paused, cancelling becomes cancelled), then takes
// running jobs one at a time, oldest first.
func (m *Manager) Run(ctx context.Context) {
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
			m.recoverJobs(ctx) // settles a stop request whose settling failed
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
			if _, err := m.settleStopped(ctx, j.ID); err != nil {
				m.cfg.Logger.Error("backfill: settling a stopped job failed", "job", j.ID, "err", err)
			}
		}
	}
}

// claim picks the next running job and marks it as the worker's; nil
// when there is none.
func (m *Manager) claim(ctx context.Context) (storage.BackfillJob, *active) {
	m.mu.Lock()
	defer m.mu.Unlock()
	job, err := m.cfg.Store.NextBackfillJob(ctx)
	if err != nil {
		if !errors.Is(err, storage.ErrNotFound) && ctx.Err() == nil {
			m.cfg.Logger.Error("backfill: looking for the next job failed", "err", err)
		}
		return job, nil
	}
	m.current = &active{id: job.ID, stop: make(chan struct{})}
	return job, m.current
}

// process runs one job until it finishes, stops at a checkpoint, or ctx
// ends (it then stays running, to resume at the next start).
func (m *Manager) process(ctx context.Context, job storage.BackfillJob, act *active) {
	log := m.cfg.Logger.With("job", job.ID)
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
	if ctx.Err() != nil {
		log.Info("backfill job interrupted by shutdown; it resumes at the next start")
		return
	}
	bg := context.WithoutCancel(ctx)
	live := []string{storage.BackfillRunning, storage.BackfillPausing, storage.BackfillCancelling}
	switch {
	case errors.Is(err, errStopped):
		if job, err := m.settleStopped(bg, job.ID); err != nil {
			log.Error("backfill: settling a stopped job failed", "err", err)
		} else {
			log.Info("backfill job stopped", "status", job.Status)
		}
	case err != nil:
		done, ferr := m.finish(bg, job.ID, live, storage.BackfillFailed, storage.StageFailed, err.Error())
		log.Error("backfill job failed", "err", err)
		if ferr == nil && done.Status == storage.BackfillFailed {
			m.audit(bg, AuditEntry{Type: "backfill.failed", Severity: "error", Subject: job.ID, Detail: summary(done, deleted)})
		}
	default:
		done, ferr := m.finish(bg, job.ID, live, storage.BackfillCompleted, storage.StageCompleted, "")
		if ferr != nil {
			log.Error("backfill: completing a job failed", "err", ferr)
			return
		}
		log.Info("backfill job completed", "repos", deref(done.ProcessedRepos), "records", deref(done.TotalRecords))
		m.audit(bg, AuditEntry{Type: "backfill.completed", Subject: job.ID, Detail: summary(done, deleted)})
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
		"total_repos": j.TotalRepos, "processed_repos": j.ProcessedRepos, "total_records": j.TotalRecords,
		"records_deleted": deleted,
	}
}
