package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"math"
	"os"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/lexview/lexview/internal/jetstreamtest"
)

// phaseResult is what one measured phase reports.
type phaseResult struct {
	name       string
	events     int           // events published in the phase (backfill: at most)
	committed  float64       // live events committed (indexed + rejected) in the measured window
	rejected   float64       // events rejected by validation
	wall       time.Duration // measured window
	rate       float64       // committed events/s over the window
	sustained  float64       // events/s between 10% and 90% committed (throughput phase)
	publish    time.Duration // PublishRaw of the whole stream (throughput phase)
	p50, p99   float64       // commit lag quantiles, seconds
	p99Inf     bool          // p99 beyond the largest finite bucket
	batchMean  float64       // mean committed batch size
	writerBusy float64       // time spent writing batches per second of the window
	maxQueue   float64       // largest write-queue depth seen
	cpu        time.Duration // service CPU (user+system) in the window
	rss, hwm   int64         // service RSS at the end, peak RSS of the process
	// anonPeak is the largest anonymous resident memory (RssAnon) seen,
	// read with every scrape of the throughput phase (every 250 ms).
	anonPeak int64
	written  int64 // bytes the service wrote through system calls in the window
	// curve is the throughput phase's committed events/s per -curve-step
	// events (the last entry over the rest).
	curve       []curvePoint
	benchCPU    time.Duration // the benchmark process (stand-ins, polling) in the window
	othersCPU   time.Duration // every other process on the machine in the window
	dbCPU       time.Duration // the local PostgreSQL server's processes in the window
	complete    bool          // every event committed before the timeout (backfill: exactly the records expected)
	inProcess   bool
	profilePath string

	// The backfill phase: records the job indexed in the window, and per
	// second; mean bytes of a record's JSON; whether the live stream ran out
	// before the job completed.
	backfillRecords float64
	backfillRate    float64
	recordBytes     float64
	liveRanOut      bool

	// The index build phase ("build"): the records the builds processed
	// (the indexes' done), the time from the first declaration to the last
	// index ready (the service's timestamps; the window when not ready),
	// records per second, and each index.
	buildRecords int64
	buildSeconds float64
	buildRate    float64
	indexes      []builtIndex
}

// runner runs the phases of one backend.
type runner struct {
	opt       options
	bin       string // built appview binary (child mode; admin bootstrap of the backfill phase)
	work      string
	serverPID int // local PostgreSQL postmaster of the current backend, 0 if none
	// keyDB is the database an admin API key was bootstrapped on: key.
	keyDB, key string
}

// start starts a service, as a child process or in-process.
func (r *runner) start(cfg serviceConfig) (service, error) {
	cfg.workDir = r.work
	if r.opt.inProcess {
		return startInProcess(cfg)
	}
	return startChild(r.bin, cfg)
}

