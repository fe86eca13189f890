package ingest_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lexview/lexview/appview/ingest"
	"github.com/lexview/lexview/appview/internal/testenv"
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
