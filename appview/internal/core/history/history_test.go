package history

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 5, 6, 7, 0, 0, 0, time.UTC)

// fake is an instance whose reading and clock the test sets.
type fake struct {
	now time.Time
	r   Reading
}

// newFake returns a History over a fake instance leading one connected
// source, sampling every 10 s.
func newFake() (*History, *fake) {
	f := &fake{now: t0, r: Reading{Leading: true, Sources: []Source{{Name: "jetstream", State: Connected}}}}
	h := New(Options{Read: func(context.Context) Reading { return clone(f.r) }, Now: func() time.Time { return f.now }})
	return h, f
}

// clone copies r's maps, so that the history holds readings the test no
// longer changes.
func clone(r Reading) Reading {
	r.Sources = append([]Source(nil), r.Sources...)
	calls := map[string]CallCounts{}
	for k, v := range r.Calls {
		calls[k] = v
	}
	r.Calls = calls
	problems := map[string]int64{}
	for k, v := range r.Problems {
		problems[k] = v
	}
	r.Problems = problems
	if r.Backfill.Current != nil {
		j := *r.Backfill.Current
		r.Backfill.Current = &j
	}
	return r
}

// sample advances the clock by d and samples.
func (f *fake) sample(h *History, d time.Duration) {
	f.now = f.now.Add(d)
	h.Sample(context.Background())
}

// values returns a window's series as plain floats (NaN for null).
func values(t *testing.T, h *History, window, metric, label string) []float64 {
	t.Helper()
	w, ok := h.Window(window)
	if !ok {
		t.Fatalf("no window %q", window)
	}
	vs, ok := w.Series[metric][label]
	if !ok {
		return nil
	}
	out := make([]float64, len(vs))
	for i, v := range vs {
		out[i] = float64(v)
	}
	return out
}

// same reports whether two series are equal, NaN equal to NaN, to 1e-9.
func same(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.IsNaN(a[i]) != math.IsNaN(b[i]) || !math.IsNaN(a[i]) && math.Abs(a[i]-b[i]) > 1e-9 {
			return false
		}
	}
	return true
}

var nan = math.NaN()

// TestRatesFromCounters: counters become rates over each point's
// interval; the first point has gauges but no rates; a counter that went
// down (a restarted source) counts from zero, never negative.
func TestRatesFromCounters(t *testing.T) {
	h, f := newFake()
	f.r.Sources[0].Lag = 1.5
	f.r.Writer = Writer{Committed: 10, Refused: 1, Queued: 4}
	f.r.Problems = map[string]int64{"script.error": 2}
	f.sample(h, 0)
	f.r.Sources[0].Events, f.r.Writer.Committed, f.r.Writer.Refused = 100, 60, 3
	f.r.Problems["script.error"] = 7
	f.sample(h, 10*time.Second)
	f.r.Sources[0].Events = 30 // restarted: 30 since
	f.sample(h, 10*time.Second)
	f.r.Sources[0].Events = 30 // none since
	f.sample(h, 5*time.Second)

	for _, tc := range []struct {
		metric, label string
		want          []float64
	}{
		{EventsPerSecond, "jetstream", []float64{nan, 10, 3, 0}},
		{LagSeconds, "jetstream", []float64{1.5, 1.5, 1.5, 1.5}},
		{WriterPerSecond, "committed", []float64{nan, 5, 0, 0}},
		{WriterPerSecond, "refused", []float64{nan, .2, 0, 0}},
		{WriterQueue, "queued", []float64{4, 4, 4, 4}},
		{ProblemsPerMinute, "script.error", []float64{nan, 30, 0, 0}},
		{CallsPerSecond, AllMethods, []float64{nan, 0, 0, 0}},
		{BackfillPerSecond, "repos", []float64{nan, 0, 0, 0}},
	} {
		if got := values(t, h, Hour, tc.metric, tc.label); !same(got, tc.want) {
			t.Errorf("%s{%s} = %v, want %v", tc.metric, tc.label, got, tc.want)
		}
	}
	w, _ := h.Window(Hour)
	want := []int64{t0.UnixMilli(), t0.Add(10 * time.Second).UnixMilli(), t0.Add(20 * time.Second).UnixMilli(), t0.Add(25 * time.Second).UnixMilli()}
	if fmt.Sprint(w.Times) != fmt.Sprint(want) || w.IntervalSeconds != 10 {
		t.Errorf("times %v every %v s, want %v every 10 s", w.Times, w.IntervalSeconds, want)
	}
}

