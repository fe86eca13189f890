package labelsub_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/bluesky-social/indigo/atproto/identity"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/labelsub"
	"github.com/lexview/lexview/appview/internal/core/metrics"
	"github.com/lexview/lexview/appview/internal/testing/labelertest"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/storage"
)

// harness runs a Manager against a store, a stand-in PLC and stand-in
// labelers.
type harness struct {
	t       testing.TB
	store   *recordingStore
	plc     *testenv.PLC
	metrics *metrics.Metrics
	events  *eventRecorder
	cfg     labelsub.Options
	m       *labelsub.Manager
	stopRun func()
}

// newHarness builds a harness on store; the Manager is not running.
func newHarness(t testing.TB, store storage.LabelStore) *harness {
	h := &harness{t: t, store: &recordingStore{LabelStore: store, applied: map[string][]int64{}},
		plc: testenv.NewPLC(t), metrics: metrics.New(), events: &eventRecorder{}}
	base := &identity.BaseDirectory{PLCURL: h.plc.URL, HTTPClient: *http.DefaultClient, SkipHandleVerification: true}
	h.cfg = labelsub.Options{
		Store: h.store, Directory: identity.NewCacheDirectory(base, 1000, time.Hour, time.Minute, time.Minute),
		// The stand-ins listen on 127.0.0.1, which the default client refuses.
		HTTPClient: http.DefaultClient, AllowHTTP: true, Events: h.events, Metrics: h.metrics,
		Logger:     slog.New(slog.NewTextHandler(logOut(), nil)),
		MinBackoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, Reconcile: time.Hour,
	}
	t.Cleanup(func() { h.stop() })
	return h
}

// start runs a new Manager until stop or the end of the test.
func (h *harness) start() {
	h.t.Helper()
	h.m = labelsub.New(h.cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.m.Run(ctx)
	}()
	h.stopRun = func() {
		cancel()
		<-done
	}
}

// stop ends the running Manager and waits for it.
func (h *harness) stop() {
	if h.stopRun != nil {
		h.stopRun()
		h.stopRun = nil
	}
}

// labeler starts a stand-in labeler registered in the PLC and adds it.
func (h *harness) labeler(opts labelertest.Options) *labelertest.Server {
	h.t.Helper()
	l := labelertest.New(h.t, h.plc, opts)
	h.add(l.DID)
	return l
}

// add adds (or re-activates) a labeler and tells the Manager.
func (h *harness) add(did string) {
	h.t.Helper()
	if _, err := h.store.PutLabeler(context.Background(), did, time.Now()); err != nil {
		h.t.Fatal(err)
	}
	if h.m != nil {
		h.m.Changed(did)
	}
}

// setStatus changes a labeler's status and tells the Manager.
func (h *harness) setStatus(did, status string) {
	h.t.Helper()
	if err := h.store.SetLabelerStatus(context.Background(), did, status, time.Now()); err != nil {
		h.t.Fatal(err)
	}
	h.m.Changed(did)
}

// labels returns the labels that apply now to uri.
func (h *harness) labels(uri string) []storage.Label {
	h.t.Helper()
	return h.labelsAt(uri, time.Now())
}

// requireOneLabelEach fails the test unless posts 0 to n-1 each have one
// label that applies.
func (h *harness) requireOneLabelEach(n int) {
	h.t.Helper()
	for i := range n {
		if got := len(h.labels(post(i))); got != 1 {
			h.t.Fatalf("post %d has %d labels, want 1", i, got)
		}
	}
}

func (h *harness) labelsAt(uri string, at time.Time) []storage.Label {
	h.t.Helper()
	got, err := h.store.LabelsFor(context.Background(), []string{uri}, at)
	if err != nil {
		h.t.Fatal(err)
	}
	return got[uri]
}

// cursor returns a labeler's stored cursor, -1 for none.
func (h *harness) cursor(did string) int64 {
	h.t.Helper()
	l, err := h.store.GetLabeler(context.Background(), did)
	if err != nil {
		h.t.Fatal(err)
	}
	if l.Cursor == nil {
		return -1
	}
	return *l.Cursor
}

