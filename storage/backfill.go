package storage

import (
	"context"
	"errors"
	"time"
)

// Backfill job statuses (the `status` field of a backfill job).
const (
	BackfillRunning    = "running"
	BackfillPausing    = "pausing"
	BackfillPaused     = "paused"
	BackfillCancelling = "cancelling"
	BackfillCancelled  = "cancelled"
	BackfillCompleted  = "completed"
	// BackfillCompletedWithErrors is a job that went through every
	// repository but could not fetch some (an addition to the
	// specification's statuses: a job is "completed" only when every
	// repository was fetched).
	BackfillCompletedWithErrors = "completed_with_errors"
	BackfillFailed              = "failed"
)

// Backfill job stages (the `stage` field of a backfill job).
const (
	StagePending     = "pending"
	StageDiscovering = "discovering_repos"
	StageFetching    = "resolving_and_fetching"
	StageCompleted   = "completed"
	StageFailed      = "failed"
	StageCancelled   = "cancelled"
)

// Backfill scopes.
const (
	ScopeNetwork = "network" // repositories discovered through the relay
	ScopeDIDs    = "dids"    // the accounts named in the job
)

// Per-repository statuses of a backfill job.
const (
	RepoDiscovered = "discovered" // known, PDS not resolved yet
	RepoResolved   = "resolved"   // PDS known, records not fetched yet
	RepoFetched    = "fetched"    // every record fetched and written
	RepoFailed     = "failed"     // resolution or fetching failed for good
)

// BackfillJob is one backfill job and its progress.
type BackfillJob struct {
	ID         string // UUID
	Collection string // "" for every record collection
	DID        string // set only when the job targets exactly one account
	Scope      string // ScopeNetwork or ScopeDIDs
	DIDs       []string
	Status     string
	Stage      string
	// Counters are nil until the job starts.
	TotalRepos, ResolvedRepos, ProcessedRepos, TotalRecords *int64
	// FailedRepos counts the repositories that failed for good (nil until
	// the job starts).
	FailedRepos *int64
	Error       string
	// RelayCursor is where discovery resumes; opaque to the store.
	RelayCursor string
	StartedAt   time.Time // zero until started
	CompletedAt time.Time // zero until finished
	CreatedAt   time.Time
	// ClaimedBy is the instance holding the job's lease ("" when none),
	// LeaseExpiresAt when the lease runs out unless renewed (zero when
	// none; by the database's clock), and LeaseToken the fencing token of
	// the latest claim (0 for a job never claimed).
	ClaimedBy      string
	LeaseExpiresAt time.Time
	LeaseToken     int64
}

// ErrLeaseLost is returned by the writes a lease fences when the job was
// claimed again since (by another instance, after the lease ran out): the
// writer no longer works the job and must stop.
var ErrLeaseLost = errors.New("backfill job lease lost")

// BackfillLease is one claim of a job by one instance. Token, the fencing
// token, grows with every claim of the job: a write fenced by a lease is
// applied only while the job's token is still Token. Token 0 fits a job
// never claimed.
type BackfillLease struct {
	JobID  string
	Holder string // the instance that claimed the job
	Token  int64
}

// Finished reports whether the job reached a final status.
func (j BackfillJob) Finished() bool {
	switch j.Status {
	case BackfillCompleted, BackfillCompletedWithErrors, BackfillCancelled, BackfillFailed:
		return true
	}
	return false
}

// BackfillJobUpdate changes a job, provided its status is one of From (any
// status when From is empty). Empty or zero fields are left as they are.
type BackfillJobUpdate struct {
	From        []string
	Status      string
	Stage       string
	Error       *string // nil keeps the error; "" clears it
	StartedAt   time.Time
	CompletedAt time.Time
	// StartCounters sets unset counters to zero.
	StartCounters bool
	// Lease, when set, fences the update: it is applied only while the
	// job's fencing token is Lease.Token, else UpdateBackfillJob returns
	// ErrLeaseLost.
	Lease *BackfillLease
	// Unleased applies the update only while no instance holds a live
	// lease on the job (none, or run out).
	Unleased bool
	// Release gives the job's lease up with the update (a worker settling
	// or finishing the job), keeping its fencing token.
	Release bool
}

// BackfillRepo is one repository of a backfill job.
type BackfillRepo struct {
	DID            string
	PDSEndpoint    string // "" until resolved
	Status         string // RepoDiscovered, RepoResolved, RepoFetched or RepoFailed
	RecordsFetched int64
	Error          string
	// FailureReason says why a failed repository failed, in a word the
	// job's counts group by (the backfill package names them); "" when
	// it did not fail.
	FailureReason string
	// Attempts counts the fetches of the repository that failed in a way
	// that may mend (the network, a 5xx), so that retries are bounded
	// across restarts.
	Attempts int
	// FetchMethod is how the repository was fetched: FetchCAR or
	// FetchListRecords; "" until it was.
	FetchMethod string
}

// How a backfill fetched a repository (BackfillRepo.FetchMethod).
const (
	FetchCAR         = "car"
	FetchListRecords = "list_records"
)

