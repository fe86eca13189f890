// Command benchingest measures live ingestion: it replays a generated,
// Jetstream-shaped stream of commit events through the Jetstream stand-in
// (appview/ingest/jetstreamtest) into `appview serve` on SQLite and on
// PostgreSQL, and reports events/s, commit lag, CPU and memory against the
// targets of issue 4. Run it through scripts/bench-ingest.
//
// Per backend it creates a fresh database, registers three record
// lexicons, then runs two phases, each with a fresh service process and a
// fresh stand-in:
//
//   - throughput: all -events are published at once; the service drains
//     them as fast as it can. Reported: committed events/s (overall and
//     between 10% and 90%), commit lag quantiles from the
//     lexview_commit_lag_seconds histogram, CPU seconds of the service
//     (utime+stime from /proc) and the cores that amounts to, peak RSS.
//   - steady: events are published at -steady-rate for -steady-warmup
//     plus -steady-duration; the window after the warmup is measured
//     (histogram and CPU differences), reporting CPU as % of one core.
//
// Both phases also report the CPU of the benchmark process itself (the
// stand-in), of a local PostgreSQL server's processes, and of everything
// else on the machine (/proc/stat), since a busy machine skews the rates;
// CPU per event is the figure least affected by that. After each phase the
// number of indexed records is checked against what the stream leaves.
//
// With -inprocess the service runs inside this process (appview.New +
// Start) and -cpuprofile-dir writes CPU profiles of each phase; CPU and
// memory figures then include the stand-in and the generated stream.
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

	"github.com/lexview/lexview/appview/ingest/jetstreamtest"
)

// Targets of issue 4, on the 2-core reference machine.
var targetRate = map[string]float64{"sqlite": 10_000, "postgres": 5_000}

const (
	targetSteadyCPU = 0.25 // of one core
	targetRSS       = 300 << 20
	targetP99       = 1.0 // seconds
)

type options struct {
	backends       []string
	events, dids   int
	seed           uint64
	steadyRate     int
	steadyDuration time.Duration
	steadyWarmup   time.Duration
	timeout        time.Duration
	inProcess      bool
	profileDir     string
	calibrate      bool
	trace          time.Duration
	hook           bool
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
	flag.DurationVar(&opt.timeout, "timeout", 15*time.Minute, "longest wait for the throughput phase to be committed")
	flag.BoolVar(&opt.inProcess, "inprocess", false, "run the service inside this process instead of as a child (for -cpuprofile-dir)")
	flag.StringVar(&opt.profileDir, "cpuprofile-dir", "", "write CPU profiles of each phase here (implies -inprocess)")
	flag.DurationVar(&opt.trace, "trace", 0, "with -cpuprofile-dir: also write an execution trace of the first `duration` of each phase")
	flag.BoolVar(&opt.hook, "hook", false, "give every collection a record-event Lua script (index_hook) that stamps a field on each record")
	flag.BoolVar(&opt.calibrate, "calibrate", true, "first measure how fast the stand-in alone delivers events")
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
	if opt.events < 1000 || opt.dids < 10 || opt.steadyRate < 1 || len(opt.backends) == 0 {
		log.Fatal("need -events >= 1000, -dids >= 10, -steady-rate >= 1 and at least one backend")
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

func run(ctx context.Context, opt options) error {
	work, err := os.MkdirTemp("", "lexview-benchingest-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	r := &runner{opt: opt, work: work}
	if !opt.inProcess {
		t := time.Now()
		if r.bin, err = buildBinary(work); err != nil {
			return err
		}
		log.Printf("built ./cmd/appview in %s", time.Since(t).Round(100*time.Millisecond))
	}

	t := time.Now()
	g := newGenerator(opt.seed, opt.dids)
	stream := g.generate(opt.events, make([]jetstreamtest.Event, 0, opt.events))
	liveAfterBurst := g.liveCount()
	steadyN := 0
	if opt.steadyDuration > 0 {
		steadyN = int((opt.steadyWarmup + opt.steadyDuration).Seconds() * float64(opt.steadyRate))
	}
	steadyEvents := g.generate(steadyN, make([]jetstreamtest.Event, 0, steadyN))
	var msgBytes int64
	for _, e := range stream {
		msgBytes += int64(len(e.JSON))
	}
	total := opt.events + steadyN
	log.Printf("generated %d events in %s", total, time.Since(t).Round(100*time.Millisecond))
	fmt.Printf("Stream: %d + %d events from %d DIDs over %v; creates %.1f%%, updates %.1f%%, deletes %.1f%%;\n"+
		"        record JSON %.0f bytes on average, whole message %.0f bytes (+ time_us); %d records live after the burst.\n",
		opt.events, steadyN, opt.dids, collections,
		pct(g.creates, total), pct(g.updates, total), pct(g.deletes, total),
		float64(g.recSize)/float64(g.recN), float64(msgBytes)/float64(len(stream)), liveAfterBurst)
	if opt.calibrate {
		n := min(len(stream), 200_000)
		rate, mbps, err := calibrate(ctx, stream[:n])
		if err != nil {
			return fmt.Errorf("calibrate: %w", err)
		}
		fmt.Printf("Stand-in alone: delivers %s events/s (%.0f MB/s) to a reading client (%d events).\n", thousands(rate), mbps, n)
	}
	sample := make([][]byte, 0, 3000)
	for i := 0; i < len(stream); i += max(1, len(stream)/3000) {
		sample = append(sample, stream[i].JSON)
	}

	results := map[string][2]phaseResult{}
	for _, backend := range opt.backends {
		res, err := r.backend(ctx, backend, stream, steadyEvents, sample, liveAfterBurst, g.liveCount())
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			log.Printf("%s: %v", backend, err)
			continue
		}
		results[backend] = res
		printBackend(backend, res, opt)
	}
	printSummary(opt, results)
	return nil
}

// backend runs both phases on a fresh database of one backend.
func (r *runner) backend(ctx context.Context, backend string, stream, steadyEvents []jetstreamtest.Event,
	sample [][]byte, liveAfterBurst, liveAfterAll int) (res [2]phaseResult, err error) {
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
	if err := checkRecords(ctx, db.url, sample); err != nil {
		return res, err
	}
	log.Printf("%s: throughput phase, %d events", backend, len(stream))
	if res[0], err = r.throughput(ctx, backend, db.url, stream); err != nil {
		return res, fmt.Errorf("throughput phase: %w", err)
	}
	if res[0].complete {
		if n, err := countRecords(ctx, db.url); err != nil {
			log.Printf("%s: counting records: %v", backend, err)
		} else if n != int64(liveAfterBurst) {
			log.Printf("%s: WRONG RESULT: %d records indexed after the burst, the stream leaves %d", backend, n, liveAfterBurst)
		}
	}
	if len(steadyEvents) == 0 {
		return res, nil
	}
	log.Printf("%s: steady phase, %d events/s for %s (+%s warmup)", backend, r.opt.steadyRate, r.opt.steadyDuration, r.opt.steadyWarmup)
	if res[1], err = r.steady(ctx, backend, db.url, steadyEvents); err != nil {
		return res, fmt.Errorf("steady phase: %w", err)
	}
	if res[0].complete && res[1].complete {
		if n, err := countRecords(ctx, db.url); err != nil {
			log.Printf("%s: counting records: %v", backend, err)
		} else if n != int64(liveAfterAll) {
			log.Printf("%s: WRONG RESULT: %d records indexed at the end, the stream leaves %d", backend, n, liveAfterAll)
		}
	}
	return res, nil
}
