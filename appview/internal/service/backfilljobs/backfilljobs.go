// Package backfilljobs is the service that steers backfill jobs for the
// front ends: it wraps the job manager of the public backfill package with
// the instance's audit entries, error kinds and cursors. A nil manager (an
// instance that runs no backfill) makes every call Unavailable.
package backfilljobs

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/backfill"
	"github.com/lexview/lexview/storage"
)

// Service steers backfill jobs.
type Service struct {
	jobs   *backfill.Manager
	events *eventlog.Log
}

// New returns the service over jobs (nil when the instance runs none).
func New(jobs *backfill.Manager, events *eventlog.Log) *Service {
	return &Service{jobs: jobs, events: events}
}

var (
	errUnavailable = fail.New(fail.Unavailable, "backfill is not available on this instance")
	errNotFound    = fail.New(fail.NotFound, "backfill job not found")
	errBadPhase    = fail.New(fail.Invalid, "phase must be discovered, resolved or fetched")
	errBadCursor   = fail.New(fail.Invalid, "invalid cursor")
)

// manager returns the job manager, or Unavailable.
func (s *Service) manager() (*backfill.Manager, error) {
	if s.jobs == nil {
		return nil, errUnavailable
	}
	return s.jobs, nil
}

// kind gives the manager's errors their kinds.
func kind(err error) error {
	var re *backfill.RequestError
	var se *backfill.StateError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &re):
		return fail.Wrap(fail.Invalid, re.Message, err)
	case errors.Is(err, storage.ErrNotFound):
		return errNotFound
	case errors.As(err, &se):
		return fail.Wrap(fail.Invalid, se.Error(), err)
	}
	return err
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (s *Service) audit(ctx context.Context, actor, eventType, subject string, detail map[string]any) {
	s.events.Record(ctx, eventlog.Entry{Type: eventType, ActorDID: actor, Subject: subject, Detail: detail})
}

// Create starts a job on behalf of actor (backfill.created).
func (s *Service) Create(ctx context.Context, actor string, req backfill.Request) (storage.BackfillJob, error) {
	m, err := s.manager()
	if err != nil {
		return storage.BackfillJob{}, err
	}
	j, err := m.Create(ctx, req)
	if err != nil {
		return j, kind(err)
	}
	s.audit(ctx, actor, "backfill.created", j.ID, map[string]any{
		"collection": optional(j.Collection), "scope": j.Scope, "accounts": len(j.DIDs),
	})
	return j, nil
}

// List returns every job, newest first.
func (s *Service) List(ctx context.Context) ([]storage.BackfillJob, error) {
	m, err := s.manager()
	if err != nil {
		return nil, err
	}
	return m.List(ctx)
}

// Get returns one job.
func (s *Service) Get(ctx context.Context, id string) (storage.BackfillJob, error) {
	m, err := s.manager()
	if err != nil {
		return storage.BackfillJob{}, err
	}
	j, err := m.Get(ctx, id)
	return j, kind(err)
}

// Control is a state change of a job: Cancel, Pause or Resume.
type Control struct {
	event string
	run   func(m *backfill.Manager, ctx context.Context, id string) (storage.BackfillJob, error)
}

// The job controls.
var (
	Cancel = Control{"backfill.cancelled", (*backfill.Manager).Cancel}
	Pause  = Control{"backfill.paused", (*backfill.Manager).Pause}
	Resume = Control{"backfill.resumed", (*backfill.Manager).Resume}
)

// Steer applies a control to job id on behalf of actor and audits it.
func (s *Service) Steer(ctx context.Context, actor string, c Control, id string) (storage.BackfillJob, error) {
	m, err := s.manager()
	if err != nil {
		return storage.BackfillJob{}, err
	}
	j, err := c.run(m, ctx, id)
	if err != nil {
		return j, kind(err)
	}
	s.audit(ctx, actor, c.event, id, map[string]any{"collection": optional(j.Collection)})
	return j, nil
}

// Repos returns a page of a job's repositories in a phase (discovered,
// resolved or fetched; "" is discovered) and the cursor of the next page
// ("" on the last one).
func (s *Service) Repos(ctx context.Context, id, phase, cursor string, limit int) ([]storage.BackfillRepo, string, error) {
	m, err := s.manager()
	if err != nil {
		return nil, "", err
	}
	if err := CheckPhase(phase); err != nil {
		return nil, "", err
	}
	if phase == "" {
		phase = backfill.PhaseDiscovered
	}
	scope := "backfill-repos\x00" + id + "\x00" + phase
	after := ""
	if cursor != "" {
		pos, err := storage.DecodeCursor(scope, cursor)
		if err != nil {
			return nil, "", errBadCursor
		}
		after = pos.URI
	}
	rows, next, err := m.Repos(ctx, id, phase, after, limit)
	if err != nil || next == "" {
		return rows, "", kind(err)
	}
	return rows, storage.EncodeCursor(scope, storage.Position{URI: next}), nil
}

