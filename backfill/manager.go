// Package backfill runs backfill jobs: it discovers repositories (through
// the relay, or from a list of accounts), resolves each to its PDS, fetches
// the records of the wanted collections with com.atproto.repo.listRecords,
// and writes them through the batch writer it is given (Writer). Once a
// collection's listing is complete it also deletes, through the same
// writer, the records Lexview holds that the repository no longer holds
// (see reconcile.go for the rule that spares records written live).
//
// Jobs follow the specification's state machine. Statuses: running,
// pausing, paused, cancelling, cancelled, completed, failed. Stages:
// pending → discovering_repos → resolving_and_fetching → completed, failed
// or cancelled. Pause and cancel take effect at the worker's next
// checkpoint (between discovery pages, before each repository, and between
// record pages). One job is processed at a time, oldest first, across every
// instance sharing the database: a worker claims a job under a lease
// (storage.BackfillStore.ClaimBackfillJob) that it renews, and its
// progress writes are fenced by the lease's token, so that a job whose
// worker died is taken over by another instance once the lease runs out,
// and a worker that lost its lease stops (loop.go). The others wait in
// their current stage. Progress (per-repository rows, counters and the
// discovery cursor) is stored as it happens, so a paused job resumes where
// it stopped and, after a restart or a takeover, running jobs resume,
// pausing jobs become paused and cancelling jobs become cancelled.
//
// Beside the jobs, one account's repository can be fetched at once, outside
// any job, when the account signs in or an operator asks (FetchAccount,
// ondemand.go).
//
// Instance settings read at the start of each job run (values outside the
// bounds are clamped):
//
//	backfill.concurrency           repositories fetched at once, 1 to 64, default 8
//	backfill.per_host_concurrency  repositories fetched at once from one PDS host, 1 to 16, default 4
package backfill

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bluesky-social/indigo/atproto/identity"
	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
)

// Store is the persistence the manager needs.
type Store interface {
	storage.BackfillStore
	GetSetting(ctx context.Context, key string) (string, error)
}

// Writer commits record changes as bulk work, behind live ingestion, and
// waits for the commit. Changes it refuses (validation) are its own
// business; an error means the changes were not written. A backfill hands
// it creates, and deletes (carrying the repository revision the fetch
// read) for the records a repository no longer holds.
type Writer interface {
	WriteBulk(ctx context.Context, source string, changes []storage.Change) error
}

// Audit records what happens to jobs in the instance's event log.
type Audit interface {
	Record(ctx context.Context, e AuditEntry)
}

// AuditEntry is one event of a job's life (backfill.created, .completed,
// .failed, ...).
type AuditEntry struct {
	Type     string
	Severity string // "" (info), "warn" or "error"
	ActorDID string
	Subject  string // the job ID
	Detail   any
}

// Metrics counts repositories and records as they finish.
type Metrics interface {
	BackfillRepo(outcome, reason string, records int)
}

// Snapshotter hands out the current lexicon snapshot (*lexicon.Registry).
type Snapshotter interface {
	Snapshot() *lexicon.Snapshot
}

// Options configure a Manager. Store, Writer, Lexicons and
// Directory are required; tuning fields left at zero take defaults.
type Options struct {
	Store      Store
	Writer     Writer
	Lexicons   Snapshotter
	Directory  identity.Directory
	HTTPClient *http.Client // required: reaches PDSes, whose addresses accounts choose (pass a guarded client)
	RelayURL   string
	// RelayHTTPClient reaches RelayURL; default HTTPClient. It may allow
	// the relay's own origin on a private network, which HTTPClient must
	// not: PDS endpoints come from DID documents.
	RelayHTTPClient *http.Client
	Events          Audit   // audit trail; nil records nothing
	Metrics         Metrics // nil records nothing
	Logger          *slog.Logger
	Now             func() time.Time

	PageSize          int           // listRecords page size; default 100
	DiscoveryPageSize int           // relay page size; default 1000
	RequestTimeout    time.Duration // per outbound request; default 30s
	Retries           int           // retries of network errors and 5xx; default 3
	RetryBackoff      time.Duration // first retry delay, doubling; default 500ms
	MaxRateLimitWait  time.Duration // longest 429 wait honoured; default 60s
	PollInterval      time.Duration // job status and counters refresh; default 1s
	MaxRepoSize       int64         // largest getRepo export read; default DefaultMaxRepoSize
	RepoTimeout       time.Duration // one getRepo download; default DefaultRepoTimeout

	// Instance names this process among the instances sharing the
	// database, as the holder of the job leases it takes; default the
	// host name and a random suffix. Two running Managers must not share
	// one.
	Instance string
	// LeaseDuration is how long a claimed job stays leased without a
	// renewal (the worker renews every third of it): how soon another
	// instance takes over the job of one that died. Default
	// DefaultLeaseDuration.
	LeaseDuration time.Duration
	// OnDemand bounds the fetches of one account asked for by sign-ins,
	// operators and queries (ondemand.go).
	OnDemand OnDemandOptions
}

