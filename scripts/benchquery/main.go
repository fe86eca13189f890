// Command benchquery measures Lexview's default queries against a tuned
// bare handler (the baseline, see baseline.go) serving the same answers
// from the same data, on SQLite and on PostgreSQL. Run it through
// scripts/bench-query.
//
// For each backend it seeds a database (-records post-like records of one
// collection and -small records of another), registers the lexicons and an
// API client, then starts Lexview and the baseline, each in a child
// process (this binary re-executed as `serve-lexview` or
// `serve-baseline`), and loads one at a time, in -rounds alternating rounds
// per kind so that changes in the machine's background load fall on both
// alike. It drives four kinds of request over -c keep-alive
// connections: the first page (limit 20), a deep page (limit 50 after a
// random one of the server's own cursors), one account's first page, and
// one record by URI. It prints requests/s and latency percentiles, the
// Lexview/baseline ratios and whether the targets are met; then the
// scripted query against the default one, and the isolation of a small
// collection beside the large one. It always exits 0 once it has
// measured: it is a report, not a test.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/lexview/lexview/scripts/internal/benchkit"
)

// The benchmark's collections and query methods.
const (
	benchCollection = "app.bench.feed.post"
	benchQuery      = "app.bench.feed.listPosts"
	// smallCollection sits beside the large one: its list query must not
	// slow down with the size of the other.
	smallCollection = "app.bench.feed.like"
	smallQuery      = "app.bench.feed.listLikes"
	// scriptedQuery serves the first page through a Lua script that calls
	// db.query once and returns its result.
	scriptedQuery = "app.bench.feed.listPostsScripted"
	pageLimit     = 20
)

// Targets the report checks (issue 14).
const (
	targetRatio         = 0.80 // Lexview req/s over the baseline's
	targetP99Ratio      = 1.25 // Lexview p99 over the baseline's, at most
	targetScriptedRatio = 0.75 // scripted req/s over the default query's
	targetScriptP50     = 200 * time.Microsecond
	targetIsolation     = 0.20 // small collection's p99 change, at most
)

// options are the command's flags.
type options struct {
	benchkit.Runner
	backends []string
	spec     seedSpec
	conns    int
	sqlite   string // reuse this SQLite file
	postgres string // reuse this PostgreSQL database
	kinds    []string
	extras   bool // scripted and isolation runs
}

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "serve-lexview":
			os.Exit(benchkit.ServeChild("benchquery", os.Args[2:], benchkit.NewLexviewHandler, checkSample))
		case "serve-baseline":
			os.Exit(benchkit.ServeChild("benchquery", os.Args[2:], newBaselineHandler, checkSample))
		}
	}
	log.SetFlags(0)
	log.SetPrefix("benchquery: ")

	var o options
	backends := flag.String("backends", "sqlite,postgres", "comma-separated backends to measure: sqlite, postgres")
	kindList := flag.String("kinds", strings.Join(kinds, ","), "comma-separated kinds of request: first, deep, did, uri")
	flag.IntVar(&o.spec.records, "records", 200_000, "records of the large collection to seed")
	flag.IntVar(&o.spec.small, "small", 2_000, "records of the small collection to seed beside it")
	flag.StringVar(&o.spec.shape, "shape", "post", "record shape: post (no nested refs) or reply (nested {uri,cid} refs, like replies, likes and reposts)")
	flag.DurationVar(&o.Duration, "duration", 12*time.Second, "measured load per server and kind (and per extra run)")
	flag.DurationVar(&o.Warmup, "warmup", time.Second, "unmeasured load before each measured round")
	flag.IntVar(&o.conns, "c", 16, "concurrent keep-alive connections")
	flag.IntVar(&o.Rounds, "rounds", 3, "alternating rounds of Lexview and the baseline per kind (-duration is split among them)")
	flag.StringVar(&o.sqlite, "db", "", "SQLite file to use: an existing one is reused as is (no seeding), a missing one is seeded and kept (default: a fresh file, removed afterwards)")
	flag.StringVar(&o.postgres, "pg-db", "", "PostgreSQL database URL to use: one holding records is reused as is, an empty or missing one is created, seeded and kept (default: a fresh database on APPVIEW_TEST_POSTGRES_URL's server, dropped afterwards)")
	flag.BoolVar(&o.extras, "extras", true, "also measure the scripted query and the small collection's isolation")
	flag.StringVar(&o.ProfDir, "cpuprofile-dir", "", "write a CPU profile of each measured window here (BACKEND-SERVER-KIND.pprof)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: scripts/bench-query [flags]\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	o.backends = strings.Split(*backends, ",")
	o.kinds = strings.Split(*kindList, ",")
	if o.spec.records <= 100 || o.spec.small <= pageLimit || o.conns < 1 || o.Duration <= 0 || o.Rounds < 1 ||
		(o.spec.shape != "post" && o.spec.shape != "reply") {
		log.Fatal("need -records > 100, -small > 20, -c >= 1, -rounds >= 1, a positive -duration and -shape post or reply")
	}
	fmt.Printf("benchquery: %v per run (+%v warm-up), %d connections, GOMAXPROCS=%d, NumCPU=%d\n",
		o.Duration, o.Warmup, o.conns, runtime.GOMAXPROCS(0), runtime.NumCPU())
	err := benchkit.RunBackends(context.Background(), "benchquery", o.backends, o.ProfDir, func(ctx context.Context, backend, dir string) error {
		return runBackend(ctx, backend, dir, o)
	})
	if err != nil {
		log.Fatal(err)
	}
}

