package storagetest

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/lexview/lexview/storage"
)

// BenchWriteConcurrent measures ApplyBatch throughput with batches of
// 1,000 new records written by one and by two goroutines at once
// (sub-benchmarks writers=N), each on a fresh store from open: what the
// batch writer's bulk lanes get from a backend (on PostgreSQL, two writing
// connections; SQLite has one writer, so two goroutines take turns). It
// reports records/s.
func BenchWriteConcurrent(b *testing.B, open func(testing.TB) storage.Store) {
	const size = 1000
	for _, writers := range []int{1, 2} {
		b.Run("writers="+strconv.Itoa(writers), func(b *testing.B) {
			s := open(b)
			ctx := context.Background()
			var next atomic.Int64
			batch := func() storage.Batch {
				first := int(next.Add(size)) - size
				ops := make([]storage.RecordOp, size)
				for j := range ops {
					ops[j] = storage.RecordOp{Record: BenchRecord(BenchCollection, first+j)}
				}
				return storage.Batch{Ops: ops}
			}
			for b.Loop() {
				// Each iteration writes writers batches, one per goroutine.
				var wg sync.WaitGroup
				for range writers {
					bt := batch()
					wg.Go(func() {
						if err := s.ApplyBatch(ctx, bt); err != nil {
							b.Errorf("apply batch: %v", err)
						}
					})
				}
				wg.Wait()
			}
			b.ReportMetric(float64(next.Load())/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// BenchRecordVersions measures reading one repository's 2,000 stored
// records of a collection, 500 at a time, as backfill reconciliation does
// (Versions) and as it did before ListRecordVersions, through ListRecords
// (Records). It reports records/s.
func BenchRecordVersions(b *testing.B, open func(testing.TB) storage.Store) {
	const n, page = 2000, 500
	s := open(b)
	ctx := context.Background()
	did := BenchDID(0)
	ops := make([]storage.RecordOp, 0, n)
	for i := 0; len(ops) < n; i++ {
		if r := BenchRecord(BenchCollection, i); r.DID == did {
			ops = append(ops, storage.RecordOp{Record: r})
		}
	}
	if err := s.ApplyBatch(ctx, storage.Batch{Ops: ops}); err != nil {
		b.Fatalf("apply batch: %v", err)
	}
	b.Run("Versions", func(b *testing.B) {
		read := 0
		for b.Loop() {
			after := ""
			for {
				vs, err := s.ListRecordVersions(ctx, did, BenchCollection, after, page)
				if err != nil {
					b.Fatal(err)
				}
				read += len(vs)
				if len(vs) < page {
					break
				}
				after = vs[len(vs)-1].RKey
			}
		}
		b.ReportMetric(float64(read)/b.Elapsed().Seconds(), "records/s")
	})
	b.Run("Records", func(b *testing.B) {
		read := 0
		for b.Loop() {
			q := storage.ListQuery{DID: did, Collection: BenchCollection, Limit: page}
			for {
				p, err := s.ListRecords(ctx, q)
				if err != nil {
					b.Fatal(err)
				}
				read += len(p.Records)
				if p.Next == nil {
					break
				}
				q.After = p.Next
			}
		}
		b.ReportMetric(float64(read)/b.Elapsed().Seconds(), "records/s")
	})
}
