package ingest_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lexview/lexview/appview/ingest"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/internal/jetstreamtest"
	"github.com/lexview/lexview/storage"
)

// resumeSink is a Sink with a stored position that records state changes.
type resumeSink struct {
	stored int64
	mu     sync.Mutex
	states []map[string]any
}

func (s *resumeSink) Records(context.Context, []storage.Change, int64) error { return nil }
func (s *resumeSink) Identity(context.Context, ingest.IdentityEvent)         {}
func (s *resumeSink) Account(context.Context, ingest.AccountEvent)           {}
func (s *resumeSink) Skipped(context.Context, ingest.SkippedEvent)           {}
func (s *resumeSink) Resume(context.Context) (int64, bool, error)            { return s.stored, true, nil }
func (s *resumeSink) StateChanged(_ context.Context, up bool, detail map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.states = append(s.states, map[string]any{"up": up, "detail": detail})
}

// TestStatusShowsTheResumedPosition: right after connecting, before any
// event, the status shows the position the source resumed from, not 0.
func TestStatusShowsTheResumedPosition(t *testing.T) {
	t.Parallel()
	js := jetstreamtest.New(t)
	stored := time.Now().Add(-time.Minute).UnixMicro()
	j := &ingest.Jetstream{URL: js.URL}
	sink := &resumeSink{stored: stored}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- j.Run(ctx, func() []string { return []string{"app.test.note"} }, nil, sink) }()
	eventually(t, "a subscription", func() bool { return js.Connected() == 1 })
	eventually(t, "the status", func() bool { return j.Status().Connected })
	if st := j.Status(); st.Cursor != stored {
		t.Fatalf("status cursor %d right after connecting, want the stored %d", st.Cursor, stored)
	}
	cancel()
	<-done
}

// TestHandshakeErrorHintsAtThePath: a URL without /subscribe that fails
// its handshake says what is probably wrong.
func TestHandshakeErrorHintsAtThePath(t *testing.T) {
	t.Parallel()
	js := jetstreamtest.New(t)
	var logs testenv.LogBuffer
	j := &ingest.Jetstream{URL: strings.TrimSuffix(js.URL, "/subscribe"), MinBackoff: time.Hour,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = j.Run(ctx, func() []string { return []string{"app.test.note"} }, nil, &resumeSink{}) }()
	eventually(t, "a hint in the log", func() bool {
		return strings.Contains(logs.String(), "Jetstream serves its stream at /subscribe")
	})
}

// TestStatusReportsStateHostAndLag: the status names the host and the
// connection's state, and the lag is measured from the stream's own time
// of the last event: 10 s behind while events arrive, the same once the
// stream is quiet, and the state is "waiting" once the connection is lost.
func TestStatusReportsStateHostAndLag(t *testing.T) {
	t.Parallel()
	js := jetstreamtest.New(t)
	now := time.Now()
	clock := func() time.Time { return now }
	var mu sync.Mutex
	j := &ingest.Jetstream{URL: js.URL, MinBackoff: time.Hour, Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return clock() }}
	if st := j.Status(); st.State != ingest.StateIdle || st.Lag != 0 {
		t.Fatalf("before Run: %+v", st)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- j.Run(ctx, func() []string { return []string{"app.test.note"} }, nil, &resumeSink{}) }()
	defer func() { cancel(); <-done }()
	eventually(t, "connected", func() bool { return j.Status().State == ingest.StateConnected })
	if st := j.Status(); st.Host != strings.Split(js.URL, "/")[2] || !st.Connected {
		t.Fatalf("connected status %+v, want host of %s", st, js.URL)
	}
	eventTime := time.Now().Add(-10 * time.Second)
	js.PublishBytes("", func(int64) []byte {
		return fmt.Appendf(nil, `{"did":"did:plc:alice","time_us":%d,"kind":"identity","identity":{"did":"did:plc:alice","seq":1,"time":%q}}`,
			eventTime.UnixMicro(), eventTime.Format(time.RFC3339))
	})
	eventually(t, "the event", func() bool { return j.Status().Events == 1 })
	mu.Lock()
	now = time.Now()
	mu.Unlock()
	if lag := j.Status().Lag; lag < 9.5 || lag > 12 {
		t.Fatalf("lag %v s, want about 10", lag)
	}
	// A minute of quiet: the source is as late as its last event was.
	mu.Lock()
	now = now.Add(time.Minute)
	mu.Unlock()
	if lag := j.Status().Lag; lag < 9.5 || lag > 12 {
		t.Fatalf("lag %v s after a quiet minute, want about 10", lag)
	}
	js.DropAll()
	eventually(t, "waiting", func() bool { return j.Status().State == ingest.StateWaiting && !j.Status().Connected })
}

// TestStatusSaysWhyTheSourceWaits: a connection that fails leaves the
// source waiting with the failure's text, its time and when it dials
// again, so that "waiting" is never shown without a reason.
func TestStatusSaysWhyTheSourceWaits(t *testing.T) {
	t.Parallel()
	js := jetstreamtest.New(t)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	j := &ingest.Jetstream{URL: strings.TrimSuffix(js.URL, "/subscribe") + "/nowhere", MinBackoff: time.Hour,
		Now: func() time.Time { return now }}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = j.Run(ctx, func() []string { return []string{"app.test.note"} }, nil, &resumeSink{}) }()
	eventually(t, "a failure in the status", func() bool { return j.Status().LastError != "" })
	st := j.Status()
	if st.State != ingest.StateWaiting || !strings.Contains(st.LastError, "dial") {
		t.Fatalf("status %q with error %q, want waiting with the dial error", st.State, st.LastError)
	}
	if !st.LastErrorAt.Equal(now) || !st.RetryAt.After(now) {
		t.Fatalf("failed at %v, retrying at %v; want %v and later", st.LastErrorAt, st.RetryAt, now)
	}
}
