package backfill

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/lexview/lexview/storage"
)

// Phases of GET /admin/backfill/{id}/repos.
const (
	PhaseDiscovered = "discovered" // every repository
	PhaseResolved   = "resolved"   // repositories whose PDS is known
	PhaseFetched    = "fetched"    // repositories whose records were fetched
)

// ValidPhase reports whether phase is one of the repository phases.
func ValidPhase(phase string) bool {
	return phase == PhaseDiscovered || phase == PhaseResolved || phase == PhaseFetched
}

// Repos returns a page of a job's repositories in the phase, in DID order
// after the DID after (""), and the DID to continue after ("" at the end).
// storage.ErrNotFound when the job does not exist.
func (m *Manager) Repos(ctx context.Context, jobID, phase, after string, limit int) ([]storage.BackfillRepo, string, error) {
	if _, err := m.cfg.Store.GetBackfillJob(ctx, jobID); err != nil {
		return nil, "", err
	}
	f := storage.BackfillRepoFilter{After: after, Limit: limit + 1}
	switch phase {
	case PhaseResolved:
		f.Resolved = true
	case PhaseFetched:
		f.Statuses = []string{storage.RepoFetched}
	case PhaseDiscovered:
	default:
		return nil, "", fmt.Errorf("unknown phase %q", phase)
	}
	repos, err := m.cfg.Store.ListBackfillRepos(ctx, jobID, f)
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(repos) > limit {
		repos = repos[:limit]
		next = repos[limit-1].DID
	}
	return repos, next, nil
}

// PDSSummary aggregates a job's repositories by PDS, most repositories
// first. storage.ErrNotFound when the job does not exist.
func (m *Manager) PDSSummary(ctx context.Context, jobID string) ([]storage.PDSSummary, error) {
	if _, err := m.cfg.Store.GetBackfillJob(ctx, jobID); err != nil {
		return nil, err
	}
	return m.cfg.Store.BackfillPDSSummary(ctx, jobID)
}

// DeleteDetails deletes the per-repository rows of one job.
// storage.ErrNotFound when the job does not exist.
func (m *Manager) DeleteDetails(ctx context.Context, jobID string) error {
	if _, err := m.cfg.Store.GetBackfillJob(ctx, jobID); err != nil {
		return err
	}
	_, err := m.cfg.Store.DeleteBackfillRepos(ctx, jobID)
	return err
}

// DeleteFinishedDetails deletes the per-repository rows of every
// completed, cancelled and failed job.
func (m *Manager) DeleteFinishedDetails(ctx context.Context) error {
	_, err := m.cfg.Store.DeleteFinishedBackfillRepos(ctx)
	return err
}

// Summary is the backfill part of GET /admin/stats.
type Summary struct {
	// Current is the job being processed, if any: by this instance, or
	// under a live lease by another sharing the database.
	Current *storage.BackfillJob `json:"-"`
	// Jobs counts jobs by status.
	Jobs map[string]int `json:"jobs"`
	// Waiting counts running jobs not yet started (stage pending).
	Waiting int `json:"waiting"`
	// LastFinished is the job that finished last (completed, cancelled
	// or failed), if any.
	LastFinished *storage.BackfillJob `json:"-"`
}

// Summary reports the job being processed and how many jobs are in each
// status.
func (m *Manager) Summary(ctx context.Context) (Summary, error) {
	jobs, err := m.cfg.Store.ListBackfillJobs(ctx)
	if err != nil {
		return Summary{}, err
	}
	m.mu.Lock()
	current := ""
	if m.current != nil {
		current = m.current.id
	}
	m.mu.Unlock()
	if current == "" {
		// Another instance's, by its lease (as this host's clock sees it).
		now := m.cfg.Now()
		for _, j := range jobs {
			if !j.Finished() && j.Status != storage.BackfillPaused && j.ClaimedBy != "" && j.LeaseExpiresAt.After(now) {
				current = j.ID
			}
		}
	}
	s := Summary{Jobs: map[string]int{}}
	for _, j := range jobs {
		s.Jobs[j.Status]++
		if j.Status == storage.BackfillRunning && j.Stage == storage.StagePending && j.ID != current {
			s.Waiting++
		}
		if j.ID == current {
			s.Current = &j
		}
		if j.Finished() && (s.LastFinished == nil || j.CompletedAt.After(s.LastFinished.CompletedAt)) {
			s.LastFinished = &j
		}
	}
	return s, nil
}

// MarshalJSON renders the summary with the current job as
// {id, collection, scope, status, stage, total_repos, resolved_repos,
// processed_repos, total_records} or null.
func (s Summary) MarshalJSON() ([]byte, error) {
	type plain Summary
	out := struct {
		plain
		Current any `json:"current"`
	}{plain: plain(s)}
	if j := s.Current; j != nil {
		out.Current = map[string]any{
			"id": j.ID, "collection": nullable(j.Collection), "scope": j.Scope, "status": j.Status, "stage": j.Stage,
			"total_repos": j.TotalRepos, "resolved_repos": j.ResolvedRepos, "processed_repos": j.ProcessedRepos,
			"total_records": j.TotalRecords,
		}
	}
	return json.Marshal(out)
}