// TestRingWrap: the hour window keeps its last HourPoints points, oldest
// first, once the ring has gone round; the memory held does not grow.
func TestRingWrap(t *testing.T) {
	h, f := newFake()
	extra := 7
	for i := range HourPoints + extra {
		f.r.Sources[0].Lag = float64(i)
		f.sample(h, 10*time.Second)
	}
	w, _ := h.Window(Hour)
	if len(w.Times) != HourPoints {
		t.Fatalf("%d points, want %d", len(w.Times), HourPoints)
	}
	if first := time.UnixMilli(w.Times[0]).UTC(); !first.Equal(t0.Add(time.Duration(extra+1) * 10 * time.Second)) {
		t.Errorf("oldest point at %v", first)
	}
	lag := values(t, h, Hour, LagSeconds, "jetstream")
	for i, v := range lag {
		if v != float64(extra+i) {
			t.Fatalf("lag[%d] = %v, want %d (the ring out of order)", i, v, extra+i)
		}
	}
	if n := len(h.tiers[0].times); n != HourPoints {
		t.Errorf("the ring grew to %d", n)
	}
}

// TestDayWindow: the day window has a point every DayEvery samples: rates
// over its whole interval, gauges at their highest in it.
func TestDayWindow(t *testing.T) {
	h, f := newFake()
	for i := range 2*DayEvery + 1 {
		f.r.Sources[0].Events = int64(i * 30) // 3/s
		f.r.Sources[0].Lag = 0
		if i == 40 {
			f.r.Sources[0].Lag = 9
		}
		f.sample(h, 10*time.Second)
	}
	if got := values(t, h, Day, EventsPerSecond, "jetstream"); !same(got, []float64{nan, 3, 3}) {
		t.Errorf("events/s by day: %v", got)
	}
	if got := values(t, h, Day, LagSeconds, "jetstream"); !same(got, []float64{0, 0, 9}) {
		t.Errorf("lag by day: %v", got)
	}
	w, _ := h.Window(Day)
	if len(w.Times) != 3 || w.IntervalSeconds != 300 {
		t.Errorf("day: %d points every %v s", len(w.Times), w.IntervalSeconds)
	}
	if _, ok := h.Window("week"); ok {
		t.Error("a week window")
	}
}

// TestGoneSeriesDropped: a source no longer reported has no value at the
// new points, and its series goes once the window holds none of its
// values.
func TestGoneSeriesDropped(t *testing.T) {
	h, f := newFake()
	f.sample(h, 0)
	f.r.Sources = []Source{{Name: "firehose", State: Connected}}
	f.sample(h, 10*time.Second)
	if got := values(t, h, Hour, LagSeconds, "jetstream"); !same(got, []float64{0, nan}) {
		t.Fatalf("the gone source: %v", got)
	}
	for range HourPoints - 1 {
		f.sample(h, 10*time.Second)
	}
	if got := values(t, h, Hour, LagSeconds, "jetstream"); got != nil {
		t.Errorf("the gone source's series is kept: %d values", len(got))
	}
	if got := values(t, h, Hour, LagSeconds, "firehose"); len(got) != HourPoints {
		t.Errorf("the new source: %d values", len(got))
	}
}

// call counts n calls of one latency (and failures of them) in c.
func call(c CallCounts, n int, ms float64, failures int) CallCounts {
	cs := NewCalls()
	for i := range n {
		status := 200
		if i < failures {
			status = 502
		}
		cs.Observe("m", status, time.Duration(ms*float64(time.Millisecond)))
	}
	c.add(cs.Read()["m"])
	return c
}

