package oauthclient

import (
	"context"
	"fmt"
	"sync"
	"time"

	indigooauth "github.com/bluesky-social/indigo/atproto/auth/oauth"
	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/storage"
)

// sessionLocks serialises the use of each kept session within the
// process: a refresh spends the refresh token, and two refreshes with one
// token (a background refresh beside a write whose access token expired)
// make the authorization server refuse the second as a replay, and may
// revoke the session.
type sessionLocks struct {
	mu    sync.Mutex
	locks map[string]*sessionLock
}

type sessionLock struct {
	mu    sync.Mutex
	users int // holders and waiters; the entry goes when none is left
}

// lock takes the lock of key, or gives up when ctx ends, and returns its
// release.
func (l *sessionLocks) lock(ctx context.Context, key string) (func(), error) {
	l.mu.Lock()
	if l.locks == nil {
		l.locks = map[string]*sessionLock{}
	}
	e := l.locks[key]
	if e == nil {
		e = &sessionLock{}
		l.locks[key] = e
	}
	e.users++
	l.mu.Unlock()
	release := func() {
		l.mu.Lock()
		e.users--
		if e.users == 0 {
			delete(l.locks, key)
		}
		l.mu.Unlock()
	}
	got := make(chan struct{})
	go func() {
		e.mu.Lock()
		close(got)
	}()
	select {
	case <-got:
		return func() { e.mu.Unlock(); release() }, nil
	case <-ctx.Done():
		// The lock may still be granted later: hand it straight back.
		go func() {
			<-got
			e.mu.Unlock()
			release()
		}()
		return nil, ctx.Err()
	}
}

// WithSession resumes a kept session and runs fn with it while no other
// caller in this process uses the same session, so that the tokens fn
// sees are the latest stored and a refresh inside fn (RefreshTokens, or
// the automatic one of a request whose access token expired) never races
// another. The session is read from the store after the lock is taken.
func (c *Client) WithSession(ctx context.Context, did syntax.DID, sessionID string, fn func(*indigooauth.ClientSession) error) error {
	release, err := c.hold(ctx, did.String()+" "+sessionID)
	if err != nil {
		return err
	}
	defer release()
	sess, err := c.Session(ctx, did, sessionID)
	if err != nil {
		return err
	}
	return fn(sess)
}

// SessionLeases are the database's leases (storage.ClusterStore), which
// hold a session against the other instances sharing the database.
type SessionLeases interface {
	AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (storage.Lease, bool, error)
	ReleaseLease(ctx context.Context, l storage.Lease) error
}

const (
	// sessionLeaseTTL bounds how long a session stays held by an instance
	// that stopped without releasing it. A use of a session (a refresh, a
	// write to the PDS) ends well within it.
	sessionLeaseTTL = time.Minute
	// sessionLeaseWait is the first pause between tries of a lease
	// another instance holds; it doubles up to sessionLeaseMaxWait.
	sessionLeaseWait    = 10 * time.Millisecond
	sessionLeaseMaxWait = 250 * time.Millisecond
)

// hold takes the session key within the process, then (with Leases)
// against the other instances, or gives up when ctx ends; it returns the
// release of both.
func (c *Client) hold(ctx context.Context, key string) (func(), error) {
	unlock, err := c.locks.lock(ctx, key)
	if err != nil {
		return nil, err
	}
	if c.opt.Leases == nil {
		return unlock, nil
	}
	name := "oauth-session:" + key
	for wait := sessionLeaseWait; ; wait = min(2*wait, sessionLeaseMaxWait) {
		l, ok, err := c.opt.Leases.AcquireLease(ctx, name, c.opt.Holder, sessionLeaseTTL)
		if err != nil {
			unlock()
			return nil, fmt.Errorf("hold the OAuth session: %w", err)
		}
		if ok {
			return func() {
				if err := c.opt.Leases.ReleaseLease(context.WithoutCancel(ctx), l); err != nil {
					c.opt.Logger.Warn("releasing an OAuth session's lease failed; it expires by itself", "err", err)
				}
				unlock()
			}, nil
		}
		select {
		case <-ctx.Done():
			unlock()
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
}
