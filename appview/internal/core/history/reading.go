package history

import "time"

// Reading is what the instance reports at one sampling time. Its counters
// (Source.Events, Writer's, Calls', Problems', a job's) only grow while
// the instance runs: one lower than at the previous reading was reset (a
// source restarted, another job began) and counts from zero.
type Reading struct {
	// Leading is whether this instance runs the event sources: the
	// leader among instances sharing a database (always, with SQLite).
	Leading bool
	Sources []Source
	Writer  Writer
	// Calls are the XRPC calls answered since start, by method
	// (Calls.Read).
	Calls map[string]CallCounts
	// Problems counts the event log's warn and error entries recorded by
	// this instance since start, by event type.
	Problems map[string]int64
	Backfill Backfill
	// Database is the outcome of a round trip to the database (nil: it
	// answered), and Ping how long it took.
	Database error
	Ping     time.Duration
}

// Source is one event source's status.
type Source struct {
	Name  string
	State string // idle, connecting, connected or waiting (ingest.Status)
	// Events counts the events read since start; Lag is how far behind
	// the head of its stream the source is, in seconds.
	Events int64
	Lag    float64
	// LastError is why its last connection failed or ended; empty
	// before any failure.
	LastError string
}

// States of a Source the health rules tell apart (ingest.Status): a
// connected source, and an idle one, not connected because it has no
// collection to follow.
const (
	Connected = "connected"
	Idle      = "idle"
)

// Writer is the batch writer's totals.
type Writer struct {
	Committed int64 // changes committed since start
	Refused   int64 // changes refused by validation since start
	Queued    int   // submissions waiting
}

// Backfill is the state of the backfill jobs.
type Backfill struct {
	// Current is the job being processed, nil when none.
	Current *Job
	// LastFinished is the job that finished last, nil when none has.
	LastFinished *Job
	// Waiting counts the jobs waiting for their turn.
	Waiting int
}

// Job is one backfill job's progress.
type Job struct {
	ID     string
	Status string // running, paused, completed, failed, ...
	Stage  string
	// TotalRepos is the number of repositories to fetch, -1 while they
	// are still being discovered; ProcessedRepos and Records count what
	// was fetched.
	TotalRepos, ProcessedRepos, Records int64
	Error                               string
	StartedAt                           time.Time
}
