package storagetest

import (
	"context"
	"database/sql"
	"strconv"
	"testing"
	"time"

	"github.com/lexview/lexview/storage"
)

// FieldIndexFixtureRecords is the size of the like-shaped collection the
// field index benchmarks query.
const FieldIndexFixtureRecords = 120_000

// fieldBenchCollection is the collection of the field index benchmarks.
const fieldBenchCollection = "app.bench.like"

// fieldBenchPosts is the number of posts the benchmark's likes point at;
// every seventh like is of post 0 (popular), the others spread evenly
// (about 20 likes a post).
const fieldBenchPosts = 5000

func fieldBenchSubject(post int) string {
	return "at://did:plc:benchposts/app.bsky.feed.post/" + strconv.Itoa(post)
}

// fieldBenchRecord returns the i-th like: a strongRef subject and a
// createdAt, created i milliseconds after the epoch.
func fieldBenchRecord(i int) storage.Record {
	post := i % fieldBenchPosts
	if i%7 == 0 {
		post = 0
	}
	at := BenchRecordTime(i)
	did := BenchDID(i)
	rkey := string(appendTID(make([]byte, 0, 13), at.UnixMicro(), uint64(i)))
	v := `{"$type":"` + fieldBenchCollection + `","createdAt":"` + at.Format("2006-01-02T15:04:05.000Z") +
		`","subject":{"cid":"bafyreibench` + strconv.Itoa(post) + `","uri":"` + fieldBenchSubject(post) + `"}}`
	return storage.Record{
		URI: "at://" + did + "/" + fieldBenchCollection + "/" + rkey, DID: did, Collection: fieldBenchCollection,
		RKey: rkey, CID: "bafyreilike" + strconv.Itoa(i), Value: []byte(v), IndexedAt: at,
	}
}

// BenchFieldIndex measures queries that value indexes serve, over
// FieldIndexFixtureRecords likes with value indexes on subject.uri and
// createdAt (built before the timings):
//   - EqualityPopular, EqualityRare, EqualityNone: the first page (20) of
//     the likes of a post with about 17,000, about 20 and no likes;
//   - CountPopular: the count of the popular post's likes;
//   - KeysetDeepPage: a page sorted by createdAt after a cursor 100,000
//     records deep;
//   - ScanEqualityNone, ScanCount: the same questions on subject.cid,
//     which has no index, for comparison (a scan of the collection);
//   - WriteBatch100: batches of 100 new likes, into the indexed
//     collection and into one without indexes (records/s).
func BenchFieldIndex(b *testing.B, open func(testing.TB) storage.Store) {
	ctx := context.Background()
	start := time.Now()
	s := open(b)
	ops := make([]storage.RecordOp, 0, 5000)
	for i := range FieldIndexFixtureRecords {
		ops = append(ops, storage.RecordOp{Record: fieldBenchRecord(i)})
		if len(ops) == cap(ops) || i == FieldIndexFixtureRecords-1 {
			if err := s.ApplyBatch(ctx, storage.Batch{Ops: ops}); err != nil {
				b.Fatalf("seed: %v", err)
			}
			ops = ops[:0]
		}
	}
	for _, path := range []string{"subject.uri", "createdAt"} {
		if _, _, err := s.DeclareFieldIndex(ctx, storage.FieldIndexSpec{Collection: fieldBenchCollection, Path: path, Kind: storage.FieldIndexValue}); err != nil {
			b.Fatal(err)
		}
	}
	seeded := time.Now()
	for {
		p, err := s.BuildFieldIndexes(ctx, 5000)
		if err != nil {
			b.Fatal(err)
		}
		if !p.Pending {
			break
		}
	}
	b.Logf("%s: 2 value indexes over %d records built in %v", s.Dialect(), FieldIndexFixtureRecords, time.Since(seeded).Round(time.Millisecond))
	if s.Dialect() == "postgres" {
		// What autovacuum does to a table that has been written: the
		// statistics, and the visibility map an index-only count needs.
		w, ok := s.(interface{ Writer() *sql.DB })
		if !ok {
			b.Fatalf("postgres store %T exposes no Writer", s)
		}
		if _, err := w.Writer().ExecContext(ctx, "VACUUM ANALYZE records, field_index_values"); err != nil {
			b.Fatalf("vacuum: %v", err)
		}
	}
	const limit = 20
	sorted := storage.RecordQuery{Collection: fieldBenchCollection, Sort: "createdAt", Limit: storage.MaxQueryLimit}
	for range 100_000 / storage.MaxQueryLimit {
		page, err := s.QueryRecords(ctx, sorted)
		if err != nil || page.Cursor == "" {
			b.Fatalf("paging to the deep cursor: %v", err)
		}
		sorted.Cursor = page.Cursor
	}
	sorted.Limit = limit
	b.Logf("%s field index fixture: %d records in %v", s.Dialect(), FieldIndexFixtureRecords, time.Since(start).Round(time.Millisecond))

	eq := func(field string, v any) *storage.Filter { return &storage.Filter{Field: field, Op: "=", Value: v} }
	page := func(name string, q storage.RecordQuery, want int) {
		q.Collection = fieldBenchCollection
		if q.Limit == 0 {
			q.Limit = limit
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				page, err := s.QueryRecords(ctx, q)
				if err != nil || len(page.Records) != want {
					b.Fatalf("%d records, %v", len(page.Records), err)
				}
			}
		})
	}
	count := func(name string, f *storage.Filter, want int64) {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				n, err := s.CountMatching(ctx, storage.RecordQuery{Collection: fieldBenchCollection, Filter: f})
				if err != nil || n != want {
					b.Fatalf("count %d, %v", n, err)
				}
			}
		})
	}
	popular := int64(0)
	for i := range FieldIndexFixtureRecords {
		if i%7 == 0 || i%fieldBenchPosts == 0 {
			popular++
		}
	}
	page("EqualityPopular", storage.RecordQuery{Filter: eq("subject.uri", fieldBenchSubject(0))}, limit)
	page("EqualityRare", storage.RecordQuery{Filter: eq("subject.uri", fieldBenchSubject(1)), Limit: 5}, 5)
	page("EqualityNone", storage.RecordQuery{Filter: eq("subject.uri", fieldBenchSubject(fieldBenchPosts+1))}, 0)
	count("CountPopular", eq("subject.uri", fieldBenchSubject(0)), popular)
	page("KeysetDeepPage", sorted, limit)
	page("ScanEqualityNone", storage.RecordQuery{Filter: eq("subject.cid", "bafyreinone")}, 0)
	count("ScanCount", eq("subject.cid", "bafyreibench0"), popular)
	// Writes of 100 new likes a batch, into the indexed collection and
	// into one without indexes.
	next := FieldIndexFixtureRecords
	for _, indexed := range []bool{true, false} {
		name := "WriteBatch100/indexes=2"
		if !indexed {
			name = "WriteBatch100/indexes=0"
		}
		b.Run(name, func(b *testing.B) {
			ops := make([]storage.RecordOp, 100)
			for b.Loop() {
				for j := range ops {
					r := fieldBenchRecord(next)
					if !indexed {
						r.Collection = "app.bench.unindexed"
						r.URI = "at://" + r.DID + "/" + r.Collection + "/" + r.RKey
					}
					ops[j] = storage.RecordOp{Record: r}
					next++
				}
				if err := s.ApplyBatch(ctx, storage.Batch{Ops: ops}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*len(ops))/b.Elapsed().Seconds(), "records/s")
		})
	}
}