// BackfillRepoFilter selects a job's repositories, in DID order.
type BackfillRepoFilter struct {
	Statuses []string // any of these; empty means every status
	Resolved bool     // only repositories whose PDS is known
	After    string   // continue after this DID
	Limit    int      // at least 1
}

// PDSSummary aggregates a job's repositories by PDS.
type PDSSummary struct {
	PDSEndpoint    string
	TotalRepos     int64
	CompletedRepos int64 // repositories fetched
	TotalRecords   int64
}

// RecordVersion is what reconciliation needs to know of a stored record:
// its key and the version stored.
type RecordVersion struct {
	RKey      string
	Rev       string    // "" when the write carried none
	IndexedAt time.Time // when Lexview indexed the stored version
}

// BackfillStore keeps backfill jobs, their repositories and progress.
// Counters live with the job and are changed only together with the
// repository rows they count, so they always agree.
type BackfillStore interface {
	// CreateBackfillJob stores a new job.
	CreateBackfillJob(ctx context.Context, j BackfillJob) error
	// GetBackfillJob returns a job or ErrNotFound.
	GetBackfillJob(ctx context.Context, id string) (BackfillJob, error)
	// ListBackfillJobs returns every job, newest first.
	ListBackfillJobs(ctx context.Context) ([]BackfillJob, error)
	// ClaimBackfillJob leases the oldest job with status running to
	// holder for ttl, and returns it and the lease (with a new fencing
	// token). A job whose lease is live is not claimed, and nothing is
	// claimed while any job that is running, pausing or cancelling has a
	// live lease: one job is worked at a time across every instance
	// sharing the database. Claims by concurrent callers are serialised:
	// two never win at once. ErrNotFound when nothing can be claimed.
	// Lease times are kept by the database's clock.
	ClaimBackfillJob(ctx context.Context, holder string, ttl time.Duration) (BackfillJob, BackfillLease, error)
	// RenewBackfillLease extends the lease to ttl from now, or returns
	// ErrLeaseLost when the job was claimed again since. A lease that ran
	// out but that no one claimed since is renewed.
	RenewBackfillLease(ctx context.Context, l BackfillLease, ttl time.Duration) error
	// ReleaseBackfillLease gives the lease up, so that any instance may
	// claim the job at once; ErrLeaseLost when it was no longer held.
	ReleaseBackfillLease(ctx context.Context, l BackfillLease) error
	// UpdateBackfillJob applies u when the job's status allows it and
	// returns the job as it is afterwards, and whether it changed.
	// ErrNotFound when the job does not exist.
	UpdateBackfillJob(ctx context.Context, id string, u BackfillJobUpdate) (BackfillJob, bool, error)

	// AddBackfillRepos records discovered repositories of the lease's job
	// (DIDs already recorded are ignored), adds the new ones to
	// total_repos and stores the discovery cursor, in one transaction,
	// fenced by the lease (ErrLeaseLost). It returns how many were new.
	AddBackfillRepos(ctx context.Context, l BackfillLease, dids []string, relayCursor string) (int, error)
	// UpdateBackfillRepo saves a repository's state of the lease's job
	// and adjusts the job's counters to match, fenced by the lease
	// (ErrLeaseLost): resolved_repos when its PDS becomes known,
	// processed_repos when it becomes fetched, failed_repos when it
	// becomes or stops being failed, total_records by the change in
	// records fetched. ErrNotFound when the row does not exist.
	UpdateBackfillRepo(ctx context.Context, l BackfillLease, r BackfillRepo) error
	// ListBackfillRepos returns a page of a job's repositories.
	ListBackfillRepos(ctx context.Context, jobID string, f BackfillRepoFilter) ([]BackfillRepo, error)
	// BackfillFailures counts a job's failed repositories by failure
	// reason.
	BackfillFailures(ctx context.Context, jobID string) (map[string]int64, error)
	// RetryBackfillRepos makes the failed repositories of a finished job
	// pending again (resolved when their PDS is known, else discovered),
	// clears their errors and the failed count, and sets the job running
	// in the fetching stage, in one transaction. It reports how many
	// repositories it reset; a job whose status is not one of from is
	// left alone (0, nil). ErrNotFound when the job does not exist.
	RetryBackfillRepos(ctx context.Context, jobID string, from []string) (int64, error)
	// BackfillPDSSummary aggregates a job's resolved repositories by PDS,
	// most repositories first.
	BackfillPDSSummary(ctx context.Context, jobID string) ([]PDSSummary, error)
	// DeleteBackfillRepos deletes one job's repository rows.
	DeleteBackfillRepos(ctx context.Context, jobID string) (int64, error)
	// DeleteFinishedBackfillRepos deletes the repository rows of every
	// finished job (completed, completed with errors, cancelled, failed).
	DeleteFinishedBackfillRepos(ctx context.Context) (int64, error)

	// ListRecordVersions returns up to limit of the records stored for
	// one repository's collection, by record key ascending, after the
	// record key after ("" starts at the first): only the versions, not
	// the records, which a backfill compares with a repository's listing.
	ListRecordVersions(ctx context.Context, did, collection, after string, limit int) ([]RecordVersion, error)
}
