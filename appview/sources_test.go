package appview_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/ingest"
	"github.com/lexview/lexview/appview/internal/testing/metricstest"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// fakeSource is an event source of the test's own: it reports where its
// sink resumes from, hands over what the test sends, and on the way out
// (ctx ended) hands over its last batch, if any, and reports the
// disconnection.
type fakeSource struct {
	name    string
	resumed chan resumePoint // Resume's answer, once per Run
	deliver chan delivery
	last    *delivery // handed over after ctx ends, before Run returns

	mu     sync.Mutex
	status ingest.Status
	runs   int
}

type resumePoint struct {
	cursor int64
	ok     bool
}

type delivery struct {
	changes []storage.Change
	cursor  int64
	done    chan error
}

func newFakeSource(name string) *fakeSource {
	return &fakeSource{name: name, resumed: make(chan resumePoint, 4), deliver: make(chan delivery)}
}

func (f *fakeSource) Name() string { return f.name }

func (f *fakeSource) Status() ingest.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status
}

func (f *fakeSource) Run(ctx context.Context, wanted func() []string, changed <-chan struct{}, sink ingest.Sink) error {
	f.mu.Lock()
	f.runs++
	f.mu.Unlock()
	c, ok, err := sink.Resume(ctx)
	if err != nil {
		return err
	}
	f.resumed <- resumePoint{c, ok}
	f.mu.Lock()
	f.status = ingest.Status{Connected: true, State: ingest.StateConnected, Host: "stream.test:443", Collections: wanted(),
		Cursor: c, Connections: 1, Lag: 1.5}
	f.mu.Unlock()
	sink.StateChanged(ctx, true, map[string]any{"cursor": c})
	for {
		select {
		case d := <-f.deliver:
			err := sink.Records(ctx, d.changes, d.cursor)
			if err == nil {
				f.mu.Lock()
				f.status.Cursor = d.cursor
				f.status.Events++
				f.mu.Unlock()
			}
			d.done <- err
		case <-changed:
			f.mu.Lock()
			f.status.Collections = wanted()
			f.mu.Unlock()
		case <-ctx.Done():
			after := context.WithoutCancel(ctx)
			if f.last != nil {
				f.last.done <- sink.Records(after, f.last.changes, f.last.cursor)
			}
			f.mu.Lock()
			f.status.Connected = false
			f.mu.Unlock()
			sink.StateChanged(after, false, map[string]any{"reason": "stopped"})
			return nil
		}
	}
}

func (f *fakeSource) ran() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.runs
}

// send hands changes and a position to the sink and waits for Records.
func (f *fakeSource) send(t *testing.T, cursor int64, changes ...storage.Change) {
	t.Helper()
	d := delivery{changes: changes, cursor: cursor, done: make(chan error, 1)}
	select {
	case f.deliver <- d:
	case <-time.After(10 * time.Second):
		t.Fatal("the source is not running")
	}
	if err := <-d.done; err != nil {
		t.Fatalf("Records: %v", err)
	}
}

func (f *fakeSource) waitResume(t *testing.T) resumePoint {
	t.Helper()
	select {
	case r := <-f.resumed:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("the source never resumed")
		return resumePoint{}
	}
}

func putNoteLexicon(t *testing.T, app *appview.App) {
	t.Helper()
	if _, err := app.Lexicons().Put(context.Background(), lexicon.Upload{Document: json.RawMessage(noteLexicon)}); err != nil {
		t.Fatal(err)
	}
}

