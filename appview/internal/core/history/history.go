// Package history keeps a bounded, in-memory history of the figures an
// operator watches, for the dashboard's charts: events per second and lag
// of each event source, the batch writer's commits and refusals, XRPC
// calls per second with their p50 and p99 latency (every method together
// and the busiest methods apart), warnings and errors per minute by event
// type, backfill progress and the database's round trip. It also judges,
// from the latest reading, whether ingestion, backfill and the database
// are healthy (Health).
//
// A History samples the instance (Options.Read) every Interval and keeps
// two windows in fixed-size rings: "hour", a point per sample (360 of
// them: an hour at the default 10 s), and "day", a point every 30 samples
// (288 of them: a day at 5 min). Counters become rates over each point's
// interval (a counter that went down was reset and counts from zero);
// gauges (lag, the writer's queue, the database's round trip) are the
// highest value seen during the interval. The day window can be stored
// at each of its points (Options.Save) and restored at start (Restore);
// the hour window starts empty at each start.
package history

import (
	"cmp"
	"context"
	"maps"
	"math"
	"slices"
	"sync"
	"time"
)

// The metrics of the history's series; each holds series by label.
const (
	EventsPerSecond   = "events_per_second"        // by source
	LagSeconds        = "lag_seconds"              // by source (gauge)
	WriterPerSecond   = "writer_per_second"        // committed, refused
	WriterQueue       = "writer_queue"             // queued (gauge)
	CallsPerSecond    = "xrpc_calls_per_second"    // by method, all, other
	FailuresPerSecond = "xrpc_failures_per_second" // by method, all, other: 5xx answers
	P50Millis         = "xrpc_p50_ms"              // by method, all, other
	P99Millis         = "xrpc_p99_ms"              // by method, all, other
	ProblemsPerMinute = "problems_per_minute"      // by event type
	BackfillPerSecond = "backfill_per_second"      // repos, records
	DatabaseMillis    = "database_ping_ms"         // ping (gauge)
)

// The windows.
const (
	Hour = "hour"
	Day  = "day"
)

// Sizes of the windows.
const (
	// HourPoints is the points of the hour window, one per sample.
	HourPoints = 360
	// DayEvery is the samples per point of the day window, and DayPoints
	// its points.
	DayEvery  = 30
	DayPoints = 288
)

// DefaultInterval is how often a History samples by default.
const DefaultInterval = 10 * time.Second

// maxMethodSeries bounds the methods with series of their own; the
// others' calls are counted under OtherMethods (and all under AllMethods).
const maxMethodSeries = 10

// rateWindow is how far back the running backfill job's rates look.
const rateWindow = time.Minute

// Options configure a History.
type Options struct {
	// Read reads the instance's figures; it should return within the
	// interval.
	Read func(ctx context.Context) Reading
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Interval is how often Run samples; default DefaultInterval. The
	// windows keep a fixed number of points, so they span HourPoints and
	// DayPoints×DayEvery intervals.
	Interval time.Duration
	// Limits are the health rules' thresholds; zero fields take their
	// defaults.
	Limits Limits
	// Save, when set, is given the day window's points at each of its
	// new points (every DayEvery samples), to store them for Restore
	// after a restart. It runs in the sampling goroutine.
	Save func(ctx context.Context, s Saved)
}

// History is the sampled history of one instance; safe for concurrent
// use.
type History struct {
	read     func(ctx context.Context) Reading
	now      func() time.Time
	interval time.Duration
	limits   Limits
	onSave   func(ctx context.Context, s Saved)

	mu     sync.Mutex
	tiers  []*tier // hour, day
	last   *Reading
	slots  map[string]bool      // the methods with series of their own
	down   map[string]time.Time // the sources not connected, since when
	trail  []jobPoint           // the current job's progress over rateWindow
	health Health
}

// jobPoint is the running job's counters at one sample.
type jobPoint struct {
	at               time.Time
	id               string
	repos, records   int64
	startedAt        time.Time
	totalRepos       int64
	status, stage    string
	waitingAlongside int
}