// waitReady waits until the service subscribed and serves metrics.
func waitReady(ctx context.Context, svc service, js *jetstreamtest.Server) (scrape, error) {
	deadline := time.Now().Add(60 * time.Second)
	for {
		if c, ok := svc.(*child); ok {
			if gone, err := c.exited(); gone {
				return scrape{}, fmt.Errorf("appview exited during start-up (%v):\n%s", err, logTail(c.logPath, 20))
			}
		}
		if js.Connected() > 0 {
			if s, err := scrapeMetrics(ctx, svc.metricsURL()); err == nil {
				return s, nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return scrape{}, errors.New("the service did not subscribe and serve metrics within 60s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// reading is the state of the service and of the machine at one moment.
type reading struct {
	metrics   scrape
	svc, self procStats     // the service and the benchmark process
	machine   time.Duration // machineBusy
	db        time.Duration // CPU of the local PostgreSQL server (treeCPU)
}

// read completes a scrape into a reading.
func (r *runner) read(svc service, s scrape) (reading, error) {
	p, err := readProc(svc.pid())
	if err != nil {
		return reading{}, err
	}
	self, _ := readProc(os.Getpid())
	return reading{metrics: s, svc: p, self: self, machine: machineBusy(), db: treeCPU(r.serverPID)}, nil
}

// measure scrapes the service and reads the CPU counters.
func (r *runner) measure(ctx context.Context, svc service) (reading, error) {
	s, err := scrapeMetrics(ctx, svc.metricsURL())
	if err != nil {
		return reading{}, fmt.Errorf("scrape: %w", err)
	}
	return r.read(svc, s)
}

// sleepUntil waits until t or until ctx ends.
func sleepUntil(ctx context.Context, t time.Time) error {
	select {
	case <-time.After(time.Until(t)):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// eventSource gives a publisher its events: the next n, fewer (or none)
// once it runs out.
type eventSource interface {
	take(n int) []jetstreamtest.Event
}

// sliceSource hands out pre-generated events.
type sliceSource []jetstreamtest.Event

func (s *sliceSource) take(n int) []jetstreamtest.Event {
	n = min(n, len(*s))
	out := (*s)[:n]
	*s = (*s)[n:]
	return out
}

// publisher hands events to a stand-in at a steady rate, in 5 ms steps,
// from a goroutine.
type publisher struct {
	start  time.Time
	cancel context.CancelFunc
	done   chan struct{} // closed when every event was handed over or on stop
	sent   atomic.Int64  // events handed over so far
}

// publishAtRate starts publishing the events of src at rate per second.
func publishAtRate(ctx context.Context, js *jetstreamtest.Server, src eventSource, rate int) *publisher {
	ctx, cancel := context.WithCancel(ctx)
	p := &publisher{start: time.Now(), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		sent := 0
		for {
			if want := int(time.Since(p.start).Seconds()*float64(rate)) + 1 - sent; want > 0 {
				batch := src.take(want)
				js.PublishRaw(batch)
				sent += len(batch)
				p.sent.Store(int64(sent))
				if len(batch) < want {
					return // src ran out
				}
			}
			select {
			case <-tick.C:
			case <-ctx.Done():
				return
			}
		}
	}()
	return p
}

// wait waits until every event was handed over.
func (p *publisher) wait(ctx context.Context) error {
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ranOut reports whether the publisher has handed over every event (and
// publishes no more); call it before stop.
func (p *publisher) ranOut() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop ends publishing and waits for the goroutine.
func (p *publisher) stop() {
	p.cancel()
	<-p.done
}

// startProfile starts a CPU profile in in-process mode ("" otherwise).
func (r *runner) startProfile(backend, phase string) (string, func()) {
	if r.opt.profileDir == "" {
		return "", func() {}
	}
	path := filepath.Join(r.opt.profileDir, backend+"-"+phase+".pprof")
	f, err := os.Create(path)
	if err != nil {
		log.Printf("cpu profile: %v", err)
		return "", func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		log.Printf("cpu profile: %v", err)
		f.Close()
		return "", func() {}
	}
	stopTrace := func() {}
	if r.opt.trace > 0 {
		stopTrace = startTrace(filepath.Join(r.opt.profileDir, backend+"-"+phase+".trace"), r.opt.trace)
	}
	return path, sync.OnceFunc(func() { stopTrace(); pprof.StopCPUProfile(); f.Close() })
}

// startTrace writes an execution trace of the first d of a phase.
func startTrace(path string, d time.Duration) func() {
	f, err := os.Create(path)
	if err != nil {
		log.Printf("trace: %v", err)
		return func() {}
	}
	if err := trace.Start(f); err != nil {
		log.Printf("trace: %v", err)
		f.Close()
		return func() {}
	}
	stop := sync.OnceFunc(func() { trace.Stop(); f.Close() })
	time.AfterFunc(d, stop)
	return stop
}

// throughput publishes the whole stream at once and waits until the
// service has committed all of it.
func (r *runner) throughput(ctx context.Context, backend, dbURL string, events []jetstreamtest.Event) (phaseResult, error) {
	res := phaseResult{name: "throughput", events: len(events), inProcess: r.opt.inProcess}
	js := jetstreamtest.Start()
	defer js.Close()
	svc, err := r.start(serviceConfig{dbURL: dbURL, jetstreamURL: js.URL})
	if err != nil {
		return res, err
	}
	defer svc.stop()
	s0, err := waitReady(ctx, svc, js)
	if err != nil {
		return res, err
	}
	r0, err := r.read(svc, s0)
	if err != nil {
		return res, err
	}
	var stopProfile func()
	res.profilePath, stopProfile = r.startProfile(backend, "throughput")
	defer stopProfile()

	// Publish in chunks from a goroutine, so that the service starts
	// reading while the rest is handed to the stand-in.
	t0 := time.Now()
	var publishing sync.WaitGroup
	var publishTook time.Duration
	publishing.Go(func() {
		const chunk = 20_000
		for i := 0; i < len(events); i += chunk {
			js.PublishRaw(events[i:min(i+chunk, len(events))])
		}
		publishTook = time.Since(t0)
	})
	defer publishing.Wait()
	n := float64(len(events))
	base := s0.indexed + s0.rejected
	var t10, t90 time.Time
	var last scrape
	curve := newCurve(r.opt.curveStep, len(events), t0)
	nextReport := time.Now().Add(10 * time.Second)
	deadline := t0.Add(r.opt.timeout)
	for {
		s, err := scrapeMetrics(ctx, svc.metricsURL())
		if err != nil {
			return res, fmt.Errorf("scrape: %w", err)
		}
		last = s
		done := s.indexed + s.rejected - base
		res.maxQueue = max(res.maxQueue, s.queue)
		curve.observe(done, s.at)
		if p, err := readProc(svc.pid()); err == nil {
			res.anonPeak = max(res.anonPeak, p.anon)
		}
		if t10.IsZero() && done >= 0.1*n {
			t10 = s.at
		}
		if t90.IsZero() && done >= 0.9*n {
			t90 = s.at
			res.sustained = 0.8 * n / t90.Sub(t10).Seconds()
		}
		if done >= n {
			res.complete = true
			break
		}
		if time.Now().After(nextReport) {
			log.Printf("%s throughput: %.0f/%d events committed (%.0f/s so far)", backend, done, len(events), done/time.Since(t0).Seconds())
			nextReport = nextReport.Add(10 * time.Second)
		}
		if c, ok := svc.(*child); ok {
			if gone, err := c.exited(); gone {
				return res, fmt.Errorf("appview exited (%v):\n%s", err, logTail(c.logPath, 20))
			}
		}
		if time.Now().After(deadline) {
			log.Printf("%s throughput: timed out after %s with %.0f of %d events committed", backend, r.opt.timeout, done, len(events))
			break
		}
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		time.Sleep(250 * time.Millisecond)
	}
	publishing.Wait()
	res.publish = publishTook
	stopProfile()
	r1, err := r.read(svc, last)
	if err != nil {
		return res, err
	}
	res.committed = last.indexed + last.rejected - base
	res.rejected = last.rejected - s0.rejected
	res.curve = curve.points
	res.wall = last.at.Sub(t0)
	res.rate = res.committed / res.wall.Seconds()
	res.account(r0, r1)
	return res, nil
}

// liveWindow is a fresh service receiving a stream at the steady rate,
// past its warm-up, with the first reading of the measured window taken and
// a CPU profile (in-process) running.
type liveWindow struct {
	js          *jetstreamtest.Server
	svc         service
	pub         *publisher
	ready       scrape  // the service's metrics before any event
	first       reading // the start of the measured window
	stopProfile func()
}

// startLive starts a stand-in and a service with cfg (its Jetstream URL
// filled in), publishes the events of src at -steady-rate, waits out
// -steady-warmup and takes the window's first reading. close stops it all.
func (r *runner) startLive(ctx context.Context, cfg serviceConfig, src eventSource, backend, phase string, res *phaseResult) (*liveWindow, error) {
	w := &liveWindow{js: jetstreamtest.Start(), stopProfile: func() {}}
	cfg.jetstreamURL = w.js.URL
	var err error
	if w.svc, err = r.start(cfg); err != nil {
		w.close()
		return nil, err
	}
	if w.ready, err = waitReady(ctx, w.svc, w.js); err != nil {
		w.close()
		return nil, err
	}
	w.pub = publishAtRate(ctx, w.js, src, r.opt.steadyRate)
	if err := sleepUntil(ctx, w.pub.start.Add(r.opt.steadyWarmup)); err != nil {
		w.close()
		return nil, err
	}
	if w.first, err = r.measure(ctx, w.svc); err != nil {
		w.close()
		return nil, err
	}
	res.profilePath, w.stopProfile = r.startProfile(backend, phase)
	return w, nil
}

func (w *liveWindow) close() {
	w.stopProfile()
	if w.pub != nil {
		w.pub.stop()
	}
	if w.svc != nil {
		w.svc.stop()
	}
	w.js.Close()
}

// steady publishes at a fixed rate and measures the window after warmup.
func (r *runner) steady(ctx context.Context, backend, dbURL string, events []jetstreamtest.Event) (phaseResult, error) {
	res := phaseResult{name: "steady", events: len(events), inProcess: r.opt.inProcess}
	src := sliceSource(events)
	w, err := r.startLive(ctx, serviceConfig{dbURL: dbURL}, &src, backend, "steady", &res)
	if err != nil {
		return res, err
	}
	defer w.close()
	svc, pub, s00, r0 := w.svc, w.pub, w.ready, w.first
	if err := sleepUntil(ctx, pub.start.Add(r.opt.steadyWarmup+r.opt.steadyDuration)); err != nil {
		return res, err
	}
	r1, err := r.measure(ctx, svc)
	if err != nil {
		return res, err
	}
	w.stopProfile()
	res.window(r0, r1)
	res.rejected = r1.metrics.rejected - s00.rejected
	// Let the stream finish, then wait for the last commits.
	if err := pub.wait(ctx); err != nil {
		return res, err
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		s, err := scrapeMetrics(ctx, svc.metricsURL())
		if err == nil && s.indexed+s.rejected-s00.indexed-s00.rejected >= float64(len(events)) {
			res.complete = true
			res.rejected = s.rejected - s00.rejected
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return res, nil
}

// window derives the figures of a live window from a to b: the live
// events committed and rejected, their rate, the write queue, and account.
func (res *phaseResult) window(a, b reading) {
	s0, s1 := a.metrics, b.metrics
	res.committed = s1.indexed + s1.rejected - s0.indexed - s0.rejected
	res.rejected = s1.rejected - s0.rejected
	res.wall = s1.at.Sub(s0.at)
	res.rate = res.committed / res.wall.Seconds()
	res.maxQueue = max(res.maxQueue, s0.queue, s1.queue)
	res.account(a, b)
}

// account derives the lag, batch, CPU and memory figures of the window
// from a to b, and splits the machine's busy time.
func (res *phaseResult) account(a, b reading) {
	lag, batch := b.metrics.lag.minus(a.metrics.lag), b.metrics.batch.minus(a.metrics.batch)
	res.p50, _ = lag.quantile(0.50)
	res.p99, res.p99Inf = lag.quantile(0.99)
	res.batchMean = batch.mean()
	if d := b.metrics.at.Sub(a.metrics.at).Seconds(); d > 0 {
		res.writerBusy = (b.metrics.commitSeconds - a.metrics.commitSeconds) / d
	}
	res.cpu = b.svc.cpu - a.svc.cpu
	res.written = b.svc.written - a.svc.written
	res.rss, res.hwm = b.svc.rss, b.svc.hwm
	res.others(b.machine-a.machine, b.self.cpu-a.self.cpu, b.db-a.db)
}

// others splits the machine's busy time into the benchmark process and
// everything else (in-process, the benchmark process is the service).
func (res *phaseResult) others(machine, self, db time.Duration) {
	res.dbCPU = db
	if res.inProcess {
		res.othersCPU = machine - self - db
		return
	}
	res.benchCPU = self
	res.othersCPU = machine - self - res.cpu - db
}

// cores is the service's CPU time per wall-clock second.
func (res phaseResult) cores() float64 {
	if res.wall <= 0 {
		return math.NaN()
	}
	return res.cpu.Seconds() / res.wall.Seconds()
}

// calibrate measures how fast the stand-in delivers the stream to a
// client that only reads, to show that publishing outpaces ingestion.
func calibrate(ctx context.Context, events []jetstreamtest.Event) (rate, mbps float64, err error) {
	js := jetstreamtest.Start()
	defer js.Close()
	js.PublishRaw(events)
	u := js.URL + "?wantedCollections=" + collPost + "&wantedCollections=" + collLike + "&wantedCollections=" + collFollow + "&cursor=1"
	conn, _, err := websocket.Dial(ctx, u, nil)
	if err != nil {
		return 0, 0, err
	}
	defer conn.CloseNow()
	conn.SetReadLimit(4 << 20)
	start := time.Now()
	var bytes int64
	for range events {
		_, data, err := conn.Read(ctx)
		if err != nil {
			return 0, 0, err
		}
		bytes += int64(len(data))
	}
	d := time.Since(start).Seconds()
	return float64(len(events)) / d, float64(bytes) / d / 1e6, nil
}
