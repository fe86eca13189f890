package storage

import (
	"context"
	"errors"
	"time"
)

// ErrFenced is returned by ApplyBatch when the batch's Fence is no longer
// held: another instance took the lease since (its token moved on), so
// this instance must not write as the lease's holder any more. Nothing of
// the batch was written.
var ErrFenced = errors.New("storage: lease lost (fenced)")

// Lease is a named lease held by one instance. Token, the fencing token,
// grows with every acquisition: a holder's token is stale once another
// instance acquired the lease.
type Lease struct {
	Name   string
	Holder string
	Token  int64
}

// LeaseInfo is a lease as stored.
type LeaseInfo struct {
	Holder    string // "" when released or never held
	Token     int64
	ExpiresAt time.Time
	// Live reports whether the lease was unexpired, by the database's
	// clock, when it was read.
	Live bool
}

// Instance is one process sharing the database, as its heartbeats
// record it.
type Instance struct {
	ID        string
	StartedAt time.Time
	SeenAt    time.Time // last heartbeat, by the database's clock
	// Info is what the instance says about itself (its version, its
	// listening address), JSON.
	Info []byte
}

// ClusterStore coordinates instances sharing one database. Lease times
// are measured by the database's clock, so that the instances' clocks do
// not have to agree.
type ClusterStore interface {
	// AcquireLease takes the lease name for holder for ttl when it is
	// free, expired, or already holder's, with a new token. ok is false
	// (and err nil) when another holder's lease is live.
	AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (lease Lease, ok bool, err error)
	// RenewLease extends a held lease by ttl from now. ok is false when
	// the lease was taken by another acquisition (its token moved on).
	RenewLease(ctx context.Context, l Lease, ttl time.Duration) (ok bool, err error)
	// ReleaseLease gives a held lease up at once, so that another
	// instance can take it without waiting for it to expire. Releasing a
	// lease no longer held does nothing.
	ReleaseLease(ctx context.Context, l Lease) error
	// GetLease reads a lease; a lease never acquired has the zero
	// LeaseInfo.
	GetLease(ctx context.Context, name string) (LeaseInfo, error)

	// Heartbeat records that the instance is alive now (inserting it the
	// first time).
	Heartbeat(ctx context.Context, inst Instance) error
	// ListInstances returns the instances whose last heartbeat is within
	// the given time of now, oldest first.
	ListInstances(ctx context.Context, within time.Duration) ([]Instance, error)
	// RemoveInstance forgets an instance (at shutdown), and every
	// instance silent for longer than staleAfter.
	RemoveInstance(ctx context.Context, id string, staleAfter time.Duration) error
}

// ChangeWatcher is implemented by stores that announce the changes every
// instance sharing the database makes (PostgreSQL, through LISTEN/NOTIFY).
type ChangeWatcher interface {
	// WatchChanges calls fn with a table's name after each committed
	// change to one of the watched tables (the configuration: lexicons,
	// scripts, settings, API clients, keys, ...), and with "" when
	// notifications may have been missed (at the start and after the
	// connection was lost), until ctx ends. fn runs on one goroutine.
	WatchChanges(ctx context.Context, fn func(table string)) error
}