// New returns a History that samples through o.Read.
func New(o Options) *History {
	h := &History{read: o.Read, now: o.Now, interval: o.Interval, onSave: o.Save,
		slots: map[string]bool{}, down: map[string]time.Time{}, health: Health{Status: StatusUnknown}}
	if h.now == nil {
		h.now = time.Now
	}
	if h.interval <= 0 {
		h.interval = DefaultInterval
	}
	h.limits = o.Limits.withDefaults(h.interval)
	h.tiers = []*tier{newTier(Hour, 1, HourPoints), newTier(Day, DayEvery, DayPoints)}
	return h
}

// Interval is how often the history samples.
func (h *History) Interval() time.Duration { return h.interval }

// Run samples at once and then every interval until ctx ends.
func (h *History) Run(ctx context.Context) {
	tick := time.NewTicker(h.interval)
	defer tick.Stop()
	for {
		h.Sample(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Sample reads the instance once and adds the reading to the windows;
// when the day window got a point, it hands the window to Options.Save.
func (h *History) Sample(ctx context.Context) {
	r := h.read(ctx)
	now := h.now()
	h.mu.Lock()
	h.assign(&r)
	var day *Saved
	for _, t := range h.tiers {
		if h.step(t, &r, now) && t.name == Day && h.onSave != nil {
			s := h.saved(t)
			day = &s
		}
	}
	h.track(&r, now)
	h.health = h.judge(&r, now)
	h.last = &r
	h.mu.Unlock()
	if day != nil {
		h.onSave(ctx, *day)
	}
}

// step folds reading r, taken at now, into tier t, adding a point when
// its interval is complete (and at the first reading); it reports
// whether it added one.
func (h *History) step(t *tier, r *Reading, now time.Time) bool {
	for k, v := range gauges(r) {
		if p, ok := t.peaks[k]; !ok || v > p {
			t.peaks[k] = v
		}
	}
	t.count++
	if t.base != nil && t.count < t.every {
		return false
	}
	vals := map[key]float64{}
	if t.base != nil {
		vals = h.rates(t.base, r, now.Sub(t.baseAt).Seconds())
	}
	for k, v := range t.peaks {
		vals[k] = v
	}
	t.add(now, vals)
	t.base, t.baseAt, t.count = r, now, 0
	clear(t.peaks)
	return true
}

// gauges are r's instantaneous values.
func gauges(r *Reading) map[key]float64 {
	out := map[key]float64{{WriterQueue, "queued"}: float64(r.Writer.Queued)}
	for _, s := range r.Sources {
		out[key{LagSeconds, s.Name}] = s.Lag
	}
	if r.Database == nil {
		out[key{DatabaseMillis, "ping"}] = float64(r.Ping) / float64(time.Millisecond)
	}
	return out
}

// delta is how much a counter grew from prev to cur; a counter that went
// down was reset and counts from zero.
func delta(prev, cur int64) float64 {
	if cur < prev {
		return float64(cur)
	}
	return float64(cur - prev)
}

// rates are the counters' rates from base to cur, secs seconds apart.
func (h *History) rates(base, cur *Reading, secs float64) map[key]float64 {
	out := map[key]float64{}
	if secs <= 0 {
		return out
	}
	events := map[string]int64{}
	for _, s := range base.Sources {
		events[s.Name] = s.Events
	}
	for _, s := range cur.Sources {
		out[key{EventsPerSecond, s.Name}] = delta(events[s.Name], s.Events) / secs
	}
	out[key{WriterPerSecond, "committed"}] = delta(base.Writer.Committed, cur.Writer.Committed) / secs
	out[key{WriterPerSecond, "refused"}] = delta(base.Writer.Refused, cur.Writer.Refused) / secs

	byLabel := map[string]*CallCounts{AllMethods: {}}
	for m := range h.slots {
		byLabel[m] = &CallCounts{}
	}
	for m, c := range cur.Calls {
		d := c.sub(base.Calls[m])
		if d.Calls == 0 {
			continue
		}
		label := m
		if !h.slots[m] {
			label = OtherMethods
		}
		if byLabel[label] == nil {
			byLabel[label] = &CallCounts{}
		}
		byLabel[label].add(d)
		byLabel[AllMethods].add(d)
	}
	for label, d := range byLabel {
		out[key{CallsPerSecond, label}] = float64(d.Calls) / secs
		out[key{FailuresPerSecond, label}] = float64(d.Failures) / secs
		out[key{P50Millis, label}] = d.Latency.quantile(.5)
		out[key{P99Millis, label}] = d.Latency.quantile(.99)
	}

	for typ, n := range cur.Problems {
		out[key{ProblemsPerMinute, typ}] = delta(base.Problems[typ], n) * 60 / secs
	}

	var repos, records float64
	if j := cur.Backfill.Current; j != nil {
		var prevRepos, prevRecords int64
		if b := base.Backfill.Current; b != nil && b.ID == j.ID {
			prevRepos, prevRecords = b.ProcessedRepos, b.Records
		}
		repos, records = delta(prevRepos, j.ProcessedRepos), delta(prevRecords, j.Records)
	}
	out[key{BackfillPerSecond, "repos"}] = repos / secs
	out[key{BackfillPerSecond, "records"}] = records / secs
	return out
}

// assign gives the methods called since the last reading a series of
// their own while fewer than maxMethodSeries have one, the busiest
// first. Once all are taken, a method called takes the place of one not
// called during the whole hour window.
func (h *History) assign(r *Reading) {
	type called struct {
		method string
		calls  int64
	}
	var fresh []called
	for m, c := range r.Calls {
		if h.slots[m] || m == OtherMethods {
			continue
		}
		if d := c.sub(h.lastCalls(m)); d.Calls > 0 {
			fresh = append(fresh, called{m, d.Calls})
		}
	}
	if len(fresh) == 0 {
		return
	}
	slices.SortFunc(fresh, func(a, b called) int {
		return cmp.Or(cmp.Compare(b.calls, a.calls), cmp.Compare(a.method, b.method))
	})
	hour := h.tiers[0]
	for _, f := range fresh {
		if len(h.slots) >= maxMethodSeries {
			idle := ""
			for _, m := range slices.Sorted(maps.Keys(h.slots)) {
				if !hour.held(key{CallsPerSecond, m}) && r.Calls[m].sub(h.lastCalls(m)).Calls == 0 {
					idle = m
					break
				}
			}
			if idle == "" {
				return
			}
			delete(h.slots, idle)
		}
		h.slots[f.method] = true
	}
}

// lastCalls are the counters of method at the last reading.
func (h *History) lastCalls(method string) CallCounts {
	if h.last == nil {
		return CallCounts{}
	}
	return h.last.Calls[method]
}

// track follows what the health rules and the backfill progress need
// over time: since when each source is not connected, and the running
// job's counters over the last rateWindow.
func (h *History) track(r *Reading, now time.Time) {
	names := map[string]bool{}
	for _, s := range r.Sources {
		names[s.Name] = true
		if s.State == Connected || s.State == Idle || !r.Leading {
			delete(h.down, s.Name)
		} else if _, ok := h.down[s.Name]; !ok {
			h.down[s.Name] = now
		}
	}
	for n := range h.down {
		if !names[n] {
			delete(h.down, n)
		}
	}

	j := r.Backfill.Current
	if j == nil {
		h.trail = h.trail[:0]
		return
	}
	if len(h.trail) > 0 && h.trail[0].id != j.ID {
		h.trail = h.trail[:0]
	}
	h.trail = append(h.trail, jobPoint{at: now, id: j.ID, repos: j.ProcessedRepos, records: j.Records,
		startedAt: j.StartedAt, totalRepos: j.TotalRepos, status: j.Status, stage: j.Stage, waitingAlongside: r.Backfill.Waiting})
	// Keep the newest point at or before the window's start, and at most
	// an hour window's worth.
	drop := 0
	for drop+1 < len(h.trail) && !h.trail[drop+1].at.After(now.Add(-rateWindow)) {
		drop++
	}
	drop = max(drop, len(h.trail)-HourPoints)
	h.trail = slices.Delete(h.trail, 0, drop)
}

// Progress is the running backfill job's progress with its rates over
// the last minute (over its life when it started less than a minute
// ago) and the estimated time to its completion.
type Progress struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Stage  string `json:"stage"`
	// TotalRepos is null while the repositories are still discovered.
	TotalRepos     *int64 `json:"total_repos"`
	ProcessedRepos int64  `json:"processed_repos"`
	Records        int64  `json:"total_records"`
	// The rates are null before they can be measured; ETASeconds is null
	// while the total is unknown or nothing progresses.
	ReposPerSecond   Value `json:"repos_per_second"`
	RecordsPerSecond Value `json:"records_per_second"`
	ETASeconds       Value `json:"eta_seconds"`
	// Waiting counts the jobs waiting behind it.
	Waiting int `json:"waiting"`
}

// progress returns the running job's progress, nil when none runs.
func (h *History) progress() *Progress {
	if len(h.trail) == 0 {
		return nil
	}
	last := h.trail[len(h.trail)-1]
	p := &Progress{ID: last.id, Status: last.status, Stage: last.stage, ProcessedRepos: last.repos, Records: last.records,
		ReposPerSecond: Value(math.NaN()), RecordsPerSecond: Value(math.NaN()), ETASeconds: Value(math.NaN()), Waiting: last.waitingAlongside}
	if last.totalRepos >= 0 {
		total := last.totalRepos
		p.TotalRepos = &total
	}
	first := h.trail[0]
	from, repos, records := first.at, first.repos, first.records
	if s := last.startedAt; !s.IsZero() && s.After(last.at.Add(-rateWindow)) && s.Before(from) {
		from, repos, records = s, 0, 0
	}
	secs := last.at.Sub(from).Seconds()
	if secs <= 0 {
		return p
	}
	rr := delta(repos, last.repos) / secs
	p.ReposPerSecond = Value(rr)
	p.RecordsPerSecond = Value(delta(records, last.records) / secs)
	switch {
	case p.TotalRepos == nil:
	case last.repos >= *p.TotalRepos:
		p.ETASeconds = 0
	case rr > 0:
		p.ETASeconds = Value(float64(*p.TotalRepos-last.repos) / rr)
	}
	return p
}

// Window is one window of the history, as GET /admin/stats/history
// answers it.
type Window struct {
	Window          string  `json:"window"`
	IntervalSeconds float64 `json:"interval_seconds"` // between two points
	// Times are the points' times in Unix milliseconds, oldest first.
	Times []int64 `json:"times"`
	// Series holds each metric's series by label, each a value per time
	// (null where it had none).
	Series   map[string]map[string][]Value `json:"series"`
	Backfill *Progress                     `json:"backfill"`
	Health   Health                        `json:"health"`
}

// Window returns the window named name (Hour or Day); false when there is
// no such window.
func (h *History) Window(name string) (Window, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	i := slices.IndexFunc(h.tiers, func(t *tier) bool { return t.name == name })
	if i < 0 {
		return Window{}, false
	}
	t := h.tiers[i]
	w := Window{Window: name, IntervalSeconds: (time.Duration(t.every) * h.interval).Seconds(), Times: t.timeline(),
		Series: map[string]map[string][]Value{}, Backfill: h.progress(), Health: h.health}
	for k, s := range t.series {
		if w.Series[k.metric] == nil {
			w.Series[k.metric] = map[string][]Value{}
		}
		w.Series[k.metric][k.label] = t.ordered(s.values)
	}
	return w, true
}

// Health returns the health judged at the last sample.
func (h *History) Health() Health {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.health
}
