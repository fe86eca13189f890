package eventlog_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

var (
	base  = time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	quiet = slog.New(slog.NewTextHandler(io.Discard, nil))
	day   = 24 * time.Hour
)

// clock is a settable fixed clock, safe for the purge goroutine.
type clock struct{ t atomic.Int64 }

func newClock(t time.Time) *clock { c := &clock{}; c.set(t); return c }
func (c *clock) set(t time.Time)  { c.t.Store(t.UnixMicro()) }
func (c *clock) now() time.Time   { return time.UnixMicro(c.t.Load()).UTC() }

func types(t *testing.T, s storage.Store) []string {
	t.Helper()
	events, _, err := s.ListEvents(context.Background(), storage.EventFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.Type
	}
	return out
}

// waitFor polls until the stored event types equal want.
func waitFor(t *testing.T, s storage.Store, want []string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := types(t, s)
		if slices.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("events %v, want %v", got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestRecord(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		s := open(t)
		l := eventlog.New(eventlog.Options{Store: s, Now: func() time.Time { return base }, Logger: quiet})
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // an entry outlives its request
		l.Record(ctx, eventlog.Entry{Type: "test.plain"})
		l.Record(context.Background(), eventlog.Entry{Type: "test.full", Severity: eventlog.Error, ActorDID: "did:plc:a",
			Subject: "x", Detail: map[string]any{"k": "v"}})
		l.Record(context.Background(), eventlog.Entry{Type: "test.bad", Detail: func() {}}) // does not encode
		events, _, err := s.ListEvents(context.Background(), storage.EventFilter{Limit: 10})
		if err != nil || len(events) != 3 {
			t.Fatalf("events: %v, %v", events, err)
		}
		bad, full, plain := events[0], events[1], events[2]
		if plain.Type != "test.plain" || plain.Severity != eventlog.Info || string(plain.Detail) != "{}" || !plain.CreatedAt.Equal(base) {
			t.Fatalf("plain: %+v", plain)
		}
		if full.Severity != "error" || full.ActorDID != "did:plc:a" || full.Subject != "x" || len(full.Detail) < 9 {
			t.Fatalf("full: %+v %s", full, full.Detail)
		}
		if string(bad.Detail) != "{}" {
			t.Fatalf("unencodable detail stored as %s", bad.Detail)
		}
	})
}

func TestRunPurge(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		s := open(t)
		c := newClock(base)
		l := eventlog.New(eventlog.Options{Store: s, Now: c.now, Logger: quiet})
		if err := s.AppendEvents(context.Background(), []storage.Event{
			{Type: "test.ancient", Severity: "info", CreatedAt: base.Add(-90 * day)},
			{Type: "test.old", Severity: "info", CreatedAt: base.Add(-30*day - time.Second)},
			{Type: "test.recent", Severity: "info", CreatedAt: base.Add(-30*day + time.Minute)},
			{Type: "test.now", Severity: "info", CreatedAt: base},
		}); err != nil {
			t.Fatal(err)
		}

		// A retention of zero or less keeps everything.
		for _, retention := range []time.Duration{0, -day} {
			if n, err := l.Purge(context.Background(), retention); n != 0 || err != nil {
				t.Fatalf("Purge(%v): %d, %v", retention, n, err)
			}
		}
		if got := types(t, s); len(got) != 4 {
			t.Fatalf("a non-positive retention purged: %v", got)
		}

		// The retention is read at every round: a change applies from the
		// next one.
		var retention atomic.Int64
		retention.Store(int64(30 * day))
		wake := make(chan struct{})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			l.RunPurge(ctx, func() time.Duration { return time.Duration(retention.Load()) }, time.Hour, wake)
			close(done)
		}()
		// The first purge runs at once: older than 30 days goes, newer stays.
		waitFor(t, s, []string{"test.now", "test.recent"})
		// Time passes: the next round purges what has aged meanwhile.
		c.set(base.Add(2 * time.Minute))
		wake <- struct{}{}
		waitFor(t, s, []string{"test.now"})
		// A shorter retention purges what it no longer keeps.
		retention.Store(int64(time.Minute))
		wake <- struct{}{}
		waitFor(t, s, []string{})
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("RunPurge did not stop when its context ended")
		}
	})
}

// TestRecordVerbose: verbose entries are recorded only while the verbose
// setting is true.
func TestRecordVerbose(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		s := open(t)
		ctx := context.Background()
		l := eventlog.New(eventlog.Options{Store: s, Now: func() time.Time { return base }, Logger: quiet})
		l.RecordVerbose(ctx, eventlog.Entry{Type: "test.unset"})
		for _, v := range []string{"true", "false"} {
			if err := s.PutSetting(ctx, eventlog.VerboseSetting, v); err != nil {
				t.Fatal(err)
			}
			l.RecordVerbose(ctx, eventlog.Entry{Type: "test." + v})
		}
		if got := types(t, s); !slices.Equal(got, []string{"test.true"}) {
			t.Fatalf("recorded %v, want only the entry made while verbose", got)
		}
	})
}

// TestProblems: the warn and error entries recorded are counted by type,
// info ones are not; past maxProblemTypes types, under "other".
func TestProblems(t *testing.T) {
	l := eventlog.New(eventlog.Options{Store: storagetest.SQLite(t), Logger: quiet})
	ctx := context.Background()
	l.Record(ctx, eventlog.Entry{Type: "test.info"})
	l.Record(ctx, eventlog.Entry{Type: "script.error", Severity: eventlog.Error})
	l.Record(ctx, eventlog.Entry{Type: "script.error", Severity: eventlog.Error})
	l.Record(ctx, eventlog.Entry{Type: "source.disconnected", Severity: eventlog.Warn})
	got := l.Problems()
	if len(got) != 2 || got["script.error"] != 2 || got["source.disconnected"] != 1 {
		t.Fatalf("problems: %v", got)
	}
	got["script.error"] = 99 // a copy
	for i := range 200 {
		l.Record(ctx, eventlog.Entry{Type: fmt.Sprintf("test.t%d", i), Severity: eventlog.Warn})
	}
	got = l.Problems()
	if len(got) != 201 || got["script.error"] != 2 || got[eventlog.OtherProblems] != 2 {
		t.Errorf("%d types, script.error %d, other %d", len(got), got["script.error"], got[eventlog.OtherProblems])
	}
}
