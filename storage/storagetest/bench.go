package storagetest

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/base32"
	"encoding/binary"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/lexview/lexview/storage"
)

// Benchmarks shared by the storage backends. Each backend package wraps them
// in thin Benchmark functions (see storage/sqlite/bench_test.go), so every
// backend runs the same workload. Nothing here runs without -bench.

// BenchCollection is the collection the benchmarks write and list.
const BenchCollection = "app.bsky.feed.post"

// BenchDIDCount is the number of distinct repositories BenchRecord spreads
// records over.
const BenchDIDCount = 300

// ListFixtureRecords is the size of the collection the list benchmarks query.
const ListFixtureRecords = 1_000_000

// listFixtureBatch is the number of records per ApplyBatch while seeding.
const listFixtureBatch = 10_000

// deepRank is the newest-first rank of the record whose position the deep
// page benchmark continues after.
const deepRank = 900_000

// benchEpoch is the IndexedAt of record 0; record i is i milliseconds later,
// so every record has a distinct time and newest-first order is i descending.
var benchEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

var lowerBase32 = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

var benchDIDs = sync.OnceValue(func() []string {
	dids := make([]string, BenchDIDCount)
	for i := range dids {
		sum := sha256.Sum256([]byte("lexview-bench-did-" + strconv.Itoa(i)))
		dids[i] = "did:plc:" + lowerBase32.EncodeToString(sum[:])[:24]
	}
	return dids
})

// BenchDID returns the repository of BenchRecord(_, i).
func BenchDID(i int) string { return benchDIDs()[i%BenchDIDCount] }

// BenchRecordTime returns the IndexedAt of BenchRecord(_, i).
func BenchRecordTime(i int) time.Time { return benchEpoch.Add(time.Duration(i) * time.Millisecond) }

// benchTexts are post bodies of about 200 bytes; with the other fields a
// record value is about 300 bytes of JSON.
var benchTexts = [...]string{
	"Spent the morning rewiring the garden irrigation controller. Turns out the valve timings were off by an hour since the clocks changed, which explains the swampy tomatoes. Fixed now, hopefully for good.",
	"Reading a long thread about keyset pagination versus offsets and it is wild how many production systems still page with OFFSET over millions of rows. Indexes on the sort key are cheap; slow pages are not.",
	"Trail run this evening: eleven kilometres, a lot of mud, two very confused deer and one excellent sunset over the ridge. Legs are done but the head is clear. Same time next week if the rain holds off.",
	"Reminder that the community meetup moved to Thursday this month. We will have a short talk on federated moderation tools, then pizza, then whatever people feel like hacking on until the venue kicks us out.",
}

const tidAlphabet = "234567abcdefghijklmnopqrstuvwxyz"

// appendTID appends a 13-character atproto TID for micros and clock.
func appendTID(buf []byte, micros int64, clock uint64) []byte {
	v := uint64(micros)<<10 | clock&0x3ff
	var out [13]byte
	for k := 12; k >= 0; k-- {
		out[k] = tidAlphabet[v&31]
		v >>= 5
	}
	return append(buf, out[:]...)
}

// BenchRecord returns the i-th synthetic record of collection: a post-like
// record of about 300 bytes of JSON with a unique URI (its rkey is a TID of
// its time), repository BenchDID(i) and IndexedAt BenchRecordTime(i).
func BenchRecord(collection string, i int) storage.Record {
	at := BenchRecordTime(i)
	did := BenchDID(i)
	micros := at.UnixMicro()
	rkey := string(appendTID(make([]byte, 0, 13), micros, uint64(i)))

	var seed [8]byte
	binary.BigEndian.PutUint64(seed[:], uint64(i))
	sum := sha256.Sum256(seed[:])
	cid := "bafyrei" + lowerBase32.EncodeToString(sum[:])[:52]

	v := make([]byte, 0, 320)
	v = append(v, `{"$type":"`...)
	v = append(v, collection...)
	v = append(v, `","createdAt":"`...)
	v = at.AppendFormat(v, "2006-01-02T15:04:05.000Z")
	v = append(v, `","langs":["en"],"text":"`...)
	v = append(v, benchTexts[i%len(benchTexts)]...)
	v = append(v, " #"...)
	v = strconv.AppendInt(v, int64(i), 10)
	v = append(v, `"}`...)

	return storage.Record{
		URI:        "at://" + did + "/" + collection + "/" + rkey,
		DID:        did,
		Collection: collection,
		RKey:       rkey,
		CID:        cid,
		Rev:        string(appendTID(make([]byte, 0, 13), micros, uint64(i)+1)),
		Value:      v,
		IndexedAt:  at,
	}
}

