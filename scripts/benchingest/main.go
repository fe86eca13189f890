// Command benchingest measures ingestion: it replays a generated,
// Jetstream-shaped stream of commit events through the Jetstream stand-in
// (appview/ingest/jetstreamtest) into `appview serve` on SQLite and on
// PostgreSQL, optionally while a backfill job fetches records from local
// PDS stand-ins (backfill/backfilltest), and reports events/s, records/s,
// commit lag, CPU and memory against the targets of issue 4. Run it
// through scripts/bench-ingest.
//
// Per backend it creates a fresh database, registers three record
// lexicons, writes the first -prefill events of the stream into it
// through the storage layer (ApplyBatch, as a backfill would leave them),
// then runs up to three phases on it, each with a fresh service process
// and a fresh stand-in:
//
//   - throughput: all -events are published at once; the service drains
//     them as fast as it can. Reported: committed events/s (overall,
//     between 10% and 90%, and per -curve-step events, to show how the
//     writer slows as the database grows), commit lag quantiles from the
//     lexview_commit_lag_seconds histogram, CPU seconds of the service
//     (utime+stime from /proc) and the cores that amounts to, peak RSS
//     (VmHWM) and the peak anonymous RSS (RssAnon, read every 250 ms:
//     heap and stacks, not the database file pages SQLite maps).
//   - steady: events are published at -steady-rate for -steady-warmup
//     plus -steady-duration; the window after the warmup is measured
//     (histogram and CPU differences), reporting CPU as % of one core.
//   - backfill (unless -backfill-records is 0): a PLC stand-in and four
//     PDS stand-ins hold -backfill-records records of app.bench.post
//     (about 500 bytes of JSON each) in 4 × 25 repositories. The service is
//     started with PLC_URL at the stand-in and ALLOW_PRIVATE_NETWORKS=true;
//     an admin API key comes from `appview admin bootstrap` (the binary is
//     built for this even with -inprocess). Live events are published at
//     -steady-rate; after -steady-warmup a backfill job for the 100
//     repositories is created through POST /admin/backfill and polled
//     through GET /admin/backfill/status until it completes. The window
//     from the job's creation to its completion is measured: live commit
//     lag (source="jetstream") and events/s, backfill records/s
//     (lexview_records_indexed_total{source="backfill"}), CPU and peak RSS.
//     The live events are generated for a backfill of at least 5,000
//     records/s; a slower one outlasts them, which is reported.
//   - build (with -build-index): live events are published at -steady-rate,
//     the stream generated as it is sent (it continues the events of the
//     phases before), so that it lasts as long as the build. After
//     -steady-warmup a window of -build-baseline is measured without a
//     build; then the field indexes of -build-index are declared through
//     POST /admin/indexes (the admin key from `appview admin bootstrap`)
//     and GET /admin/indexes is polled every 100 ms until all are ready.
//     The window from just before the declaration to then is measured: the
//     live commit lag and events/s while the build runs, next to those of
//     the window before, in the same process; the build's duration (the
//     indexes' created_at to the last updated_at, as the service stamps
//     them) and the records it processed per second. An index not ready
//     within -timeout is reported as such, a failed one is an error.
//
// Every phase also reports the CPU of the benchmark process itself (the
// stand-ins), of a local PostgreSQL server's processes, and of everything
// else on the machine (/proc/stat), since a busy machine skews the rates;
// CPU per event is the figure least affected by that. After the throughput
// and steady phases the number of indexed records is checked against what
// the stream leaves; the backfill must index exactly -backfill-records
// records (lexview_records_indexed_total and the job's total_records).
//
// With -inprocess the service runs inside this process (appview.New +
// Start, its HTTP surface served on a local listener) and -cpuprofile-dir
// writes CPU profiles of each phase; CPU and memory figures then include
// the stand-ins and the generated stream.
//
// It exits 0 once it has measured, whatever the figures: it is a report.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/lexview/lexview/internal/jetstreamtest"
)

// Targets of issue 4, on the 2-core reference machine.
var targetRate = map[string]float64{"sqlite": 10_000, "postgres": 5_000}

