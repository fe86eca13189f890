// Package cluster coordinates Lexview instances that share one database.
//
// One instance at a time leads: it holds a lease in the database (a row
// with an expiry measured by the database's clock and a fencing token that
// grows with each acquisition) and runs the singleton work, started when
// it is elected and stopped when it steps down. The leader renews the
// lease every TTL/3; followers try to take it every Poll. A leader that
// cannot renew stops its work before the lease can have expired by its
// own reckoning (from the time it sent the last successful renewal), and
// the writes of its event sources are fenced by the token, so that a
// deposed leader cannot write even if it has not noticed yet. Every
// instance also records a heartbeat, so that the live instances can be
// counted.
//
// A Leadership without a store (SQLite: one process) leads from Start to
// Stop.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lexview/lexview/storage"
)

// Store is what leadership and heartbeats need of the database.
type Store interface {
	AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (storage.Lease, bool, error)
	RenewLease(ctx context.Context, l storage.Lease, ttl time.Duration) (bool, error)
	ReleaseLease(ctx context.Context, l storage.Lease) error
	Heartbeat(ctx context.Context, inst storage.Instance) error
	ListInstances(ctx context.Context, within time.Duration) ([]storage.Instance, error)
	RemoveInstance(ctx context.Context, id string, staleAfter time.Duration) error
}

// Work is the singleton work a leader runs.
type Work interface {
	// Lead starts the work, with the lease its writes are fenced by (nil
	// without a store). An error means nothing of it runs; the instance
	// then steps down and tries again later.
	Lead(ctx context.Context, lease *storage.Lease) error
	// StepDown stops the work, returning once it has stopped or ctx ended.
	StepDown(ctx context.Context) error
}

// Defaults.
const (
	DefaultTTL       = 6 * time.Second
	DefaultPoll      = time.Second
	DefaultLeaseName = "leader"
)

// Why leadership changed (Options.Changed).
const (
	ReasonStart   = "start"   // led from Start
	ReasonElected = "elected" // took the lease over later
	ReasonFailed  = "failed"  // the work did not start
	ReasonStop    = "stop"    // stepped down at Stop, releasing the lease
	ReasonLost    = "lost"    // could not renew, or the lease was taken
)

// Options configure a Leadership.
type Options struct {
	// Store holds the lease and heartbeats; nil: this instance always
	// leads (a SQLite database is used by one process).
	Store Store
	// InstanceID names this instance in the lease and the heartbeats.
	InstanceID string
	// Info is what the heartbeats say about the instance (JSON).
	Info []byte
	// LeaseName is the lease's name; default "leader".
	LeaseName string
	// TTL is the lease's lifetime: the longest a dead leader keeps it.
	// Default 6 s. Renewals and heartbeats run every TTL/3.
	TTL time.Duration
	// Poll is how often a follower tries to take the lease; default 1 s.
	Poll time.Duration
	// Work is the singleton work.
	Work Work
	// Changed, when set, is called with true when this instance becomes
	// the leader and false when it steps down, and why (the Reason
	// constants).
	Changed func(leading bool, reason string)
	Logger  *slog.Logger
	Now     func() time.Time
}

// Leadership runs the election for one instance. Start it, then Stop it.
type Leadership struct {
	opt Options

	mu      sync.Mutex
	lease   *storage.Lease // held lease; nil when following (or without a store)
	leading bool
	since   time.Time // when leading began

	startTime time.Time
	live      atomic.Int64 // live instances at the last heartbeat

	// deadline is when a leader steps down without a renewal: the time it
	// sent the last successful acquisition or renewal, plus the TTL. Used
	// by Start and then only by the election loop.
	deadline time.Time

	cancel context.CancelFunc
	done   chan struct{}
}

