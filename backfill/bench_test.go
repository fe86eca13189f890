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
// four local PDS stand-ins, 25 repositories each, in pages of 100, with
// the default concurrency and writer settings, and reports records written
// per second.
func BenchmarkBackfill(b *testing.B) {
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
					p.Add(d, host.URL())
					host.AddRepo(d, postNSID, perRepo, "3kaaaaaaaaaa2")
					dids = append(dids, d)
				}
			}
			// run backfills every record into a fresh store and returns how
			// long the job took.
			run := func() time.Duration {
				h := newHarness(b, be.Open(b), p, "")
				h.tune = func(c *backfill.Config) { c.PageSize, c.DiscoveryPageSize = 100, 1000 }
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