const (
	targetSteadyCPU    = 0.25 // of one core
	targetRSS          = 300 << 20
	targetP99          = 1.0    // seconds
	targetBackfillRate = 15_000 // records/s from local PDS stand-ins
	targetBuildP99     = 2.0    // seconds of live commit lag while an index builds (issue 32)
)

type options struct {
	backends        []string
	events, dids    int
	seed            uint64
	steadyRate      int
	steadyDuration  time.Duration
	steadyWarmup    time.Duration
	timeout         time.Duration
	inProcess       bool
	profileDir      string
	calibrate       bool
	trace           time.Duration
	hook            bool
	backfillRecords int
	prefill         int
	curveStep       int
	buildIndexes    []indexSpec
	buildBaseline   time.Duration
}

func main() {
	log.SetFlags(log.Ltime)
	log.SetPrefix("benchingest: ")
	var opt options
	backends := flag.String("backends", "sqlite,postgres", "comma-separated backends: sqlite, postgres (PostgreSQL uses APPVIEW_TEST_POSTGRES_URL)")
	flag.IntVar(&opt.events, "events", 1_000_000, "events in the throughput phase")
	flag.IntVar(&opt.dids, "dids", 20_000, "distinct accounts in the stream")
	flag.Uint64Var(&opt.seed, "seed", 1, "random seed of the generated stream")
	flag.IntVar(&opt.steadyRate, "steady-rate", 1000, "events/s in the steady phase")
	flag.DurationVar(&opt.steadyDuration, "steady-duration", 30*time.Second, "measured length of the steady phase (0 skips it)")
	flag.DurationVar(&opt.steadyWarmup, "steady-warmup", 5*time.Second, "unmeasured start of the steady phase")
	flag.DurationVar(&opt.timeout, "timeout", 15*time.Minute, "longest wait for the throughput phase to be committed, for the backfill job to complete and for the -build-index indexes to be ready")
	flag.BoolVar(&opt.inProcess, "inprocess", false, "run the service inside this process instead of as a child (for -cpuprofile-dir)")
	flag.StringVar(&opt.profileDir, "cpuprofile-dir", "", "write CPU profiles of each phase here (implies -inprocess)")
	flag.DurationVar(&opt.trace, "trace", 0, "with -cpuprofile-dir: also write an execution trace of the first `duration` of each phase")
	flag.BoolVar(&opt.hook, "hook", false, "give every collection a record-event Lua script (index_hook) that stamps a field on each record")
	flag.BoolVar(&opt.calibrate, "calibrate", true, "first measure how fast the stand-in alone delivers events")
	flag.IntVar(&opt.backfillRecords, "backfill-records", 200_000, "records a backfill job fetches while live events arrive at -steady-rate (0 skips the phase)")
	flag.IntVar(&opt.prefill, "prefill", 0, "events of the stream written straight into the database (storage ApplyBatch) before the phases, so that they measure ingestion into a database that already holds their records")
	buildIndex := flag.String("build-index", "", "last, declare these field indexes while live events arrive at -steady-rate and measure the commit lag until they are ready: comma-separated collection:path[:kind], kind value (default) or text, e.g. app.bench.post:createdAt")
	flag.DurationVar(&opt.buildBaseline, "build-baseline", 30*time.Second, "with -build-index: measured window of live events before the declaration, to compare with (0: none)")
	flag.IntVar(&opt.curveStep, "curve-step", 100_000, "report the throughput phase's events/s per this many events committed (0: no curve)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: scripts/bench-ingest [flags]\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	for _, b := range strings.Split(*backends, ",") {
		if b = strings.TrimSpace(b); b != "" {
			opt.backends = append(opt.backends, b)
		}
	}
	if opt.events < 1000 || opt.dids < 10 || opt.steadyRate < 1 || opt.backfillRecords < 0 || opt.prefill < 0 || opt.buildBaseline < 0 || len(opt.backends) == 0 {
		log.Fatal("need -events >= 1000, -dids >= 10, -steady-rate >= 1, -backfill-records >= 0, -prefill >= 0, -build-baseline >= 0 and at least one backend")
	}
	var err error
	if opt.buildIndexes, err = parseIndexSpecs(*buildIndex); err != nil {
		log.Fatal(err)
	}
	if opt.profileDir != "" {
		opt.inProcess = true
		if err := os.MkdirAll(opt.profileDir, 0o755); err != nil {
			log.Fatal(err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, opt); err != nil {
		stop()
		log.Fatal(err)
	}
}

// workload is what every backend is given: the generated events of each
// phase and what they leave in the index.
type workload struct {
	// prefill is written into the database before the phases.
	prefill                     []jetstreamtest.Event
	burst, steady, backfillLive []jetstreamtest.Event
	// sample is a few events of the burst, checked against the lexicons.
	sample [][]byte
	// build continues the stream in the build phase (cloned per backend).
	build *generator
	// liveAfterPrefill, liveAfterBurst and liveAfterSteady are the
	// records the stream leaves after the prefill, the throughput and the
	// steady phase.
	liveAfterPrefill, liveAfterBurst, liveAfterSteady int
}

func run(ctx context.Context, opt options) error {
	work, err := os.MkdirTemp("", "lexview-benchingest-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	r := &runner{opt: opt, work: work}
	if !opt.inProcess || opt.backfillRecords > 0 || len(opt.buildIndexes) > 0 { // the backfill and build phases run `appview admin bootstrap`
		t := time.Now()
		if r.bin, err = buildBinary(work); err != nil {
			return err
		}
		log.Printf("built ./cmd/appview in %s", time.Since(t).Round(100*time.Millisecond))
	}

	t := time.Now()
	g := newGenerator(opt.seed, opt.dids)
	var w workload
	w.prefill = g.generate(opt.prefill, make([]jetstreamtest.Event, 0, opt.prefill))
	w.liveAfterPrefill = g.liveCount()
	w.burst = g.generate(opt.events, make([]jetstreamtest.Event, 0, opt.events))
	w.liveAfterBurst = g.liveCount()
	steadyN := 0
	if opt.steadyDuration > 0 {
		steadyN = int((opt.steadyWarmup + opt.steadyDuration).Seconds() * float64(opt.steadyRate))
	}
	w.steady = g.generate(steadyN, make([]jetstreamtest.Event, 0, steadyN))
	w.liveAfterSteady = g.liveCount()
	backfillN := backfillLiveEvents(opt)
	w.backfillLive = g.generate(backfillN, make([]jetstreamtest.Event, 0, backfillN))
	if len(opt.buildIndexes) > 0 {
		w.build = g.clone()
	}
	var msgBytes int64
	for _, e := range w.burst {
		msgBytes += int64(len(e.JSON))
	}
	total := opt.prefill + opt.events + steadyN + backfillN
	log.Printf("generated %d events in %s", total, time.Since(t).Round(100*time.Millisecond))
	during := ""
	if backfillN > 0 {
		during = fmt.Sprintf(" + up to %d (during the backfill)", backfillN)
	}
	if w.build != nil {
		during += fmt.Sprintf(" (+ %d/s while the index build phase lasts)", opt.steadyRate)
	}
	if opt.prefill > 0 {
		fmt.Printf("Prefill: the stream's first %d events, written into the database before the phases.\n", opt.prefill)
	}
	fmt.Printf("Stream: %d + %d%s events from %d DIDs over %v;\n"+
		"        creates %.1f%%, updates %.1f%%, deletes %.1f%%; record JSON %.0f bytes on average,\n"+
		"        whole message %.0f bytes (+ time_us); %d records live after the burst.\n",
		opt.events, steadyN, during, opt.dids, collections,
		pct(g.creates, total), pct(g.updates, total), pct(g.deletes, total),
		float64(g.recSize)/float64(g.recN), float64(msgBytes)/float64(len(w.burst)), w.liveAfterBurst)
	if opt.calibrate {
		n := min(len(w.burst), 200_000)
		rate, mbps, err := calibrate(ctx, w.burst[:n])
		if err != nil {
			return fmt.Errorf("calibrate: %w", err)
		}
		fmt.Printf("Stand-in alone: delivers %s events/s (%.0f MB/s) to a reading client (%d events).\n", thousands(rate), mbps, n)
	}
	w.sample = make([][]byte, 0, 3000)
	for i := 0; i < len(w.burst); i += max(1, len(w.burst)/3000) {
		w.sample = append(w.sample, w.burst[i].JSON)
	}

	results := map[string]backendResult{}
	for _, backend := range opt.backends {
		res, err := r.backend(ctx, backend, w)
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			log.Printf("%s: %v", backend, err)
			continue
		}
		results[backend] = res
		printBackend(backend, res, opt, w)
	}
	printSummary(opt, results)
	return nil
}

// backend runs the phases on a fresh database of one backend.
func (r *runner) backend(ctx context.Context, backend string, w workload) (res backendResult, err error) {
	db, err := createDatabase(ctx, backend, r.work)
	if err != nil {
		return res, err
	}
	defer func() {
		if cerr := db.cleanup(); cerr != nil {
			log.Printf("%s: removing the database: %v", backend, cerr)
		}
	}()
	r.serverPID = db.serverPID
	if err := registerLexicons(ctx, db.url, r.opt.hook); err != nil {
		return res, err
	}
	if err := checkRecords(ctx, db.url, w.sample); err != nil {
		return res, err
	}
	if len(w.prefill) > 0 {
		if err := prefill(ctx, db.url, w.prefill); err != nil {
			return res, fmt.Errorf("prefill: %w", err)
		}
		r.checkCount(ctx, backend, db.url, "after the prefill", w.liveAfterPrefill)
	}
	log.Printf("%s: throughput phase, %d events", backend, len(w.burst))
	if res.throughput, err = r.throughput(ctx, backend, db.url, w.burst); err != nil {
		return res, fmt.Errorf("throughput phase: %w", err)
	}
	if res.throughput.complete {
		r.checkCount(ctx, backend, db.url, "after the burst", w.liveAfterBurst)
	}
	if len(w.steady) > 0 {
		log.Printf("%s: steady phase, %d events/s for %s (+%s warmup)", backend, r.opt.steadyRate, r.opt.steadyDuration, r.opt.steadyWarmup)
		if res.steady, err = r.steady(ctx, backend, db.url, w.steady); err != nil {
			return res, fmt.Errorf("steady phase: %w", err)
		}
		if res.throughput.complete && res.steady.complete {
			r.checkCount(ctx, backend, db.url, "at the end of the steady phase", w.liveAfterSteady)
		}
	}
	if r.opt.backfillRecords > 0 {
		log.Printf("%s: backfill phase, %d records while %d events/s arrive (+%s warmup)", backend, r.opt.backfillRecords, r.opt.steadyRate, r.opt.steadyWarmup)
		if res.backfill, err = r.backfill(ctx, backend, db.url, w.backfillLive); err != nil {
			return res, fmt.Errorf("backfill phase: %w", err)
		}
	}
	if w.build != nil {
		log.Printf("%s: index build phase, %d events/s, %s before declaring %v", backend, r.opt.steadyRate, r.opt.buildBaseline, r.opt.buildIndexes)
		// A failed build loses only its own phase's figures.
		if base, build, err := r.build(ctx, backend, db.url, w.build.clone()); err != nil {
			if ctx.Err() != nil {
				return res, err
			}
			log.Printf("%s: index build phase FAILED: %v", backend, err)
		} else {
			res.buildBase, res.build = base, build
		}
	}
	return res, nil
}

// checkCount logs a wrong result when the index does not hold want records.
func (r *runner) checkCount(ctx context.Context, backend, dbURL, when string, want int) {
	if n, err := countRecords(ctx, dbURL); err != nil {
		log.Printf("%s: counting records: %v", backend, err)
	} else if n != int64(want) {
		log.Printf("%s: WRONG RESULT: %d records indexed %s, the stream leaves %d", backend, n, when, want)
	}
}