// TestMethods: the first methods called get series of their own (at most
// maxMethodSeries, the busiest first), the others count under "other",
// and "all" counts them all, each with calls and failures per second and
// p50 and p99 latency. A method idle for the whole hour window gives its
// place to one called.
func TestMethods(t *testing.T) {
	h, f := newFake()
	f.r.Calls = map[string]CallCounts{}
	f.sample(h, 0)
	for i := range maxMethodSeries + 2 {
		f.r.Calls[fmt.Sprintf("app.test.m%02d", i)] = call(CallCounts{}, 20-i, 4, 0)
	}
	f.r.Calls["app.test.m00"] = call(CallCounts{}, 90, 40, 10) // 90 at 40 ms, 10 failed
	f.r.Calls["app.test.m00"] = call(f.r.Calls["app.test.m00"], 10, 4000, 0)
	f.sample(h, 10*time.Second)

	w, _ := h.Window(Hour)
	calls := w.Series[CallsPerSecond]
	if len(calls) != maxMethodSeries+2 {
		t.Errorf("%d call series, want %d methods, other and all", len(calls), maxMethodSeries)
	}
	for _, m := range []string{"app.test.m10", "app.test.m11"} {
		if _, ok := calls[m]; ok {
			t.Errorf("%s, among the least called, has a series of its own", m)
		}
	}
	for _, tc := range []struct {
		metric, label string
		want          float64
	}{
		{CallsPerSecond, "app.test.m00", 10},
		{FailuresPerSecond, "app.test.m00", 1},
		// 90 calls in (30, 50] ms and 10 in (3000, 5000] ms, interpolated.
		{P50Millis, "app.test.m00", 30 + 20*50.0/90},
		{P99Millis, "app.test.m00", 3000 + 2000*9.0/10},
		{CallsPerSecond, "app.test.m01", 1.9},
		{CallsPerSecond, OtherMethods, (10 + 9) / 10.0},
		{CallsPerSecond, AllMethods, (100 + 19 + 18 + 17 + 16 + 15 + 14 + 13 + 12 + 11 + 10 + 9) / 10.0},
		{FailuresPerSecond, AllMethods, 1},
		{P50Millis, OtherMethods, 4},
	} {
		got := values(t, h, Hour, tc.metric, tc.label)
		if len(got) != 2 || !math.IsNaN(got[0]) || math.Abs(got[1]-tc.want) > tc.want*0.001 {
			t.Errorf("%s{%s} = %v, want [NaN %v]", tc.metric, tc.label, got, tc.want)
		}
	}

	// An hour later, with no call meanwhile, a new method takes an idle
	// method's place.
	for range HourPoints {
		f.sample(h, 10*time.Second)
	}
	f.r.Calls["app.test.new"] = call(CallCounts{}, 5, 2, 0)
	f.sample(h, 10*time.Second)
	if got := values(t, h, Hour, CallsPerSecond, "app.test.new"); len(got) == 0 || got[len(got)-1] != .5 {
		t.Errorf("the new method: %v", got)
	}
	if len(h.slots) != maxMethodSeries {
		t.Errorf("%d methods with series, want %d", len(h.slots), maxMethodSeries)
	}
}

// TestCalls: calls are counted by method, 5xx answers as failures, by
// latency bucket; beyond maxMethods methods, under "other". A nil Calls
// counts nothing.
func TestCalls(t *testing.T) {
	c := NewCalls()
	c.Observe("a", 200, 3*time.Millisecond)
	c.Observe("a", 500, 20*time.Second)
	c.Observe("a", 404, 0)
	got := c.Read()["a"]
	if got.Calls != 3 || got.Failures != 1 || got.Latency[0] != 1 || got.Latency[2] != 1 || got.Latency[len(bounds)] != 1 {
		t.Errorf("a: %+v", got)
	}
	for i := range maxMethods + 5 {
		c.Observe(fmt.Sprintf("m%d", i), 200, time.Millisecond)
	}
	read := c.Read()
	if len(read) != maxMethods+1 || read[OtherMethods].Calls != 6 {
		t.Errorf("%d methods, %d other calls", len(read), read[OtherMethods].Calls)
	}
	var none *Calls
	none.Observe("a", 200, time.Millisecond)
	if none.Read() != nil {
		t.Error("a nil Calls read something")
	}
}

// TestQuantile: interpolated within the bucket the rank falls in; the
// slowest bucket answers its lower bound; nothing counted is NaN.
func TestQuantile(t *testing.T) {
	var b Buckets
	if !math.IsNaN(b.quantile(.5)) {
		t.Error("quantile of nothing")
	}
	b[5] = 100 // (7.5, 10] ms
	if got := b.quantile(.5); got != 8.75 {
		t.Errorf("p50 = %v, want 8.75", got)
	}
	b[len(bounds)] = 100
	if got := b.quantile(.99); got != bounds[len(bounds)-1] {
		t.Errorf("p99 = %v", got)
	}
}