// waitCursor waits until a labeler's stored cursor is seq.
func (h *harness) waitCursor(did string, seq int64) {
	h.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for h.cursor(did) != seq {
		if time.Now().After(deadline) {
			for _, e := range h.events.all(did) {
				h.t.Logf("event log: %s %v", e.Type, e.Detail)
			}
			h.t.Fatalf("timed out waiting for cursor %d of %s (at %d)", seq, did, h.cursor(did))
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// refused is the refused-labels count of a labeler for reason.
func (h *harness) refused(did, reason string) int {
	return int(testutil.ToFloat64(h.metrics.LabelsRefused.WithLabelValues(did, reason)))
}

// waitFor polls cond until it holds, failing the test after 60 s.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			if os.Getenv("LABELSUB_TEST_LOG") == "1" {
				buf := make([]byte, 1<<20)
				os.Stderr.Write(buf[:runtime.Stack(buf, true)])
			}
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// recordingStore records the cursors and labels stored per labeler.
type recordingStore struct {
	storage.LabelStore
	mu      sync.Mutex
	applied map[string][]int64
	stored  map[string][]storage.Label
	fail    map[string]error // ApplyLabels fails for these labelers
	delay   time.Duration    // ApplyLabels takes at least this long
}

func (s *recordingStore) ApplyLabels(ctx context.Context, b storage.LabelBatch) error {
	s.mu.Lock()
	err, delay := s.fail[b.Src], s.delay
	s.mu.Unlock()
	if err != nil {
		return err
	}
	time.Sleep(delay)
	if err := s.LabelStore.ApplyLabels(ctx, b); err != nil {
		return err
	}
	s.mu.Lock()
	s.applied[b.Src] = append(s.applied[b.Src], b.Cursor)
	if s.stored == nil {
		s.stored = map[string][]storage.Label{}
	}
	s.stored[b.Src] = append(s.stored[b.Src], b.Labels...)
	s.mu.Unlock()
	return nil
}

// transactions is the number of ApplyLabels calls that stored.
func (s *recordingStore) transactions(did string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.applied[did])
}

// storedOnce checks that a labeler's cursors were stored in increasing
// order up to last, and that n labels were stored, none twice (the
// labels of a test are told apart by subject, value and cts).
func (s *recordingStore) storedOnce(t testing.TB, did string, last int64, n int) {
	t.Helper()
	// The store commits before the recording notes the batch: wait for
	// the note of the last cursor (the caller saw it committed).
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		s.mu.Lock()
		c := s.applied[did]
		done := len(c) > 0 && c[len(c)-1] == last
		s.mu.Unlock()
		if done {
			break
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cursors := s.applied[did]
	for i := 1; i < len(cursors); i++ {
		if cursors[i] <= cursors[i-1] {
			t.Fatalf("cursors stored out of order: %v", cursors)
		}
	}
	if len(cursors) == 0 || cursors[len(cursors)-1] != last {
		t.Fatalf("cursors stored = %v, want the last %d", cursors, last)
	}
	seen := map[string]bool{}
	for _, l := range s.stored[did] {
		k := l.URI + " " + l.Val + " " + l.Cts.String()
		if seen[k] {
			t.Fatalf("label %s stored twice", k)
		}
		seen[k] = true
	}
	if len(seen) != n {
		t.Fatalf("%d labels stored, want %d", len(seen), n)
	}
}

// eventRecorder keeps event-log entries.
type eventRecorder struct {
	mu      sync.Mutex
	entries []eventlog.Entry
}

func (r *eventRecorder) Record(_ context.Context, e eventlog.Entry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entries = append(r.entries, e)
}

// all lists the entries about subject.
func (r *eventRecorder) all(subject string) []eventlog.Entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []eventlog.Entry
	for _, e := range r.entries {
		if e.Subject == subject {
			out = append(out, e)
		}
	}
	return out
}

// of lists the entries of type typ about subject.
func (r *eventRecorder) of(typ, subject string) []eventlog.Entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []eventlog.Entry
	for _, e := range r.entries {
		if e.Type == typ && e.Subject == subject {
			out = append(out, e)
		}
	}
	return out
}

// logOut is where the Manager logs: stderr under LABELSUB_TEST_LOG=1.
func logOut() io.Writer {
	if os.Getenv("LABELSUB_TEST_LOG") == "1" {
		return os.Stderr
	}
	return io.Discard
}