// TestCustomSourceHasItsOwnCursor: a source given through
// Config.Ingest.EventSource resumes only from positions it stored itself (never
// from Jetstream's, under either name Jetstream's cursor had), stores its
// position under its own key, and has its own metrics label, status and
// event-log entries; after a restart it resumes where it was.
func TestCustomSourceHasItsOwnCursor(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		store := open(t)
		ctx := context.Background()
		jetstreamAt := time.Now().UnixMicro()
		if err := store.ApplyBatch(ctx, storage.Batch{Cursors: []storage.StreamCursor{
			{Name: ingest.CursorKey("jetstream"), Value: jetstreamAt}, {Name: "jetstream", Value: jetstreamAt - 1},
		}}); err != nil {
			t.Fatal(err)
		}
		src := newFakeSource("labeler-test")
		reg := prometheus.NewRegistry()
		env := testenv.New(t, store, appview.Config{
			Ingest:  appview.IngestConfig{EventSource: src},
			Metrics: appview.MetricsConfig{Registerer: reg},
		})
		putNoteLexicon(t, env.App)

		if r := src.waitResume(t); r.ok || r.cursor != 0 {
			t.Fatalf("a new source resumed from %+v", r)
		}
		src.send(t, 5, noteChange("did:plc:src", "3kaaa", "from the source"))
		waitFor(t, "the source's record", func() bool {
			_, err := store.GetRecord(ctx, "at://did:plc:src/app.test.note/3kaaa")
			return err == nil
		})
		waitFor(t, "the source's cursor", func() bool {
			c, err := store.GetStreamCursor(ctx, "source:labeler-test")
			return err == nil && c == 5
		})
		for name, want := range map[string]int64{ingest.CursorKey("jetstream"): jetstreamAt, "jetstream": jetstreamAt - 1} {
			if c, err := store.GetStreamCursor(ctx, name); err != nil || c != want {
				t.Fatalf("%s = %d, %v; want it untouched", name, c, err)
			}
		}

		// Status per source in GET /admin/stats; "ingest" is the record
		// stream's, as before.
		adm := env.Bootstrap(t)
		var stats struct {
			Sources map[string]ingest.Status `json:"sources"`
			Ingest  ingest.Status            `json:"ingest"`
		}
		r := adm.Do(t, "GET", "/admin/stats", nil)
		if r.Status != 200 {
			t.Fatalf("stats: %d %s", r.Status, r.Raw)
		}
		r.JSON(t, &stats)
		if st := stats.Sources["labeler-test"]; len(stats.Sources) != 1 || !st.Connected || st.Cursor != 5 || st.Events != 1 {
			t.Fatalf("stats sources: %s", r.Raw)
		}
		if !stats.Ingest.Connected || stats.Ingest.Cursor != 5 {
			t.Fatalf("stats ingest: %s", r.Raw)
		}

		// Metrics carry the source's name.
		if v, ok := metricstest.Value(t, reg, "lexview_source_connected", map[string]string{"source": "labeler-test"}); !ok || v != 1 {
			t.Fatalf("lexview_source_connected = %v, %v", v, ok)
		}
		for state, want := range map[string]float64{"connected": 1, "waiting": 0, "connecting": 0, "idle": 0} {
			labels := map[string]string{"source": "labeler-test", "host": "stream.test:443", "state": state}
			if v, ok := metricstest.Value(t, reg, "lexview_source_host_state", labels); !ok || v != want {
				t.Fatalf("lexview_source_host_state %v = %v, %v; want %v", labels, v, ok, want)
			}
		}
		if v, ok := metricstest.Value(t, reg, "lexview_source_lag_seconds", map[string]string{"source": "labeler-test"}); !ok || v != 1.5 {
			t.Fatalf("lexview_source_lag_seconds = %v, %v", v, ok)
		}
		if v, ok := metricstest.Value(t, reg, "lexview_records_indexed_total", map[string]string{"source": "labeler-test", "collection": "app.test.note"}); !ok || v != 1 {
			t.Fatalf("lexview_records_indexed_total = %v, %v", v, ok)
		}

		// In the validation mode reject, a record its lexicon refuses is
		// listed with its source and reason.
		if r := adm.Do(t, "PUT", "/admin/settings/validation.mode", map[string]any{"value": "reject"}); r.Status != 200 {
			t.Fatalf("validation mode: %d %s", r.Status, r.Raw)
		}
		bad := noteChange("did:plc:src", "3kbbb", "")
		bad.Record = json.RawMessage(`{"$type":"app.test.note"}`)
		src.send(t, 6, bad)
		var refused struct {
			Refusals []struct{ URI, Source, Collection, Reason string } `json:"refusals"`
		}
		r = adm.Do(t, "GET", "/admin/stats", nil)
		r.JSON(t, &refused)
		if f := refused.Refusals; len(f) != 1 || f[0].URI != "at://did:plc:src/app.test.note/3kbbb" ||
			f[0].Source != "labeler-test" || f[0].Collection != "app.test.note" || f[0].Reason == "" {
			t.Fatalf("stats refusals: %s", r.Raw)
		}

		if err := env.App.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		events, _, err := store.ListEvents(ctx, storage.EventFilter{Category: "source", Subject: "labeler-test", Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		types := map[string]int{}
		for _, e := range events {
			var d struct{ Source string }
			if json.Unmarshal(e.Detail, &d); d.Source != "labeler-test" {
				t.Fatalf("%s detail %s", e.Type, e.Detail)
			}
			types[e.Type]++
		}
		if len(events) != 2 || types["source.connected"] != 1 || types["source.disconnected"] != 1 {
			t.Fatalf("event log: %v", types)
		}
		if _, ok := metricstest.Value(t, reg, "lexview_source_connected", nil); ok {
			t.Fatal("metrics still registered after Shutdown")
		}

		// A restart resumes from the source's own position.
		again := newFakeSource("labeler-test")
		testenv.New(t, store, appview.Config{Ingest: appview.IngestConfig{EventSource: again}})
		if r := again.waitResume(t); !r.ok || r.cursor != 6 {
			t.Fatalf("resumed from %+v, want 6 (past the refused record)", r)
		}
	})
}

