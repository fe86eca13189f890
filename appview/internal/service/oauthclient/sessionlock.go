package oauthclient

import (
	"context"
	"sync"

	indigooauth "github.com/bluesky-social/indigo/atproto/auth/oauth"
	"github.com/bluesky-social/indigo/atproto/syntax"
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
	unlock, err := c.locks.lock(ctx, did.String()+" "+sessionID)
	if err != nil {
		return err
	}
	defer unlock()
	sess, err := c.Session(ctx, did, sessionID)
	if err != nil {
		return err
	}
	return fn(sess)
}