// DefaultLeaseDuration is the default Options.LeaseDuration.
const DefaultLeaseDuration = 15 * time.Second

// Source is the indexer source name of backfilled records.
const Source = "backfill"

// Settings keys and their bounds.
const (
	SettingConcurrency        = "backfill.concurrency"
	SettingPerHostConcurrency = "backfill.per_host_concurrency"
	DefaultConcurrency        = 8
	MaxConcurrency            = 64
	DefaultPerHostConcurrency = 4
	MaxPerHostConcurrency     = 16
)

// ErrWrongState is matched (errors.Is) by the *StateError returned when a
// job's status does not allow the requested change.
var ErrWrongState = errors.New("wrong job state")

// StateError reports a job whose status does not allow an action.
type StateError struct {
	Status string // the job's status
	Want   string // the status the action needs
}

func (e *StateError) Error() string { return fmt.Sprintf("job is %s, not %s", e.Status, e.Want) }

// Is makes errors.Is(err, ErrWrongState) true.
func (e *StateError) Is(target error) bool { return target == ErrWrongState }

// Manager creates and steers backfill jobs and runs the one worker that
// processes them.
type Manager struct {
	cfg    Options
	http   *fetcher
	broker *broker
	wake   chan struct{}

	mu      sync.Mutex
	current *active // the job being processed, if any
	// deleted sums, per unfinished job, the records its earlier runs in
	// this process removed (reconciliation), for its final audit entry.
	deleted map[string]int64
	// watching holds the jobs whose watcher runs (watch.go).
	watching map[string]bool
	// od is the on-demand lane (ondemand.go).
	od *onDemand
}

// active is the job the worker is processing, under its lease.
type active struct {
	id    string
	lease storage.BackfillLease
	stop  chan struct{}
	once  sync.Once
	lost  atomic.Bool // the lease was lost: another instance works the job
}

func (a *active) signal()       { a.once.Do(func() { close(a.stop) }) }
func (a *active) stopped() bool { return isClosed(a.stop) }

