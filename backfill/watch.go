package backfill

import (
	"context"
	"time"
)

// Progress of jobs worked by another instance. A worker publishes its
// job's events to the subscribers of its own process; a subscriber of
// another instance sharing the database (behind a load balancer, any
// instance may answer GET /admin/backfill/{id}/events) is fed by a watcher
// instead: while the job has subscribers here and no worker of this
// instance holds it, the watcher reads the job every PollInterval and
// publishes job_counters when its status, stage or counters move, and
// job_completed once it finished. The repo_* events stay with the worker's
// instance.

// watchTimeout bounds one read of a watched job.
const watchTimeout = 5 * time.Second

// watch starts the watcher of a job unless it runs already.
func (m *Manager) watch(jobID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.watching[jobID] {
		return
	}
	m.watching[jobID] = true
	go m.watchJob(jobID)
}

func (m *Manager) watchJob(jobID string) {
	defer func() {
		m.mu.Lock()
		delete(m.watching, jobID)
		m.mu.Unlock()
	}()
	var last [7]any
	t := time.NewTicker(m.cfg.PollInterval)
	defer t.Stop()
	for range t.C {
		if !m.broker.has(jobID) {
			return
		}
		m.mu.Lock()
		local := m.current != nil && m.current.id == jobID
		m.mu.Unlock()
		if local { // the worker publishes
			last = [7]any{}
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), watchTimeout)
		job, err := m.cfg.Store.GetBackfillJob(ctx, jobID)
		cancel()
		if err != nil {
			continue
		}
		if c := counters(job); c != last {
			m.broker.publish(CountersEvent(job))
			last = c
		}
		if job.Finished() {
			ctx, cancel := context.WithTimeout(context.Background(), watchTimeout)
			m.broker.complete(m.CompletedEvent(ctx, job))
			cancel()
			return
		}
	}
}
