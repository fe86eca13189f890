// Command benchquery compares the throughput and latency of Lexview's
// default list query with a bare net/http + database/sql handler running the
// same SQL over the same SQLite file. Run it through scripts/bench-query.
//
// It seeds a fresh SQLite database with -records records of one collection,
// registers a record lexicon and a query lexicon targeting that collection,
// then, for each server in turn, starts it in a child process (this binary
// re-executed as `serve-lexview` or `serve-bare`), warms it up and drives
// GET /xrpc/<query>?limit=20 over -c keep-alive connections for -duration.
// It prints requests/s and latency percentiles for both, the Lexview/bare
// throughput ratio and whether the targets are met. It always exits 0 once
// it has measured: it is a report, not a test.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"time"
)

// The benchmark's collection and query method.
const (
	benchCollection = "app.bench.feed.post"
	benchQuery      = "app.bench.feed.listPosts"
	// scriptedQuery serves the same page through a Lua script that calls
	// db.query once and returns its result.
	scriptedQuery = "app.bench.feed.listPostsScripted"
	clientKey     = "hvc_bench"
	pageLimit     = 20
)

// Targets the report checks.
const (
	targetRatio = 0.80
	targetP99   = 5 * time.Millisecond
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "serve-lexview":
			os.Exit(serveChild(os.Args[2:], newLexviewHandler))
		case "serve-bare":
			os.Exit(serveChild(os.Args[2:], newBareHandler))
		}
	}
	log.SetFlags(0)
	log.SetPrefix("benchquery: ")

	records := flag.Int("records", 1_000_000, "records to seed into the collection")
	duration := flag.Duration("duration", 20*time.Second, "measured load per server")
	conns := flag.Int("c", 32, "concurrent keep-alive connections")
	warmup := flag.Duration("warmup", 2*time.Second, "unmeasured load before each measurement")
	dbPath := flag.String("db", "", "SQLite file to use; an existing file is reused as is, ignoring -records and -shape (default: a fresh file in a temporary directory, removed afterwards)")
	shape := flag.String("shape", "post", "record shape when seeding: post (no nested refs) or reply (nested {uri,cid} refs, like replies, likes and reposts)")
	profDir := flag.String("cpuprofile-dir", "", "write a CPU profile of each server's measured window (lexview.pprof, bare.pprof) here")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: scripts/bench-query [flags]\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *records < pageLimit+1 || *conns < 1 || *duration <= 0 || (*shape != "post" && *shape != "reply") {
		log.Fatal("need -records > 20, -c >= 1, a positive -duration and -shape post or reply")
	}
	if err := run(*records, *duration, *conns, *warmup, *dbPath, *shape, *profDir); err != nil {
		log.Fatal(err) // after run's deferred clean-up
	}
}

// run seeds, measures both servers and prints the report.
func run(records int, duration time.Duration, conns int, warmup time.Duration, dbPath, shape, profDir string) error {
	if dbPath == "" {
		dir, err := os.MkdirTemp("", "lexview-benchquery-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		dbPath = filepath.Join(dir, "bench.db")
	}
	if profDir != "" {
		if err := os.MkdirAll(profDir, 0o755); err != nil {
			return err
		}
	}

	fmt.Printf("benchquery: %v per server (+%v warm-up), %d connections, GOMAXPROCS=%d, NumCPU=%d\n",
		duration, warmup, conns, runtime.GOMAXPROCS(0), runtime.NumCPU())
	ctx := context.Background()
	n, err := prepare(ctx, dbPath, records, shape)
	if err != nil {
		return err
	}
	fmt.Printf("database: %s (%d records in %s)\n\n", dbPath, n, benchCollection)

	servers := []struct{ name, sub, query string }{
		{"lexview", "serve-lexview", benchQuery},
		{"scripted", "serve-lexview", scriptedQuery},
		{"bare", "serve-bare", benchQuery},
	}
	results := map[string]*result{}
	for _, s := range servers {
		prof := ""
		if profDir != "" {
			prof = filepath.Join(profDir, s.name+".pprof")
		}
		res, err := measure(s.name, s.sub, s.query, dbPath, conns, warmup, duration, prof)
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		results[s.name] = res
	}

	fmt.Println()
	fmt.Printf("%-8s %10s %9s %9s %9s %9s %9s %8s %10s\n", "server", "req/s", "p50", "p90", "p99", "p99.9", "max", "errors", "bytes/resp")
	for _, s := range servers {
		r := results[s.name]
		fmt.Printf("%-8s %10.0f %9s %9s %9s %9s %9s %8d %10.0f\n", s.name, r.rps(),
			ms(r.pct(50)), ms(r.pct(90)), ms(r.pct(99)), ms(r.pct(99.9)), ms(r.pct(100)), r.errors, r.bytesPerResp())
	}
	lv, bare := results["lexview"], results["bare"]
	ratio := lv.rps() / bare.rps()
	fmt.Println()
	fmt.Printf("lexview/bare throughput: %.3f  (target >= %.2f: %s)\n", ratio, targetRatio, verdict(ratio >= targetRatio))
	fmt.Printf("lexview p99 latency:     %s  (target < %s: %s)\n", ms(lv.pct(99)), ms(targetP99), verdict(lv.pct(99) < targetP99))
	sc := results["scripted"]
	fmt.Printf("scripted/default throughput: %.3f  (target >= 0.50: %s)\n", sc.rps()/lv.rps(), verdict(sc.rps()/lv.rps() >= 0.5))
	added := sc.pct(50) - lv.pct(50)
	fmt.Printf("script p50 overhead:     %s  (target < 0.200ms: %s)\n", ms(added), verdict(added < 200*time.Microsecond))
	if lv.errors > 0 || bare.errors > 0 {
		fmt.Printf("note: errors during measurement (lexview %d, bare %d); first: %s\n", lv.errors, bare.errors, firstErr(lv, bare))
	}
	if profDir != "" {
		fmt.Printf("CPU profiles: go tool pprof -top %s\n", filepath.Join(profDir, "lexview.pprof"))
	}
	return nil
}

// measure runs one server in a child process and loads it.
func measure(name, sub, query, dbPath string, conns int, warmup, duration time.Duration, profile string) (*result, error) {
	args := []string{"-db", dbPath}
	c, err := startChild(sub, args...)
	if err != nil {
		return nil, err
	}
	defer c.stop()
	url := c.url + "/xrpc/" + query + "?limit=" + fmt.Sprint(pageLimit)
	fmt.Printf("%-8s pid %d serving %s\n", name, c.cmd.Process.Pid, url)

	ld := newLoader(url, conns)
	defer ld.close()
	if warmup > 0 {
		w := ld.run(warmup)
		fmt.Printf("%-8s warm-up: %d requests, %.0f req/s, %d errors\n", name, len(w.lat), w.rps(), w.errors)
	}
	if profile != "" {
		if err := c.command("start-profile " + profile); err != nil {
			return nil, err
		}
	}
	res := ld.run(duration)
	if profile != "" {
		if err := c.command("stop-profile"); err != nil {
			return nil, err
		}
	}
	fmt.Printf("%-8s measured: %d requests in %v\n", name, len(res.lat), res.elapsed.Round(time.Millisecond))
	return res, nil
}

func verdict(ok bool) string {
	if ok {
		return "MET"
	}
	return "NOT MET"
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3fms", float64(d)/float64(time.Millisecond)) }

func firstErr(rs ...*result) string {
	for _, r := range rs {
		if r.firstErr != "" {
			return r.firstErr
		}
	}
	return ""
}