// TestSourceNames: New refuses a source whose name cannot key a cursor.
func TestSourceNames(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"", "Labeler", "source:x", "two words"} {
		_, err := appview.New(appview.Config{
			Store:    storagetest.SQLite(t),
			Logger:   quiet,
			Security: appview.SecurityConfig{TokenEncryptionKey: testenv.TokenKey},
			Ingest:   appview.IngestConfig{EventSource: newFakeSource(name)},
		})
		if err == nil || !strings.Contains(err.Error(), "invalid source name") {
			t.Errorf("%q: %v", name, err)
		}
	}
}

// TestEventStream: EVENT_SOURCE (Config.Ingest.EventStream) takes jetstream or
// firehose; New refuses anything else.
func TestEventStream(t *testing.T) {
	t.Parallel()
	for stream, wantErr := range map[string]bool{"": false, "jetstream": false, "firehose": false, "relay": true, "Firehose": true} {
		_, err := appview.New(appview.Config{
			Store:    storagetest.SQLite(t),
			Logger:   quiet,
			Security: appview.SecurityConfig{TokenEncryptionKey: testenv.TokenKey},
			Ingest:   appview.IngestConfig{EventStream: stream},
		})
		if wantErr != (err != nil) || (err != nil && !strings.Contains(err.Error(), "unknown event source")) {
			t.Errorf("%q: %v", stream, err)
		}
	}
}