// BenchWriteBatch measures ApplyBatch throughput at several batch sizes
// (sub-benchmarks WriteBatch/size=N), each on a fresh store from open. Every
// record is new (distinct URIs), so each operation is an insert. It reports
// records/s.
func BenchWriteBatch(b *testing.B, open func(testing.TB) storage.Store) {
	for _, size := range []int{1, 100, 1000} {
		b.Run("size="+strconv.Itoa(size), func(b *testing.B) {
			s := open(b)
			ctx := context.Background()
			ops := make([]storage.RecordOp, size)
			next := 0
			for b.Loop() {
				for j := range ops {
					ops[j] = storage.RecordOp{Record: BenchRecord(BenchCollection, next)}
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

// listFixture is a store holding ListFixtureRecords records of
// BenchCollection, shared by the list benchmarks of one backend.
type listFixture struct {
	once  sync.Once
	ready bool
	store storage.Store
	deep  storage.Position // position of the record at newest-first rank deepRank
	did   string
}

// listFixtures holds one *listFixture per backend name. A fixture lives as
// long as the benchmark that owns it (the b of BenchList or BenchQuery),
// which Go runs once per process, so the expensive seeding happens once per
// backend per benchmark and process.
var listFixtures sync.Map

// ownedTB is a sub-benchmark's TB whose Cleanup and TempDir belong to owner,
// so that what it opens outlives the sub-benchmark. Failures still go to the
// sub-benchmark, on its own goroutine.
type ownedTB struct {
	testing.TB
	owner testing.TB
}

func (o ownedTB) Cleanup(f func()) { o.owner.Cleanup(f) }
func (o ownedTB) TempDir() string  { return o.owner.TempDir() }

// BenchList measures the default list query over a collection of
// ListFixtureRecords records: the first page (FirstPage), a page continued
// from a cursor position deep in the ordering (DeepPage, rank ~900,000) and
// the first page of one repository (DIDPage), each of 20 records, through
// ListRecords and again through ScanRecords (ScanFirstPage, ScanDeepPage,
// ScanDIDPage, and the first two leaving flagged records out, as the
// validation mode hide reads them: ScanFirstPageValidOnly,
// ScanDeepPageValidOnly), and one record by URI (GetRecord, ScanRecord). The fixture
// is built on first use, once per backend name.
func BenchList(b *testing.B, backend string, open func(testing.TB) storage.Store) {
	get := fixtureGetter(b, backend, open)
	const limit = 20
	run := func(name string, q func(fx *listFixture) storage.ListQuery) {
		b.Run(name, func(b *testing.B) {
			fx := get(b)
			query := q(fx)
			ctx := context.Background()
			for b.Loop() {
				page, err := fx.store.ListRecords(ctx, query)
				if err != nil {
					b.Fatalf("list: %v", err)
				}
				if len(page.Records) != limit || page.Next == nil {
					b.Fatalf("list: got %d records, next %v", len(page.Records), page.Next)
				}
			}
		})
	}
	run("FirstPage", func(*listFixture) storage.ListQuery {
		return storage.ListQuery{Collection: BenchCollection, Limit: limit}
	})
	run("DeepPage", func(fx *listFixture) storage.ListQuery {
		after := fx.deep
		return storage.ListQuery{Collection: BenchCollection, Limit: limit, After: &after}
	})
	run("DIDPage", func(fx *listFixture) storage.ListQuery {
		return storage.ListQuery{Collection: BenchCollection, DID: fx.did, Limit: limit}
	})
	// The same pages read for serving (ScanRecords), each record's JSON
	// appended to one reused buffer as a handler would.
	scan := func(name string, q func(fx *listFixture) storage.ListQuery) {
		b.Run(name, func(b *testing.B) {
			fx := get(b)
			query := q(fx)
			ctx := context.Background()
			var buf []byte
			n := 0
			appendView := func(v storage.RecordView) error {
				buf = append(append(append(buf, v.URI...), v.CID...), v.Value...)
				n++
				return nil
			}
			for b.Loop() {
				buf, n = buf[:0], 0
				next, err := fx.store.ScanRecords(ctx, query, appendView)
				if err != nil || n != limit || next == nil {
					b.Fatalf("scan: %d records, next %v, %v", n, next, err)
				}
			}
		})
	}
	scan("ScanFirstPage", func(*listFixture) storage.ListQuery {
		return storage.ListQuery{Collection: BenchCollection, Limit: limit}
	})
	scan("ScanDeepPage", func(fx *listFixture) storage.ListQuery {
		after := fx.deep
		return storage.ListQuery{Collection: BenchCollection, Limit: limit, After: &after}
	})
	scan("ScanDIDPage", func(fx *listFixture) storage.ListQuery {
		return storage.ListQuery{Collection: BenchCollection, DID: fx.did, Limit: limit}
	})
	// The validation mode hide's pages: the same statements with
	// invalid IS NULL (the fixture holds no flagged record, so this is
	// the condition's own cost).
	scan("ScanFirstPageValidOnly", func(*listFixture) storage.ListQuery {
		return storage.ListQuery{Collection: BenchCollection, Limit: limit, ExcludeInvalid: true}
	})
	scan("ScanDeepPageValidOnly", func(fx *listFixture) storage.ListQuery {
		after := fx.deep
		return storage.ListQuery{Collection: BenchCollection, Limit: limit, After: &after, ExcludeInvalid: true}
	})
	// One record by URI, as GetRecord and as ScanRecord, from 1,000
	// spread over the collection.
	uris := make([]string, 1000)
	for i := range uris {
		uris[i] = BenchRecord(BenchCollection, i*(ListFixtureRecords/len(uris))).URI
	}
	b.Run("GetRecord", func(b *testing.B) {
		fx := get(b)
		ctx := context.Background()
		i := 0
		for b.Loop() {
			if _, err := fx.store.GetRecord(ctx, uris[i%len(uris)]); err != nil {
				b.Fatalf("get: %v", err)
			}
			i++
		}
	})
	b.Run("ScanRecord", func(b *testing.B) {
		fx := get(b)
		ctx := context.Background()
		var buf []byte
		appendView := func(v storage.RecordView) error {
			buf = append(append(buf[:0], v.CID...), v.Value...)
			return nil
		}
		i := 0
		for b.Loop() {
			if err := fx.store.ScanRecord(ctx, uris[i%len(uris)], appendView); err != nil {
				b.Fatalf("scan record: %v", err)
			}
			i++
		}
	})
}

// fixtureGetter returns what gives sub-benchmarks of owner the list
// fixture of backend, building it on first use. The fixture lives as long
// as owner.
func fixtureGetter(owner *testing.B, backend string, open func(testing.TB) storage.Store) func(b *testing.B) *listFixture {
	v, _ := listFixtures.LoadOrStore(backend, &listFixture{})
	fx := v.(*listFixture)
	owner.Cleanup(func() { listFixtures.CompareAndDelete(backend, fx) })
	return func(b *testing.B) *listFixture {
		b.Helper()
		fx.once.Do(func() { fx.build(ownedTB{TB: b, owner: owner}, open) })
		if !fx.ready {
			b.Skip("list fixture unavailable (see the first sub-benchmark)")
		}
		return fx
	}
}

// BenchQuery measures scripted record queries (QueryRecords and
// CountMatching) over the list fixture of BenchList: the first page of the
// collection, what db.query{} reads (FirstPage), a LIKE filter on the
// first page of the collection (FilterFirstPage, one record in four
// matches; the pattern has the text's case, since LIKE ignores case on
// SQLite but not on PostgreSQL), a nested filter (NestedFilterFirstPage), a filtered page of one
// repository (FilterDIDPage), a page of one repository sorted by a record
// field (FieldSortDIDPage) and a filtered count over one repository
// (CountDID). Pages hold 20 records.
func BenchQuery(b *testing.B, backend string, open func(testing.TB) storage.Store) {
	get := fixtureGetter(b, backend, open)
	const limit = 20
	like := func(field, pattern string) storage.Filter {
		return storage.Filter{Field: field, Op: "LIKE", Value: pattern}
	}
	run := func(name string, q func(fx *listFixture) storage.RecordQuery) {
		b.Run(name, func(b *testing.B) {
			fx := get(b)
			query := q(fx)
			ctx := context.Background()
			for b.Loop() {
				page, err := fx.store.QueryRecords(ctx, query)
				if err != nil {
					b.Fatalf("query: %v", err)
				}
				if len(page.Records) != limit || page.Cursor == "" {
					b.Fatalf("query: got %d records, cursor %q", len(page.Records), page.Cursor)
				}
			}
		})
	}
	run("FirstPage", func(*listFixture) storage.RecordQuery {
		return storage.RecordQuery{Collection: BenchCollection, Limit: limit}
	})
	run("FilterFirstPage", func(*listFixture) storage.RecordQuery {
		f := like("text", "Trail run%")
		return storage.RecordQuery{Collection: BenchCollection, Filter: &f, Limit: limit}
	})
	run("NestedFilterFirstPage", func(*listFixture) storage.RecordQuery {
		f := storage.Filter{Or: []storage.Filter{
			{Field: "langs[0]", Op: "=", Value: "fr"},
			{And: []storage.Filter{like("text", "%meetup%"), {Field: "createdAt", Op: ">=", Value: "2026-01-01"}}},
		}}
		return storage.RecordQuery{Collection: BenchCollection, Filter: &f, Limit: limit}
	})
	run("FilterDIDPage", func(fx *listFixture) storage.RecordQuery {
		f := like("text", "%meetup%")
		return storage.RecordQuery{Collection: BenchCollection, DID: fx.did, Filter: &f, Limit: limit}
	})
	run("FieldSortDIDPage", func(fx *listFixture) storage.RecordQuery {
		return storage.RecordQuery{Collection: BenchCollection, DID: fx.did, Sort: "createdAt", Limit: limit}
	})
	b.Run("CountDID", func(b *testing.B) {
		fx := get(b)
		f := like("text", "%#99%")
		query := storage.RecordQuery{Collection: BenchCollection, DID: fx.did, Filter: &f}
		ctx := context.Background()
		for b.Loop() {
			if n, err := fx.store.CountMatching(ctx, query); err != nil || n == 0 {
				b.Fatalf("count: %d %v", n, err)
			}
		}
	})
}

// build seeds the fixture. It may end the calling goroutine (Fatal, Skip);
// ready is set only when it completed.
func (fx *listFixture) build(t testing.TB, open func(testing.TB) storage.Store) {
	t.Helper()
	ctx := context.Background()
	start := time.Now()
	s := open(t)
	ops := make([]storage.RecordOp, 0, listFixtureBatch)
	for i := 0; i < ListFixtureRecords; i++ {
		ops = append(ops, storage.RecordOp{Record: BenchRecord(BenchCollection, i)})
		if len(ops) == cap(ops) || i == ListFixtureRecords-1 {
			if err := s.ApplyBatch(ctx, storage.Batch{Ops: ops}); err != nil {
				t.Fatalf("seed list fixture: %v", err)
			}
			ops = ops[:0]
		}
	}
	if s.Dialect() == "sqlite" {
		// Start from an empty write-ahead log: otherwise reads depend on
		// where the last automatic checkpoint fell while seeding, which
		// moves with the size of the rows (tens of µs a page).
		w, ok := s.(interface{ Writer() *sql.DB })
		if !ok {
			t.Fatalf("sqlite store %T exposes no Writer", s)
		}
		var busy, frames, done int
		if err := w.Writer().QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &frames, &done); err != nil || busy != 0 {
			t.Fatalf("checkpoint: busy %d, %v", busy, err)
		}
	}
	if s.Dialect() == "postgres" {
		w, ok := s.(interface{ Writer() *sql.DB })
		if !ok {
			t.Fatalf("postgres store %T exposes no Writer", s)
		}
		if _, err := w.Writer().ExecContext(ctx, "ANALYZE records"); err != nil {
			t.Fatalf("analyze: %v", err)
		}
	}
	if n, err := s.CountRecords(ctx, BenchCollection); err != nil || n != ListFixtureRecords {
		t.Fatalf("list fixture holds %d records (%v), want %d", n, err, ListFixtureRecords)
	}

	// Newest first, rank r is record ListFixtureRecords-1-r.
	deepIdx := ListFixtureRecords - 1 - deepRank
	deep := BenchRecord(BenchCollection, deepIdx)
	pos := storage.Position{Time: deep.IndexedAt, URI: deep.URI} // its TID key's time
	page, err := s.ListRecords(ctx, storage.ListQuery{Collection: BenchCollection, Limit: 1, After: &pos})
	if want := BenchRecord(BenchCollection, deepIdx-1).URI; err != nil || len(page.Records) != 1 || page.Records[0].URI != want {
		t.Fatalf("deep page check: %v, %d records, want %s first", err, len(page.Records), want)
	}
	fx.store, fx.deep, fx.did = s, pos, BenchDID(ListFixtureRecords-1)
	fx.ready = true
	t.Logf("%s list fixture: %d records in %v", s.Dialect(), ListFixtureRecords, time.Since(start).Round(time.Millisecond))
}
