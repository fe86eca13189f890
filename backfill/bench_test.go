package backfill_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/backfill"
	"github.com/lexview/lexview/internal/backfilltest"
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