// TestBackfillProgress: the running job's rates over the last minute
// (over its life when it is younger), its estimated time to completion,
// none while the total is unknown; a new job starts its measure afresh.
func TestBackfillProgress(t *testing.T) {
	h, f := newFake()
	job := &Job{ID: "j1", Status: "running", Stage: "discovering_repos", TotalRepos: -1, StartedAt: t0.Add(-5 * time.Second)}
	f.r.Backfill = Backfill{Current: job, Waiting: 2}
	f.sample(h, 0)
	p := mustProgress(t, h)
	if p.TotalRepos != nil || !math.IsNaN(float64(p.ETASeconds)) || p.ReposPerSecond != 0 || p.Waiting != 2 {
		t.Errorf("discovering: %+v", p)
	}

	job.Stage, job.TotalRepos, job.ProcessedRepos, job.Records = "resolving_and_fetching", 100, 15, 1500
	f.sample(h, 10*time.Second)
	p = mustProgress(t, h)
	if *p.TotalRepos != 100 || p.ReposPerSecond != 1 || p.RecordsPerSecond != 100 || p.ETASeconds != 85 {
		t.Errorf("young job (15 in 15 s): %+v", p)
	}
	for range 8 {
		job.ProcessedRepos += 20
		job.Records += 2000
		f.sample(h, 10*time.Second)
	}
	p = mustProgress(t, h) // 175 of 100: done
	if p.ReposPerSecond != 2 || p.RecordsPerSecond != 200 || p.ETASeconds != 0 {
		t.Errorf("over the last minute: %+v", p)
	}
	if len(h.trail) > 8 {
		t.Errorf("the trail holds %d points for a minute of 10 s samples", len(h.trail))
	}

	f.r.Backfill.Current = &Job{ID: "j2", Status: "running", Stage: "resolving_and_fetching", TotalRepos: 10, ProcessedRepos: 1,
		StartedAt: f.now.Add(-time.Hour)}
	f.sample(h, 10*time.Second)
	if p := mustProgress(t, h); p.ID != "j2" || !math.IsNaN(float64(p.ReposPerSecond)) {
		t.Errorf("a new job: %+v", p)
	}
	if got := values(t, h, Hour, BackfillPerSecond, "repos"); got[len(got)-1] != .1 {
		t.Errorf("a new job's first repos/s: %v (counted from zero)", got[len(got)-1])
	}
	f.r.Backfill.Current = nil
	f.sample(h, 10*time.Second)
	if w, _ := h.Window(Hour); w.Backfill != nil {
		t.Errorf("progress with no job: %+v", w.Backfill)
	}
}

func mustProgress(t *testing.T, h *History) *Progress {
	t.Helper()
	w, _ := h.Window(Hour)
	if w.Backfill == nil {
		t.Fatal("no backfill progress")
	}
	return w.Backfill
}

