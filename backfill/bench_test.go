package backfill_test

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/backfill"
	"github.com/lexview/lexview/internal/backfilltest"
	"github.com/lexview/lexview/internal/simnet"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// BenchmarkBackfill fetches 50,000 records (about 400 bytes each) from
// four local PDS stand-ins, 25 repositories each, with the default
// concurrency and writer settings, and reports records written per
// second: by listRecords in pages of 100 ("list"), and by verified getRepo
// CAR exports ("car"; each repository also holds 100 records of another
// collection, which the export carries and the backfill skips).
func BenchmarkBackfill(b *testing.B) {
	for _, method := range []string{backfill.FetchListRecords, backfill.FetchCAR} {
		b.Run(map[string]string{backfill.FetchListRecords: "list", backfill.FetchCAR: "car"}[method], func(b *testing.B) {
			benchmarkBackfill(b, method)
		})
	}
}

func benchmarkBackfill(b *testing.B, method string) {
	const (
		hosts        = 4
		reposPerHost = 25
		perRepo      = 500
		total        = hosts * reposPerHost * perRepo
	)
	for _, be := range storagetest.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			p := backfilltest.NewPLC(b)
			var dids []string
			for h := range hosts {
				host := backfilltest.NewPDS(b)
				host.SetFiller(" " + strings.Repeat("lorem ipsum ", 28))
				for r := range reposPerHost {
					d := fmt.Sprintf("did:plc:bench%02d%04d", h, r)
					key, pub := signingKey(b)
					p.AddKey(d, host.URL(), pub)
					host.AddRepo(d, postNSID, perRepo, "3kaaaaaaaaaa2")
					if method == backfill.FetchCAR {
						host.ServeRepo(d, key)
						host.AddRepo(d, likeNSID, 100, "3kaaaaaaaaaa2")
					}
					dids = append(dids, d)
				}
			}
			// run backfills every record into a fresh store and returns how
			// long the job took.
			run := func() time.Duration {
				h := newHarness(b, be.Open(b), p, "")
				h.tune = func(c *backfill.Options) { c.PageSize, c.DiscoveryPageSize = 100, 1000 }
				h.setting(backfill.SettingFetch, method)
				h.patience = 5 * time.Minute
				mgr := h.start()
				defer h.stop()
				start := time.Now()
				job, err := mgr.Create(b.Context(), backfill.Request{Collection: postNSID, Accounts: dids})
				if err != nil {
					b.Fatal(err)
				}
				done := h.waitJob(job.ID, "completion", storage.BackfillJob.Finished)
				took := time.Since(start)
				if done.Status != storage.BackfillCompleted || num(done.TotalRecords) != total || h.count(postNSID) != total {
					b.Fatalf("job: %s, %d indexed", describe(done), h.count(postNSID))
				}
				return took
			}
			run() // warm-up: the stand-ins render their pages once, outside the measurement
			var elapsed time.Duration
			for b.Loop() {
				elapsed += run()
			}
			b.ReportMetric(float64(total*b.N)/elapsed.Seconds(), "records/s")
		})
	}
}

var (
	simnetSeed  = flag.Uint64("simnet.seed", 1, "BenchmarkBackfillNetwork: the simulated network's seed")
	simnetRepos = flag.Int("simnet.repos", 30000, "BenchmarkBackfillNetwork: accounts (30,000 is the full network)")
	simnetHosts = flag.Int("simnet.hosts", 300, "BenchmarkBackfillNetwork: PDS hosts (300 is the full network)")
)

// BenchmarkBackfillNetwork backfills the simulated network (simnet.Full:
// 300 hosts, 30,000 accounts, RTT 20-300 ms, rate-limited and failing
// hosts; smaller with -simnet.repos and -simnet.hosts) through its relay
// with the default settings, and reports records/s, the latency-bound
// limit for the default concurrency, their ratio and the process's peak
// RSS (the network's stand-ins run in the same process).
//
//	go test -run XXX -bench BackfillNetwork/sqlite -benchtime 1x -timeout 2h ./backfill/
func BenchmarkBackfillNetwork(b *testing.B) {
	spec := simnet.Full(*simnetSeed)
	spec.Repos, spec.Hosts = *simnetRepos, *simnetHosts
	for _, be := range storagetest.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			n := startNetwork(b, spec)
			bound, err := n.Plan.Bound(backfill.DefaultConcurrency, backfill.DefaultPerHostConcurrency)
			if err != nil {
				b.Fatal(err)
			}
			b.Logf("%s\nlatency-bound limit: %s", n.Plan.Summary(), bound)
			var elapsed time.Duration
			var records int64
			for b.Loop() {
				h := newHarness(b, be.Open(b), nil, n.RelayURL())
				h.dir = cachedDirectory(n)
				h.tune = func(c *backfill.Options) {
					c.PageSize, c.DiscoveryPageSize = 100, 1000
					c.RequestTimeout, c.RetryBackoff, c.MaxRateLimitWait = 30*time.Second, time.Second, time.Minute
				}
				h.patience = 2 * time.Hour
				mgr := h.start()
				start := time.Now()
				job, err := mgr.Create(b.Context(), backfill.Request{Collection: postNSID})
				if err != nil {
					b.Fatal(err)
				}
				done := h.waitJob(job.ID, "completion", storage.BackfillJob.Finished)
				elapsed += time.Since(start)
				records += num(done.TotalRecords)
				b.Logf("job: %s in %s; network: %+v", describe(done), time.Since(start).Round(time.Millisecond), n.Stats())
				h.stop()
			}
			rate := float64(records) / elapsed.Seconds()
			b.ReportMetric(rate, "records/s")
			b.ReportMetric(bound.RecordsPerSecond, "bound-records/s")
			b.ReportMetric(rate/bound.RecordsPerSecond, "of-bound")
			if rss := peakRSS(); rss > 0 {
				b.ReportMetric(float64(rss)/(1<<20), "peak-RSS-MiB")
			}
		})
	}
}

// peakRSS is the process's peak resident set (VmHWM), in bytes, or 0
// where /proc does not say.
func peakRSS() int64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