// lose notes that the lease was lost and stops the run.
func (a *active) lose() {
	a.lost.Store(true)
	a.signal()
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// New returns a Manager; call Run to process jobs. Store, Writer,
// Lexicons, Directory and HTTPClient are required: there is no default
// HTTP client, so that nothing reaches the network unguarded.
func New(cfg Options) (*Manager, error) {
	switch {
	case cfg.Store == nil, cfg.Writer == nil, cfg.Lexicons == nil, cfg.Directory == nil:
		return nil, errors.New("backfill: Store, Writer, Lexicons and Directory are required")
	case cfg.HTTPClient == nil:
		return nil, errors.New("backfill: HTTPClient is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&cfg.PageSize, 100)
	def(&cfg.DiscoveryPageSize, 1000)
	defDur(&cfg.RequestTimeout, 30*time.Second)
	def(&cfg.Retries, 3)
	defDur(&cfg.RetryBackoff, 500*time.Millisecond)
	defDur(&cfg.MaxRateLimitWait, 60*time.Second)
	defDur(&cfg.PollInterval, time.Second)
	defDur(&cfg.RepoTimeout, DefaultRepoTimeout)
	if cfg.MaxRepoSize <= 0 {
		cfg.MaxRepoSize = DefaultMaxRepoSize
	}
	defDur(&cfg.LeaseDuration, DefaultLeaseDuration)
	if cfg.Instance == "" {
		cfg.Instance = defaultInstance()
	}
	m := &Manager{
		cfg: cfg,
		http: &fetcher{
			client: cfg.HTTPClient, relay: cfg.RelayURL, relayClient: cfg.RelayHTTPClient, timeout: cfg.RequestTimeout, retries: cfg.Retries, backoff: cfg.RetryBackoff,
			maxWait: cfg.MaxRateLimitWait, maxLimit: 5, maxBody: 32 << 20, now: cfg.Now,
		},
		broker:   newBroker(),
		wake:     make(chan struct{}, 1),
		deleted:  map[string]int64{},
		watching: map[string]bool{},
	}
	m.od = newOnDemand(cfg.OnDemand, m.fetchOnDemand)
	return m, nil
}

// defaultInstance names this process: its host name and a random suffix.
func defaultInstance() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "lexview"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return host + "-" + hex.EncodeToString(b[:])
}

// Instance is the name under which this Manager holds job leases.
func (m *Manager) Instance() string { return m.cfg.Instance }

// Request asks for a backfill job.
type Request struct {
	// Collection is the NSID to backfill; "" means every record collection.
	Collection string
	// Accounts are DIDs or handles (at most MaxAccounts, duplicates
	// ignored). Empty means discovering repositories through the relay.
	Accounts []string
}

// Create validates and stores a new job (status running, stage pending);
// the worker picks it up when the jobs before it are done. Invalid
// requests, including accounts that do not resolve to a DID with a PDS,
// return a *RequestError and create nothing.
func (m *Manager) Create(ctx context.Context, req Request) (storage.BackfillJob, error) {
	collection := strings.TrimSpace(req.Collection)
	if collection != "" {
		if _, err := syntax.ParseNSID(collection); err != nil {
			return storage.BackfillJob{}, &RequestError{Message: "invalid collection NSID: " + collection}
		}
	}
	accounts := normalizeAccounts(req.Accounts)
	if len(accounts) > MaxAccounts {
		return storage.BackfillJob{}, &RequestError{
			Message: fmt.Sprintf("too many accounts: %d given, at most %d per request", len(accounts), MaxAccounts),
		}
	}
	job := storage.BackfillJob{
		ID: storage.NewID(), Collection: collection, Scope: storage.ScopeNetwork,
		Status: storage.BackfillRunning, Stage: storage.StagePending, CreatedAt: m.cfg.Now(),
	}
	if len(accounts) > 0 {
		dids, bad := resolveAccounts(ctx, m.cfg.Directory, accounts)
		if len(bad) > 0 {
			return storage.BackfillJob{}, &RequestError{
				Message: "unresolvable accounts: " + strings.Join(bad, ", "), Unresolvable: bad,
			}
		}
		job.Scope, job.DIDs = storage.ScopeDIDs, dids
		if len(dids) == 1 {
			job.DID = dids[0]
		}
	}
	if err := m.cfg.Store.CreateBackfillJob(ctx, job); err != nil {
		return storage.BackfillJob{}, fmt.Errorf("create backfill job: %w", err)
	}
	m.poke()
	return job, nil
}

// CollectionJob is the network job CreateForCollection started or found.
type CollectionJob struct {
	Job storage.BackfillJob
	// Created is false when an unfinished network job of the collection
	// already existed: Job is that one, and nothing new was started.
	Created bool
	// RelayURL is where the job discovers repositories.
	RelayURL string
}

// CreateForCollection starts a network backfill of a collection, as
// uploading a record lexicon with backfill true does, unless an unfinished
// network job for that collection already exists (it is returned). A new
// job is audited as backfill.created by actorDID, with a
// backfill.network_crawl warning: it fetches the collection from every
// repository of the network the relay knows.
func (m *Manager) CreateForCollection(ctx context.Context, collection, actorDID string) (CollectionJob, error) {
	jobs, err := m.cfg.Store.ListBackfillJobs(ctx)
	if err != nil {
		return CollectionJob{}, fmt.Errorf("list backfill jobs: %w", err)
	}
	for _, j := range jobs {
		if j.Scope == storage.ScopeNetwork && j.Collection == collection && !j.Finished() {
			return CollectionJob{Job: j, RelayURL: m.cfg.RelayURL}, nil
		}
	}
	job, err := m.Create(ctx, Request{Collection: collection})
	if err != nil {
		return CollectionJob{}, err
	}
	m.audit(ctx, AuditEntry{Type: "backfill.created", ActorDID: actorDID, Subject: job.ID, Detail: map[string]any{
		"collection": collection, "scope": job.Scope, "trigger": "lexicon",
	}})
	m.audit(ctx, AuditEntry{Type: "backfill.network_crawl", Severity: "warn", ActorDID: actorDID, Subject: job.ID, Detail: map[string]any{
		"collection": collection, "relay_url": m.cfg.RelayURL, "trigger": "lexicon",
	}})
	return CollectionJob{Job: job, Created: true, RelayURL: m.cfg.RelayURL}, nil
}

// Get returns one job or storage.ErrNotFound.
func (m *Manager) Get(ctx context.Context, id string) (storage.BackfillJob, error) {
	return m.cfg.Store.GetBackfillJob(ctx, id)
}

// List returns every job, newest first.
func (m *Manager) List(ctx context.Context) ([]storage.BackfillJob, error) {
	return m.cfg.Store.ListBackfillJobs(ctx)
}

// Pause asks a running job to pause (status pausing; paused at the next
// checkpoint). It returns the job with status pausing, a *StateError when
// the job is not running, or storage.ErrNotFound.
func (m *Manager) Pause(ctx context.Context, id string) (storage.BackfillJob, error) {
	return m.stop(ctx, id, storage.BackfillPausing)
}

// Cancel asks a running job to stop for good (status cancelling; cancelled
// at the next checkpoint), with the errors of Pause.
func (m *Manager) Cancel(ctx context.Context, id string) (storage.BackfillJob, error) {
	return m.stop(ctx, id, storage.BackfillCancelling)
}

func (m *Manager) stop(ctx context.Context, id, to string) (storage.BackfillJob, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	job, changed, err := m.cfg.Store.UpdateBackfillJob(ctx, id, storage.BackfillJobUpdate{
		From: []string{storage.BackfillRunning}, Status: to,
	})
	if err != nil {
		return job, err
	}
	if !changed {
		return job, &StateError{Status: job.Status, Want: storage.BackfillRunning}
	}
	if m.current != nil && m.current.id == id {
		m.current.signal()
		return job, nil
	}
	// No worker of this instance holds the job. Unless a worker of
	// another instance holds its lease (it then reads the new status at
	// its next checkpoint and settles the job), this is its checkpoint.
	// (Should this fail, an idle worker settles the job later.)
	if _, err := m.settleStopped(context.WithoutCancel(ctx), id, nil); err != nil {
		return job, err
	}
	return job, nil
}

// Resume continues a paused job where it left off. It returns the job with
// status running, a *StateError when the job is not paused, or
// storage.ErrNotFound.
func (m *Manager) Resume(ctx context.Context, id string) (storage.BackfillJob, error) {
	job, changed, err := m.cfg.Store.UpdateBackfillJob(ctx, id, storage.BackfillJobUpdate{
		From: []string{storage.BackfillPaused}, Status: storage.BackfillRunning,
	})
	if err != nil {
		return job, err
	}
	if !changed {
		return job, &StateError{Status: job.Status, Want: storage.BackfillPaused}
	}
	m.broker.publish(CountersEvent(job))
	m.poke()
	return job, nil
}

// Subscribe follows a job's progress events until its job_completed event.
// Subscribe before reading the job's snapshot, so nothing falls between.
// A job worked by another instance is followed by reading it every
// PollInterval (watch.go).
func (m *Manager) Subscribe(jobID string) *Subscription {
	sub := m.broker.subscribe(jobID)
	m.watch(jobID)
	return sub
}

// poke wakes the worker to look for work.
func (m *Manager) poke() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

func (m *Manager) audit(ctx context.Context, e AuditEntry) {
	if m.cfg.Events != nil {
		m.cfg.Events.Record(ctx, e)
	}
}

// settleStopped moves a pausing job to paused and a cancelling job to
// cancelled, publishing the events. lease is the worker's, which fences the
// change and is given up with it; nil (no worker of this instance holds
// the job) changes the job only while no instance holds a live lease on
// it. The caller holds mu.
func (m *Manager) settleStopped(ctx context.Context, id string, lease *storage.BackfillLease) (storage.BackfillJob, error) {
	job, err := m.cfg.Store.GetBackfillJob(ctx, id)
	if err != nil {
		return job, err
	}
	switch job.Status {
	case storage.BackfillPausing:
		var changed bool
		job, changed, err = m.cfg.Store.UpdateBackfillJob(ctx, id, storage.BackfillJobUpdate{
			From: []string{storage.BackfillPausing}, Status: storage.BackfillPaused,
			Lease: lease, Unleased: lease == nil, Release: lease != nil,
		})
		if err == nil && changed {
			m.broker.publish(CountersEvent(job))
		}
	case storage.BackfillCancelling:
		return m.finish(ctx, id, lease, []string{storage.BackfillCancelling}, storage.BackfillCancelled, storage.StageCancelled, "")
	}
	return job, err
}

// finish moves a job to a final status and publishes job_completed, fenced
// by lease as settleStopped is. The caller holds mu.
func (m *Manager) finish(ctx context.Context, id string, lease *storage.BackfillLease, from []string,
	status, stage, errMsg string) (storage.BackfillJob, error) {
	job, changed, err := m.cfg.Store.UpdateBackfillJob(ctx, id, storage.BackfillJobUpdate{
		From: from, Status: status, Stage: stage, Error: &errMsg, CompletedAt: m.cfg.Now(),
		Lease: lease, Unleased: lease == nil, Release: lease != nil,
	})
	if err != nil || !changed {
		return job, err
	}
	delete(m.deleted, id)
	m.broker.publish(Event{Type: EventJobStageChanged, JobID: id, Stage: stage})
	m.broker.publish(CountersEvent(job))
	m.broker.complete(m.CompletedEvent(ctx, job))
	return job, nil
}

// CompletedEvent is the job_completed event of a finished job, with its
// failed repositories by reason read from the store.
func (m *Manager) CompletedEvent(ctx context.Context, j storage.BackfillJob) Event {
	return CompletedEvent(j, m.failures(ctx, j))
}

// Failures counts a job's failed repositories by reason (empty for a job
// with none).
func (m *Manager) Failures(ctx context.Context, j storage.BackfillJob) (map[string]int64, error) {
	if j.FailedRepos == nil || *j.FailedRepos == 0 {
		return map[string]int64{}, nil
	}
	return m.cfg.Store.BackfillFailures(ctx, j.ID)
}

func (m *Manager) failures(ctx context.Context, j storage.BackfillJob) map[string]int64 {
	f, err := m.Failures(ctx, j)
	if err != nil {
		m.cfg.Logger.Warn("backfill: counting a job's failures failed", "job", j.ID, "err", err)
	}
	return f
}

// Retry fetches the failed repositories of a job that completed with
// errors again: they become pending, the job runs again in its fetching
// stage, and the repositories it fetched stay fetched. It returns the job
// and how many repositories it made pending, a *StateError when the job
// did not complete with errors, or storage.ErrNotFound.
func (m *Manager) Retry(ctx context.Context, id string) (storage.BackfillJob, int64, error) {
	n, err := m.cfg.Store.RetryBackfillRepos(ctx, id, []string{storage.BackfillCompletedWithErrors})
	if err != nil {
		return storage.BackfillJob{}, 0, err
	}
	job, err := m.cfg.Store.GetBackfillJob(ctx, id)
	if err != nil {
		return job, 0, err
	}
	if job.Status != storage.BackfillRunning {
		return job, 0, &StateError{Status: job.Status, Want: storage.BackfillCompletedWithErrors}
	}
	m.broker.publish(CountersEvent(job))
	m.poke()
	return job, n, nil
}
