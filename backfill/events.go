package backfill

import (
	"encoding/json"
	"sync"

	"github.com/lexview/lexview/storage"
)

// Event types of a job's progress stream.
const (
	EventRepoDiscovered  = "repo_discovered"
	EventRepoResolved    = "repo_resolved"
	EventRepoFetched     = "repo_fetched"
	EventJobCounters     = "job_counters"
	EventJobStageChanged = "job_stage_changed"
	EventJobCompleted    = "job_completed"
)

// Event is one message of a job's progress stream. It encodes as a JSON
// object whose fields depend on Type (every object has `type` and
// `job_id`):
//
//	repo_discovered    did
//	repo_resolved      did, pds_endpoint
//	repo_fetched       did, pds_endpoint, records (number fetched), records_deleted (stored records removed
//	                   because the repository no longer holds them), status ("fetched" or "failed"), error (string or null),
//	                   failure_reason (one of the Reason words, or null)
//	job_counters       status, stage, total_repos, resolved_repos, processed_repos, failed_repos, total_records
//	                   (integers or null)
//	job_stage_changed  stage
//	job_completed      status ("completed", "completed_with_errors", "failed" or "cancelled"), stage, error (string
//	                   or null), the five counters, and failures (failed repositories by reason)
type Event struct {
	Type        string
	JobID       string
	DID         string
	PDSEndpoint string
	Records     int64
	Deleted     int64 // repo_fetched: stored records removed (reconciliation)
	Status      string
	Stage       string
	Error       string
	Reason      string // repo_fetched: why it failed
	// Job carries the counters of job_counters and job_completed.
	Job *storage.BackfillJob
	// Failures counts job_completed's failed repositories by reason.
	Failures map[string]int64
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// MarshalJSON encodes the event's payload.
func (e Event) MarshalJSON() ([]byte, error) {
	m := map[string]any{"type": e.Type, "job_id": e.JobID}
	switch e.Type {
	case EventRepoDiscovered:
		m["did"] = e.DID
	case EventRepoResolved:
		m["did"], m["pds_endpoint"] = e.DID, e.PDSEndpoint
	case EventRepoFetched:
		m["did"], m["pds_endpoint"], m["records"], m["records_deleted"] = e.DID, e.PDSEndpoint, e.Records, e.Deleted
		m["status"], m["error"], m["failure_reason"] = e.Status, nullable(e.Error), nullable(e.Reason)
	case EventJobStageChanged:
		m["stage"] = e.Stage
	case EventJobCounters, EventJobCompleted:
		m["status"], m["stage"] = e.Status, e.Stage
		if e.Type == EventJobCompleted {
			m["error"] = nullable(e.Error)
			m["failures"] = e.Failures
			if e.Failures == nil {
				m["failures"] = map[string]int64{}
			}
		}
		var j storage.BackfillJob
		if e.Job != nil {
			j = *e.Job
		}
		m["total_repos"], m["resolved_repos"] = j.TotalRepos, j.ResolvedRepos
		m["processed_repos"], m["total_records"], m["failed_repos"] = j.ProcessedRepos, j.TotalRecords, j.FailedRepos
	}
	return json.Marshal(m)
}

// CountersEvent is the job_counters event describing j; the first message
// of every stream is one.
func CountersEvent(j storage.BackfillJob) Event {
	return Event{Type: EventJobCounters, JobID: j.ID, Status: j.Status, Stage: j.Stage, Job: &j}
}

// CompletedEvent is the job_completed event of a finished job whose
// failed repositories failures counts by reason.
func CompletedEvent(j storage.BackfillJob, failures map[string]int64) Event {
	return Event{Type: EventJobCompleted, JobID: j.ID, Status: j.Status, Stage: j.Stage, Error: j.Error, Job: &j, Failures: failures}
}

// subscriptionBuffer bounds the events waiting for one subscriber; a
// subscriber that falls further behind misses events (job_counters
// snapshots make up for them) but never job_completed.
const subscriptionBuffer = 1024

// broker fans events out to the subscribers of each job.
type broker struct {
	mu   sync.Mutex
	subs map[string]map[*Subscription]struct{}
}

func newBroker() *broker { return &broker{subs: map[string]map[*Subscription]struct{}{}} }

// Subscription receives the events of one job. Read Events until Done is
// closed, then Final holds the job_completed event.
type Subscription struct {
	b      *broker
	job    string
	events chan Event
	done   chan struct{}
	final  Event
	once   sync.Once
}

// Events delivers the job's events in order (some may be dropped for a
// slow reader).
func (s *Subscription) Events() <-chan Event { return s.events }

// Done is closed once the job completes.
func (s *Subscription) Done() <-chan struct{} { return s.done }

// Final is the job_completed event; valid after Done is closed.
func (s *Subscription) Final() Event {
	<-s.done
	return s.final
}

// Close ends the subscription.
func (s *Subscription) Close() {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	if subs := s.b.subs[s.job]; subs != nil {
		delete(subs, s)
		if len(subs) == 0 {
			delete(s.b.subs, s.job)
		}
	}
}

func (b *broker) subscribe(jobID string) *Subscription {
	s := &Subscription{b: b, job: jobID, events: make(chan Event, subscriptionBuffer), done: make(chan struct{})}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.subs[jobID] == nil {
		b.subs[jobID] = map[*Subscription]struct{}{}
	}
	b.subs[jobID][s] = struct{}{}
	return s
}

// has reports whether the job has subscribers.
func (b *broker) has(jobID string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs[jobID]) > 0
}

// publish delivers ev to the job's subscribers without blocking.
func (b *broker) publish(ev Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs[ev.JobID] {
		select {
		case s.events <- ev:
		default: // the subscriber is behind: drop
		}
	}
}

// complete hands every subscriber of the job its job_completed event and
// ends their subscriptions.
func (b *broker) complete(ev Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs[ev.JobID] {
		s.once.Do(func() {
			s.final = ev
			close(s.done)
		})
	}
	delete(b.subs, ev.JobID)
}
