package storagetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/lexview/lexview/storage"
)

// BenchWriteLinks measures writing like records, each with a strongRef
// subject (one link), in batches of 1,000, against the same records with
// no link (a plain string where the subject's URI was), for the link
// index's cost on the writer. The subjects are either new posts (each
// liked once: every link takes a new target, at the end of the link
// index) or drawn evenly from 20,000 earlier posts (an old target's page
// for every link: the index's worst case).
func BenchWriteLinks(b *testing.B, open func(testing.TB) storage.Store) {
	for _, c := range []struct {
		name    string
		subject func(rng *rand.Rand, i int) string
	}{
		{"links=none", func(_ *rand.Rand, i int) string { return fmt.Sprintf("post %d", i) }},
		{"links=new-targets", func(_ *rand.Rand, i int) string {
			return fmt.Sprintf("at://%s/app.bench.post/p%d", BenchDID(i), i)
		}},
		{"links=old-targets", func(rng *rand.Rand, _ int) string {
			n := rng.IntN(20000)
			return fmt.Sprintf("at://%s/app.bench.post/p%d", BenchDID(n), n)
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			s := open(b)
			ctx := context.Background()
			rng := rand.New(rand.NewPCG(1, 2))
			ops := make([]storage.RecordOp, 1000)
			next := 0
			for b.Loop() {
				for j := range ops {
					r := BenchRecord("app.bench.like", next)
					r.Value = fmt.Appendf(nil, `{"$type":"app.bench.like","createdAt":%q,"subject":{"uri":%q,"cid":"bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm"}}`,
						BenchRecordTime(next).Format("2006-01-02T15:04:05.000Z"), c.subject(rng, next))
					ops[j] = storage.RecordOp{Record: r}
					next++
				}
				if err := s.ApplyBatch(ctx, storage.Batch{Ops: ops}); err != nil {
					b.Fatalf("apply batch: %v", err)
				}
			}
			b.ReportMetric(float64(next)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
