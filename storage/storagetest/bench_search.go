package storagetest

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/storage"
)

// SearchFixtureRecords is the size of the collection the search
// benchmarks search.
const SearchFixtureRecords = 100_000

// searchVocabulary is the number of distinct words of the search fixture.
const searchVocabulary = 5000

// searchWord is the word of rank r (0 the most frequent) of the search
// fixture: two to four syllables, distinct for every rank.
func searchWord(r int) string {
	syllables := [...]string{"ka", "lo", "mi", "ne", "su", "ta", "vo", "ri", "pe", "du", "fa", "go", "hi", "ju", "be", "zo"}
	var b strings.Builder
	b.WriteString(syllables[r%16])
	for r /= 16; ; r /= 16 {
		b.WriteString(syllables[r%16])
		if r < 16 {
			break
		}
	}
	return b.String()
}

// searchText is the text of record i of the search fixture: 12 to 27
// words drawn from a Zipf distribution over the vocabulary (s = 1.1), as
// in natural language, deterministically.
func searchText(rng *rand.Rand, zipf *rand.Zipf) string {
	n := 12 + rng.IntN(16)
	words := make([]string, n)
	for i := range words {
		words[i] = searchWord(int(zipf.Uint64()))
	}
	return strings.Join(words, " ")
}

// BenchSearch measures a top-20 full-text search (SearchRecords) over a
// collection of SearchFixtureRecords posts with a text index on their
// text: a rare word (a few dozen records), a common word (thousands: every
// match is ranked to find the best 20), two words that must both match, a
// phrase, a prefix, and alternatives with an exclusion.
func BenchSearch(b *testing.B, open func(testing.TB) storage.Store) {
	ctx := context.Background()
	s := open(b)
	SeedSearchFixture(b, s)
	for _, c := range searchBenchQueries() {
		q := storage.SearchQuery{Collection: BenchCollection, Query: c.query, Limit: 20}
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				page, err := s.SearchRecords(ctx, q)
				if err != nil || len(page.Hits) != 20 {
					b.Fatalf("search %q: %d hits, %v", c.query, len(page.Hits), err)
				}
			}
		})
	}
}

// SeedSearchFixture fills s with the records BenchSearch searches and
// builds their text index.
func SeedSearchFixture(b testing.TB, s storage.Store) {
	ctx := context.Background()
	start := time.Now()
	rng := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(rng, 1.1, 1, searchVocabulary-1)
	if _, _, err := s.DeclareFieldIndex(ctx, storage.FieldIndexSpec{Collection: BenchCollection, Path: "text", Kind: storage.FieldIndexText}); err != nil {
		b.Fatal(err)
	}
	ops := make([]storage.RecordOp, 0, 1000)
	for i := range SearchFixtureRecords {
		r := BenchRecord(BenchCollection, i)
		r.Value = fmt.Appendf(nil, `{"$type":%q,"createdAt":%q,"text":%q}`, BenchCollection,
			r.IndexedAt.Format("2006-01-02T15:04:05.000Z"), searchText(rng, zipf))
		ops = append(ops, storage.RecordOp{Record: r})
		if len(ops) == cap(ops) || i == SearchFixtureRecords-1 {
			if err := s.ApplyBatch(ctx, storage.Batch{Ops: ops}); err != nil {
				b.Fatalf("seed search fixture: %v", err)
			}
			ops = ops[:0]
		}
	}
	for {
		p, err := s.BuildFieldIndexes(ctx, 10000)
		if err != nil {
			b.Fatal(err)
		}
		if !p.Pending {
			break
		}
	}
	if s.Dialect() == "postgres" {
		// What autovacuum does to a table that has been written: the
		// statistics, and the GIN index's pending entries merged in.
		w, ok := s.(interface{ Writer() *sql.DB })
		if !ok {
			b.Fatalf("postgres store %T exposes no Writer", s)
		}
		if _, err := w.Writer().ExecContext(ctx, "VACUUM ANALYZE records, search_docs"); err != nil {
			b.Fatalf("vacuum: %v", err)
		}
	}
	b.Logf("%s search fixture: %d records in %v", s.Dialect(), SearchFixtureRecords, time.Since(start).Round(time.Millisecond))
}

// searchBenchQueries are the queries of BenchSearch.
func searchBenchQueries() []struct{ name, query string } {
	return []struct{ name, query string }{
		{"RareWord", searchWord(3000)},
		{"CommonWord", searchWord(10)},
		{"TwoWords", searchWord(10) + " " + searchWord(40)},
		{"Phrase", `"` + searchWord(0) + " " + searchWord(1) + `"`},
		{"Prefix", searchWord(2) + "*"},
		{"OrExclude", searchWord(50) + " OR " + searchWord(60) + " -" + searchWord(0)},
	}
}