// PDSSummary summarises a job's repositories by PDS.
func (s *Service) PDSSummary(ctx context.Context, id string) ([]storage.PDSSummary, error) {
	m, err := s.manager()
	if err != nil {
		return nil, err
	}
	rows, err := m.PDSSummary(ctx, id)
	return rows, kind(err)
}

// DeleteDetails removes a finished job's per-repository rows on behalf of
// actor.
func (s *Service) DeleteDetails(ctx context.Context, actor, id string) error {
	m, err := s.manager()
	if err != nil {
		return err
	}
	if err := m.DeleteDetails(ctx, id); err != nil {
		return kind(err)
	}
	s.audit(ctx, actor, "backfill.details_deleted", id, nil)
	return nil
}

// DeleteFinishedDetails removes the per-repository rows of every finished
// job on behalf of actor.
func (s *Service) DeleteFinishedDetails(ctx context.Context, actor string) error {
	m, err := s.manager()
	if err != nil {
		return err
	}
	if err := m.DeleteFinishedDetails(ctx); err != nil {
		return err
	}
	s.audit(ctx, actor, "backfill.details_deleted", "", map[string]any{"scope": "finished jobs"})
	return nil
}

// Failures counts a job's failed repositories by reason.
func (s *Service) Failures(ctx context.Context, j storage.BackfillJob) (map[string]int64, error) {
	m, err := s.manager()
	if err != nil {
		return nil, err
	}
	return m.Failures(ctx, j)
}

// CompletedEvent is the job_completed event of a finished job.
func (s *Service) CompletedEvent(ctx context.Context, j storage.BackfillJob) backfill.Event {
	if s.jobs == nil {
		return backfill.CompletedEvent(j, nil)
	}
	return s.jobs.CompletedEvent(ctx, j)
}

// Retry fetches again the failed repositories of a job that completed
// with errors, on behalf of actor (backfill.retried), and returns the job
// and how many repositories it made pending.
func (s *Service) Retry(ctx context.Context, actor, id string) (storage.BackfillJob, int64, error) {
	m, err := s.manager()
	if err != nil {
		return storage.BackfillJob{}, 0, err
	}
	j, n, err := m.Retry(ctx, id)
	if err != nil {
		return j, 0, kind(err)
	}
	s.audit(ctx, actor, "backfill.retried", id, map[string]any{"collection": optional(j.Collection), "repos": n})
	return j, n, nil
}

// Subscribe follows a job's progress events, and returns the job as it is
// once the subscription is in place (so that no event falls between).
func (s *Service) Subscribe(ctx context.Context, id string) (*backfill.Subscription, storage.BackfillJob, error) {
	m, err := s.manager()
	if err != nil {
		return nil, storage.BackfillJob{}, err
	}
	sub := m.Subscribe(id)
	j, err := m.Get(ctx, id)
	if err != nil {
		sub.Close()
		return nil, j, kind(err)
	}
	return sub, j, nil
}

// Available returns Unavailable when the instance runs no backfill.
func (s *Service) Available() error {
	_, err := s.manager()
	return err
}

// CheckPhase refuses (Invalid) a repository phase other than discovered,
// resolved, fetched or "" (discovered).
func CheckPhase(phase string) error {
	if phase != "" && !backfill.ValidPhase(phase) {
		return errBadPhase
	}
	return nil
}

// ETA is how many seconds a running job's fetching stage still needs at
// the rate it has kept since it started (repositories fetched or failed
// per second), or nil when that is not known yet: before fetching, or
// before any repository finished.
func ETA(j storage.BackfillJob, now time.Time) *int64 {
	if j.Status != storage.BackfillRunning || j.Stage != storage.StageFetching || j.StartedAt.IsZero() || j.TotalRepos == nil {
		return nil
	}
	done := deref(j.ProcessedRepos) + deref(j.FailedRepos)
	elapsed := now.Sub(j.StartedAt).Seconds()
	if done == 0 || elapsed <= 0 {
		return nil
	}
	eta := int64(math.Ceil(float64(max(*j.TotalRepos-done, 0)) * elapsed / float64(done)))
	return &eta
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}