// TestHealth: the rules of Health, part by part, and the overall status
// as the worst part's.
func TestHealth(t *testing.T) {
	h, f := newFake()
	if got := h.Health(); got.Status != StatusUnknown {
		t.Errorf("before any sample: %+v", got)
	}
	check := func(what, status string, part int, partStatus, message string) {
		t.Helper()
		got := h.Health()
		if got.Status != status || got.Parts[part].Status != partStatus || !strings.Contains(got.Parts[part].Message, message) {
			t.Errorf("%s: %s, part %+v; want %s, %s containing %q", what, got.Status, got.Parts[part], status, partStatus, message)
		}
		if !got.CheckedAt.Equal(f.now) {
			t.Errorf("%s: checked at %v", what, got.CheckedAt)
		}
	}
	f.r.Ping = 3 * time.Millisecond
	f.sample(h, 0)
	check("all well", StatusOK, 0, StatusOK, "jetstream: connected, less than 1 ms behind.")
	check("all well", StatusOK, 1, StatusOK, "No job is running.")
	check("all well", StatusOK, 2, StatusOK, "answered in 3 ms")

	f.r.Sources[0].Lag = 61
	f.sample(h, 10*time.Second)
	check("lagging", StatusWarn, 0, StatusWarn, "jetstream: 1 min behind its stream.")
	f.r.Sources[0].Lag = 601
	f.sample(h, 10*time.Second)
	check("far behind", StatusBad, 0, StatusBad, "jetstream: 10 min behind")

	f.r.Sources[0].State = "waiting"
	f.sample(h, 10*time.Second)
	check("just disconnected", StatusWarn, 0, StatusWarn, "jetstream: not connected (waiting) for less than 1 ms")
	f.r.Sources[0].LastError = "dial: connection refused"
	f.sample(h, 50*time.Second)
	check("still disconnected", StatusWarn, 0, StatusWarn, "for 50 s, last error: dial: connection refused")
	f.sample(h, 10*time.Second)
	check("disconnected a minute", StatusBad, 0, StatusBad, "for 1 min")
	f.r.Leading = false
	f.sample(h, 10*time.Second)
	check("a follower", StatusOK, 0, StatusOK, "Another instance leads")
	f.r.Leading = true
	f.sample(h, 10*time.Second)
	check("leading again", StatusWarn, 0, StatusWarn, "for less than 1 ms")
	// No collection to follow (a fresh instance): idle, which is fine
	// however long it lasts; a connection failing afterwards counts from
	// then.
	f.r.Sources[0].State, f.r.Sources[0].LastError = "idle", ""
	f.sample(h, 10*time.Second)
	check("idle", StatusOK, 0, StatusOK, "jetstream: idle, no collection to follow yet.")
	f.sample(h, 10*time.Minute)
	check("idle for long", StatusOK, 0, StatusOK, "jetstream: idle")
	f.r.Sources[0].State = "waiting"
	f.sample(h, 10*time.Second)
	check("waiting after idle", StatusWarn, 0, StatusWarn, "jetstream: not connected (waiting) for less than 1 ms")
	f.r.Sources = nil
	f.sample(h, 10*time.Second)
	check("no source", StatusOK, 0, StatusOff, "Live ingestion is off")

	f.r.Backfill = Backfill{LastFinished: &Job{ID: "j1", Status: "failed", Error: "relay unreachable"}}
	f.sample(h, 10*time.Second)
	check("a failed job", StatusWarn, 1, StatusWarn, "The last job, j1, failed: relay unreachable.")
	f.r.Backfill = Backfill{Current: &Job{ID: "j2", Status: "running", Stage: "resolving_and_fetching"}, Waiting: 1,
		LastFinished: f.r.Backfill.LastFinished}
	f.sample(h, 10*time.Second)
	check("a job running after it", StatusOK, 1, StatusOK, "Job j2 is running (resolving and fetching). 1 waiting.")

	f.r.Ping = 1500 * time.Millisecond
	f.sample(h, 10*time.Second)
	check("a slow database", StatusWarn, 2, StatusWarn, "slowly, in 1 s")
	f.r.Database = errors.New("connection refused")
	f.sample(h, 10*time.Second)
	check("no database", StatusBad, 2, StatusBad, "The database did not answer: connection refused.")
	if got := values(t, h, Hour, DatabaseMillis, "ping"); !math.IsNaN(got[len(got)-1]) || got[len(got)-2] != 1500 {
		t.Errorf("database round trips: %v", got[len(got)-2:])
	}
}

// TestWindowJSON: the window as the admin API answers it: null where no
// value, numbers with at most three decimals.
func TestWindowJSON(t *testing.T) {
	h, f := newFake()
	f.r.Sources[0].Lag = 1.23456
	f.sample(h, 0)
	f.r.Sources[0].Events = 1
	f.sample(h, 3*time.Second)
	w, _ := h.Window(Hour)
	b, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"window":"hour"`, `"interval_seconds":10`, `"events_per_second":{"jetstream":[null,0.333]}`,
		`"lag_seconds":{"jetstream":[1.235,1.235]}`, `"backfill":null`, `"health":{"status":"ok"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("no %s in %s", want, b)
		}
	}
}

// TestRun: Run samples at once, and returns when its context ends.
func TestRun(t *testing.T) {
	n := 0
	h := New(Options{Read: func(context.Context) Reading { n++; return Reading{} }, Interval: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	h.Run(ctx)
	if w, _ := h.Window(Hour); n != 1 || len(w.Times) != 1 {
		t.Errorf("%d readings, %d points", n, len(w.Times))
	}
	if h.Interval() != time.Hour {
		t.Errorf("interval %v", h.Interval())
	}
}
