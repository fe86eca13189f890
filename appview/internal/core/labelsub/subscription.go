package labelsub

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"time"

	"github.com/bluesky-social/indigo/atproto/atcrypto"
	"github.com/bluesky-social/indigo/atproto/identity"
	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/storage"
)

// Subscription states, as in the lexview_labeler_connections metric.
const (
	stateResolving  = "resolving"
	stateConnecting = "connecting"
	stateConnected  = "connected"
	stateWaiting    = "waiting" // backing off before the next attempt
)

// subscription follows one labeler's stream until cancelled or until the
// labeler is no longer active.
type subscription struct {
	cfg    Options
	did    string
	cancel context.CancelFunc
	done   chan struct{}
	report *reporter
	state  string
	// refreshed is when the DID was last re-resolved after a signature
	// failed to verify.
	refreshed time.Time
	// resolveFailed is whether the last attempt could not resolve the DID.
	resolveFailed bool
	// acceptedGap is the sequence number of the last event that followed
	// a gap: seen again after the gap, it is taken as is.
	acceptedGap int64
}

func startSubscription(ctx context.Context, cfg Options, did string, report *reporter) *subscription {
	ctx, cancel := context.WithCancel(ctx)
	s := &subscription{cfg: cfg, did: did, cancel: cancel, done: make(chan struct{}), report: report}
	go func() {
		defer close(s.done)
		defer s.setState("")
		defer s.report.flush(context.WithoutCancel(ctx), true)
		s.run(ctx)
	}()
	return s
}

func (s *subscription) stop() {
	s.cancel()
	<-s.done
}

func (s *subscription) ended() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

func (s *subscription) setState(state string) {
	s.cfg.Metrics.LabelerState(s.state, state)
	s.state = state
}

// run connects, reads until the connection ends, and connects again after
// a backoff, until ctx ends or the labeler is gone.
func (s *subscription) run(ctx context.Context) {
	failures := 0
	for ctx.Err() == nil {
		progressed, err := s.attempt(ctx)
		if errors.Is(err, errGone) || ctx.Err() != nil {
			return
		}
		if progressed {
			failures = 0
		}
		failures++
		s.setState(stateWaiting)
		if !sleep(ctx, backoff(s.cfg.MinBackoff, s.cfg.MaxBackoff, failures)) {
			return
		}
	}
}

// attempt makes one connection: it reads the labeler's status and cursor,
// resolves its DID, and reads the stream until it ends. progressed
// reports whether an event was stored.
func (s *subscription) attempt(ctx context.Context) (progressed bool, err error) {
	lab, err := s.cfg.Store.GetLabeler(ctx, s.did)
	if errors.Is(err, storage.ErrNotFound) || (err == nil && lab.Status != storage.LabelerActive) {
		return false, errGone
	}
	if err != nil {
		s.cfg.Logger.Warn("reading labeler failed", "labeler", s.did, "err", err)
		return false, err
	}
	var cursor int64
	if lab.Cursor != nil {
		cursor = *lab.Cursor
	}
	s.setState(stateResolving)
	// After a failed resolution, the directory's cached error is skipped.
	target, err := s.resolve(ctx, s.resolveFailed)
	s.resolveFailed = err != nil
	if err != nil {
		if ctx.Err() == nil {
			s.report.record(ctx, "labeler.resolve_failed", eventlog.Warn, map[string]any{"error": err.Error()})
		}
		return false, err
	}
	s.setState(stateConnecting)
	st := &stream{sub: s, target: target, cursor: cursor}
	st.lastRead.Store(time.Now().UnixNano())
	err = st.run(ctx)
	if errors.Is(err, errGone) || ctx.Err() != nil {
		return st.stored > 0, err
	}
	detail := map[string]any{"error": err.Error(), "cursor": st.cursor}
	s.report.record(ctx, "labeler.disconnected", eventlog.Warn, detail)
	s.cfg.Logger.Info("labeler stream ended", "labeler", s.did, "cursor", st.cursor, "err", err)
	return st.stored > 0, err
}

// target is where a labeler's stream is and the key its labels are
// signed with.
type target struct {
	endpoint string // ws:// or wss:// URL of the labeler service
	key      atcrypto.PublicKey
}

// resolve looks the labeler's DID up (purging the directory's cached
// document first when fresh) and returns its stream endpoint and label
// key.
func (s *subscription) resolve(ctx context.Context, fresh bool) (target, error) {
	did, err := syntax.ParseDID(s.did)
	if err != nil {
		return target{}, fmt.Errorf("invalid DID: %w", err)
	}
	ident, err := s.lookup(ctx, did, fresh)
	if err != nil {
		return target{}, fmt.Errorf("resolving %s: %w", did, err)
	}
	endpoint := ident.GetServiceEndpoint("atproto_labeler")
	if endpoint == "" {
		return target{}, errors.New("the DID document has no #atproto_labeler service")
	}
	key, err := ident.GetPublicKey("atproto_label")
	if err != nil {
		return target{}, fmt.Errorf("the DID document has no usable #atproto_label key: %w", err)
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return target{}, fmt.Errorf("invalid labeler endpoint %q", endpoint)
	}
	switch {
	case u.Scheme == "https":
		u.Scheme = "wss"
	case u.Scheme == "http" && s.cfg.AllowHTTP:
		u.Scheme = "ws"
	default:
		return target{}, fmt.Errorf("labeler endpoint %q is not https", endpoint)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/xrpc/com.atproto.label.subscribeLabels"
	u.RawQuery, u.Fragment = "", ""
	return target{endpoint: u.String(), key: key}, nil
}

// resolveTimeout bounds a DID lookup.
const resolveTimeout = 30 * time.Second

// lookup resolves did in the directory on a context of its own, so that
// a subscription stopped meanwhile does not leave a cancellation cached
// as the DID's resolution error; it returns when ctx ends, leaving the
// lookup to finish (within resolveTimeout) in the background.
func (s *subscription) lookup(ctx context.Context, did syntax.DID, fresh bool) (*identity.Identity, error) {
	type result struct {
		ident *identity.Identity
		err   error
	}
	done := make(chan result, 1)
	go func() {
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), resolveTimeout)
		defer cancel()
		if fresh {
			_ = s.cfg.Directory.Purge(lctx, did.AtIdentifier())
		}
		ident, err := s.cfg.Directory.LookupDID(lctx, did)
		done <- result{ident, err}
	}()
	select {
	case r := <-done:
		return r.ident, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// backoff is the wait after the n-th consecutive failure (n >= 1): min
// doubled n-1 times, capped at max, plus up to half of it at random.
func backoff(min, max time.Duration, n int) time.Duration {
	d := min
	for i := 1; i < n && d < max; i++ {
		d *= 2
	}
	d = minDuration(d, max)
	return d + time.Duration(rand.Int64N(int64(d)/2+1))
}

func minDuration(a, b time.Duration) time.Duration {
	if a < b {
		return a
	}
	return b
}

// sleep waits d or until ctx ends; false when ctx ended.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