// runBackend measures one backend and prints its report.
func runBackend(ctx context.Context, backend, dir string, o options) error {
	fmt.Printf("\n=== %s ===\n", backend)
	reuse := o.sqlite
	if backend == "postgres" {
		reuse = o.postgres
	}
	db, fresh, err := benchkit.CreateDatabase(ctx, backend, dir, "benchquery", "main", reuse)
	if err != nil {
		return err
	}
	defer db.Cleanup()
	n, err := prepare(ctx, db.URL, fresh, o.spec)
	if err != nil {
		return err
	}
	fmt.Printf("database: %d records in %s\n", n, benchCollection)
	s, err := sampleRecords(ctx, db.URL, benchCollection, 2000)
	if err != nil {
		return err
	}

	// Both servers run side by side, idle but for the one being measured:
	// each kind is measured in o.rounds alternating rounds, so that a
	// change in the machine's background load falls on both alike.
	rep := report{backend: backend, results: map[string]map[string]*benchkit.Result{}}
	servers := []string{"lexview", "baseline"}
	children := map[string]*benchkit.Child{}
	defer func() {
		for _, c := range children {
			c.Stop()
		}
	}()
	for _, server := range servers {
		c, err := benchkit.StartChild("serve-"+server, "-db", db.URL)
		if err != nil {
			return err
		}
		children[server] = c
		rep.results[server] = map[string]*benchkit.Result{}
	}
	for _, kind := range o.kinds {
		urls := map[string][]string{}
		for _, server := range servers {
			if urls[server], err = requestSet(ctx, kind, children[server].URL, benchQuery, s, n); err != nil {
				return fmt.Errorf("%s %s: %w", server, kind, err)
			}
		}
		for round := range o.Rounds {
			for _, server := range servers {
				res, err := o.Measure(children[server], backend, server, kind, urls[server], o.conns, round)
				if err != nil {
					return err
				}
				rep.results[server][kind] = rep.results[server][kind].Merge(res)
			}
		}
	}
	if o.extras {
		if err := o.extraPairs(ctx, backend, dir, children["lexview"], &rep); err != nil {
			return err
		}
	}
	rep.print(o)
	return nil
}

// extraPairs measures, each pair in alternating rounds: the scripted
// query against the default one at -c and with one connection, and the
// small collection's first page beside the large collection against the
// same in a database holding nothing else (served by a second Lexview).
func (o options) extraPairs(ctx context.Context, backend, dir string, lv *benchkit.Child, rep *report) error {
	small, _, err := benchkit.CreateDatabase(ctx, backend, dir, "benchquery", "small", "")
	if err != nil {
		return err
	}
	defer small.Cleanup()
	if _, err := prepare(ctx, small.URL, true, seedSpec{small: o.spec.small, shape: "post"}); err != nil {
		return err
	}
	alone, err := benchkit.StartChild("serve-lexview", "-db", small.URL)
	if err != nil {
		return err
	}
	defer alone.Stop()
	type run struct {
		name string
		c    *benchkit.Child
		url  string
	}
	base := lv.URL + "/xrpc/"
	pairs := []struct {
		a, b  run
		conns int
	}{
		{run{"default", lv, base + benchQuery + "?limit=20"}, run{"scripted", lv, base + scriptedQuery + "?limit=20"}, o.conns},
		{run{"default-c1", lv, base + benchQuery + "?limit=20"}, run{"scripted-c1", lv, base + scriptedQuery + "?limit=20"}, 1},
		{run{"small-beside", lv, base + smallQuery + "?limit=20"}, run{"small-alone", alone, alone.URL + "/xrpc/" + smallQuery + "?limit=20"}, o.conns},
	}
	for _, p := range pairs {
		for round := range o.Rounds {
			for _, r := range []run{p.a, p.b} {
				res, err := o.Measure(r.c, backend, "lexview", r.name, []string{r.url}, p.conns, round)
				if err != nil {
					return err
				}
				rep.results["lexview"][r.name] = rep.results["lexview"][r.name].Merge(res)
			}
		}
	}
	return nil
}