// New returns a Leadership; Start runs it.
func New(opt Options) *Leadership {
	if opt.LeaseName == "" {
		opt.LeaseName = DefaultLeaseName
	}
	if opt.TTL <= 0 {
		opt.TTL = DefaultTTL
	}
	if opt.Poll <= 0 {
		opt.Poll = DefaultPoll
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	return &Leadership{opt: opt}
}

// State is this instance's role.
type State struct {
	InstanceID string         `json:"instance_id"`
	Leading    bool           `json:"leader"`
	Since      time.Time      `json:"leader_since,omitzero"`
	Lease      *storage.Lease `json:"-"`
}

// State reports whether this instance leads, and its lease.
func (l *Leadership) State() State {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := State{InstanceID: l.opt.InstanceID, Leading: l.leading, Since: l.since}
	if l.lease != nil {
		lease := *l.lease
		st.Lease = &lease
	}
	return st
}

// Fence reports the lease the leader's writes are conditional on and
// whether this instance leads (indexer.Options.Fence).
func (l *Leadership) Fence() (*storage.Lease, bool) {
	st := l.State()
	return st.Lease, st.Leading
}

// LiveInstances counts the instances whose heartbeat is recent (at least
// 1: this one).
func (l *Leadership) LiveInstances(ctx context.Context) (int, error) {
	if l.opt.Store == nil {
		return 1, nil
	}
	list, err := l.opt.Store.ListInstances(ctx, 3*l.renewEvery())
	if err != nil {
		return 1, err
	}
	return max(1, len(list)), nil
}

// Instances lists the live instances.
func (l *Leadership) Instances(ctx context.Context) ([]storage.Instance, error) {
	if l.opt.Store == nil {
		return []storage.Instance{{ID: l.opt.InstanceID, Info: l.opt.Info}}, nil
	}
	return l.opt.Store.ListInstances(ctx, 3*l.renewEvery())
}

func (l *Leadership) renewEvery() time.Duration { return l.opt.TTL / 3 }

// Start tries once to lead, synchronously, so that a single instance runs
// its singleton work as soon as Start returns; then the election goes on
// in the background. A failure of the work's Lead in this first attempt
// is returned.
func (l *Leadership) Start(ctx context.Context) error {
	ctx, l.cancel = context.WithCancel(ctx)
	l.done = make(chan struct{})
	if l.opt.Store == nil {
		// The work sees itself leading from its start.
		l.setLeading(nil, true, ReasonStart)
		if err := l.opt.Work.Lead(ctx, nil); err != nil {
			l.setLeading(nil, false, ReasonFailed)
			l.cancel()
			close(l.done)
			return err
		}
		close(l.done)
		return nil
	}
	l.heartbeat(ctx)
	if err := l.tryLead(ctx, ReasonStart); err != nil {
		l.cancel()
		close(l.done)
		return err
	}
	go l.run(ctx)
	return nil
}

// Stop steps down (releasing the lease, so that another instance takes
// over at once), stops the election and forgets this instance's
// heartbeat.
func (l *Leadership) Stop(ctx context.Context) error {
	l.cancel()
	select {
	case <-l.done:
	case <-ctx.Done():
		return fmt.Errorf("leadership did not stop in time: %w", ctx.Err())
	}
	err := l.stepDown(ctx, true)
	if l.opt.Store != nil {
		if rerr := l.opt.Store.RemoveInstance(context.WithoutCancel(ctx), l.opt.InstanceID, time.Hour); rerr != nil {
			l.opt.Logger.Warn("removing this instance's heartbeat failed", "err", rerr)
		}
	}
	return err
}

// run is the election loop: a leader renews, a follower tries to take
// the lease; both record heartbeats.
func (l *Leadership) run(ctx context.Context) {
	defer close(l.done)
	renew := l.renewEvery()
	lastBeat := l.opt.Now()
	for {
		wait := l.opt.Poll
		if l.State().Leading {
			wait = renew
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		if now := l.opt.Now(); now.Sub(lastBeat) >= renew {
			l.heartbeat(ctx)
			lastBeat = now
		}
		st := l.State()
		if !st.Leading {
			if err := l.tryLead(ctx, ReasonElected); err != nil && ctx.Err() == nil {
				l.opt.Logger.Error("starting the leader's work failed; stepped down", "err", err)
			}
			continue
		}
		sent := l.opt.Now()
		// The renewal may take until the margin before the deadline; past
		// it the lease may be someone else's.
		margin := min(renew, time.Second)
		rctx, cancel := context.WithDeadline(ctx, l.deadline.Add(-margin))
		ok, err := l.opt.Store.RenewLease(rctx, *st.Lease, l.opt.TTL)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err == nil && ok:
			l.deadline = sent.Add(l.opt.TTL)
		case err == nil && !ok:
			l.opt.Logger.Warn("the leader's lease was taken by another instance; stepping down", "token", st.Lease.Token)
			l.stepDown(ctx, false)
		case l.opt.Now().After(l.deadline.Add(-margin)):
			l.opt.Logger.Error("the leader's lease could not be renewed in time; stepping down", "err", err)
			l.stepDown(ctx, false)
		default:
			l.opt.Logger.Warn("renewing the leader's lease failed; retrying", "err", err)
		}
	}
}

// tryLead takes the lease if it is free and starts the work.
func (l *Leadership) tryLead(ctx context.Context, reason string) error {
	sent := l.opt.Now()
	lease, ok, err := l.opt.Store.AcquireLease(ctx, l.opt.LeaseName, l.opt.InstanceID, l.opt.TTL)
	if err != nil {
		if ctx.Err() == nil {
			l.opt.Logger.Warn("trying to take the leader's lease failed", "err", err)
		}
		return nil
	}
	if !ok {
		return nil
	}
	// The work sees itself leading (and its writes fenced by the lease)
	// from its start.
	l.deadline = sent.Add(l.opt.TTL)
	l.setLeading(&lease, true, reason)
	if err := l.opt.Work.Lead(ctx, &lease); err != nil {
		l.setLeading(nil, false, ReasonFailed)
		if rerr := l.opt.Store.ReleaseLease(context.WithoutCancel(ctx), lease); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return err
	}
	l.opt.Logger.Info("this instance leads", "instance", l.opt.InstanceID, "token", lease.Token)
	return nil
}

// stepDown stops the work (bounded by the lease's lifetime) and, when
// release is set, gives the lease up.
func (l *Leadership) stepDown(ctx context.Context, release bool) error {
	st := l.State()
	if !st.Leading {
		return nil
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.opt.TTL)
	defer cancel()
	err := l.opt.Work.StepDown(sctx)
	reason := ReasonLost
	if release {
		reason = ReasonStop
	}
	l.setLeading(nil, false, reason)
	if release && st.Lease != nil && l.opt.Store != nil {
		if rerr := l.opt.Store.ReleaseLease(sctx, *st.Lease); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}
	if err != nil {
		return fmt.Errorf("step down: %w", err)
	}
	return nil
}

func (l *Leadership) setLeading(lease *storage.Lease, leading bool, reason string) {
	l.mu.Lock()
	changed := l.leading != leading
	l.lease, l.leading = lease, leading
	if leading && changed {
		l.since = l.opt.Now()
	}
	if !leading {
		l.since = time.Time{}
	}
	l.mu.Unlock()
	if changed && l.opt.Changed != nil {
		l.opt.Changed(leading, reason)
	}
}

// heartbeat records that this instance is alive and counts the live
// instances (Live).
func (l *Leadership) heartbeat(ctx context.Context) {
	err := l.opt.Store.Heartbeat(ctx, storage.Instance{ID: l.opt.InstanceID, StartedAt: l.startedAt(), Info: l.opt.Info})
	if err != nil && ctx.Err() == nil {
		l.opt.Logger.Warn("recording this instance's heartbeat failed", "err", err)
	}
	if n, err := l.LiveInstances(ctx); err == nil {
		l.live.Store(int64(n))
	}
}

// Live is the number of live instances as of the last heartbeat (every
// TTL/3), at least 1; it costs an atomic load (clients.Registry's
// SetInstances).
func (l *Leadership) Live() int { return max(1, int(l.live.Load())) }

func (l *Leadership) startedAt() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.startTime.IsZero() {
		l.startTime = l.opt.Now()
	}
	return l.startTime
}