// TestShutdownOrder: Shutdown stops the event sources before the writer,
// so what a source hands over while it stops is still committed (with its
// cursor); the writer refuses work only after that.
func TestShutdownOrder(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		store := open(t)
		ctx := context.Background()
		src := newFakeSource("ordered")
		src.last = &delivery{changes: []storage.Change{noteChange("did:plc:last", "3klast", "last words")}, cursor: 99, done: make(chan error, 1)}
		env := testenv.New(t, store, appview.Config{Ingest: appview.IngestConfig{EventSource: src}})
		putNoteLexicon(t, env.App)
		src.waitResume(t)
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := env.App.Shutdown(sctx); err != nil {
			t.Fatal(err)
		}
		if err := <-src.last.done; err != nil {
			t.Fatalf("the source's last batch was refused: %v", err)
		}
		if _, err := store.GetRecord(ctx, "at://did:plc:last/app.test.note/3klast"); err != nil {
			t.Fatalf("the last batch was not committed: %v %+v", err, env.App.Writer().Stats())
		}
		if c, err := store.GetStreamCursor(ctx, "source:ordered"); err != nil || c != 99 {
			t.Fatalf("cursor %d, %v", c, err)
		}
		if _, err := env.App.Writer().Write(ctx, "test", []storage.Change{noteChange("did:plc:x", "3kafter", "x")}); !errors.Is(err, appview.ErrStopped) {
			t.Fatalf("Write after Shutdown = %v, want ErrStopped", err)
		}
	})
}

// TestStartWriting starts the writer alone: records can be written, the
// event source does not run until Start.
func TestStartWriting(t *testing.T) {
	t.Parallel()
	store := storagetest.SQLite(t)
	src := newFakeSource("later")
	env := testenv.NewUnstarted(t, store, appview.Config{Ingest: appview.IngestConfig{EventSource: src}})
	putNoteLexicon(t, env.App)
	ctx := context.Background()
	if _, err := env.App.Writer().Write(ctx, "test", []storage.Change{noteChange("did:plc:w", "3kbefore", "x")}); !errors.Is(err, appview.ErrNotStarted) {
		t.Fatalf("Write before any start = %v, want ErrNotStarted", err)
	}
	if err := env.App.StartWriting(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := env.App.Writer().Write(ctx, "test", []storage.Change{noteChange("did:plc:w", "3kwritten", "x")})
	if err != nil || res.Accepted != 1 {
		t.Fatalf("Write after StartWriting: %+v %v", res, err)
	}
	time.Sleep(50 * time.Millisecond)
	if n := src.ran(); n != 0 {
		t.Fatalf("the source ran %d times before Start", n)
	}
	if err := env.App.Start(ctx); err != nil {
		t.Fatal(err)
	}
	src.waitResume(t)
	if err := env.App.Start(ctx); err == nil {
		t.Fatal("a second Start succeeded")
	}
	if err := env.App.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if n := src.ran(); n != 1 {
		t.Fatalf("the source ran %d times", n)
	}
}

// TestFailedStartStopsWhatStarted: when a component cannot start (here the
// metrics listener, its address taken), Start returns the error, the
// components started before it are stopped again, and those after it
// never start.
func TestFailedStartStopsWhatStarted(t *testing.T) {
	t.Parallel()
	taken := httptestListener(t)
	src := newFakeSource("never")
	env := testenv.NewUnstarted(t, storagetest.SQLite(t), appview.Config{
		Ingest:  appview.IngestConfig{EventSource: src},
		Metrics: appview.MetricsConfig{Addr: taken},
	})
	ctx := context.Background()
	err := env.App.Start(ctx)
	if err == nil || !strings.Contains(err.Error(), "start metrics listener") {
		t.Fatalf("Start = %v, want the metrics listener's error", err)
	}
	if _, err := env.App.Writer().Write(ctx, "test", []storage.Change{noteChange("did:plc:w", "3k", "x")}); !errors.Is(err, appview.ErrStopped) {
		t.Fatalf("Write after a failed Start = %v, want ErrStopped (the writer was stopped again)", err)
	}
	if n := src.ran(); n != 0 {
		t.Fatalf("the source after the failed component ran %d times", n)
	}
	if err := env.App.Start(ctx); err == nil {
		t.Fatal("Start after a failed Start succeeded")
	}
	if err := env.App.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown after a failed Start: %v", err)
	}
}

// httptestListener holds a loopback address for the test's duration and
// returns it.
func httptestListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String()
}
