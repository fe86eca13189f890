package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// searchCorpus is the records FuzzSearch searches: plain lower-case words
// (which both databases tokenize alike), in two text-indexed fields.
var searchCorpus = [][2]string{
	{"quick brown fox", "jumps over the lazy dog"},
	{"lazy afternoon", "a brown dog sleeps"},
	{"fox hunting", "the quick hunt is over"},
	{"or and not near", "operators as words"},
	{"brownie recipe", "chocolate brown sugar"},
	{"dog days", "quick quick quick"},
	{"", "only a body here"},
	{"only a title", ""},
}

const fuzzCol = "app.test.fuzz"

// searchStores opens the stores FuzzSearch runs on: SQLite, and
// PostgreSQL when APPVIEW_TEST_POSTGRES_URL is set, each holding
// searchCorpus with text indexes on its two fields.
func searchStores(f *testing.F) []storage.Store {
	stores := []storage.Store{storagetest.SQLite(f)}
	if os.Getenv("APPVIEW_TEST_POSTGRES_URL") != "" {
		stores = append(stores, storagetest.Postgres(f))
	}
	ctx := context.Background()
	for _, s := range stores {
		var ops []storage.RecordOp
		for i, c := range searchCorpus {
			r := storagetest.Rec("did:plc:fuzz", fuzzCol, fmt.Sprintf("r%d", i), time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), map[string]any{"title": c[0], "body": c[1]})
			ops = append(ops, storage.RecordOp{Record: r})
		}
		if err := s.ApplyBatch(ctx, storage.Batch{Ops: ops}); err != nil {
			f.Fatal(err)
		}
		for _, p := range []string{"title", "body"} {
			if _, _, err := s.DeclareFieldIndex(ctx, storage.FieldIndexSpec{Collection: fuzzCol, Path: p, Kind: storage.FieldIndexText}); err != nil {
				f.Fatal(err)
			}
		}
		for {
			p, err := s.BuildFieldIndexes(ctx, 100)
			if err != nil {
				f.Fatal(err)
			}
			if !p.Pending {
				break
			}
		}
	}
	return stores
}

// FuzzSearch: no query makes a search fail but with a refusal wrapping
// storage.ErrInvalidQuery (never an SQL error from the database's own
// search syntax), and, for queries of printable ASCII, SQLite and
// PostgreSQL find the same records.
func FuzzSearch(f *testing.F) {
	for _, s := range []string{
		"fox", "quick fox", `"quick brown"`, "quick -dog", `-"lazy dog" brown`, "brown*", "bro*", "fox OR dog",
		"quick OR lazy -dog OR recipe", "or", "and", "NOT", "NEAR", "near/2", "fox NEAR dog", "OR", "AND OR",
		`"`, `""`, `"a" "b"`, "-", "--", "*", "a*", "a**b", "(fox)", "fox)", "{title}: fox", "title:fox", "^fox",
		"fox'", "'fox'", `\fox`, "f:*", "fox & dog", "fox | dog", "!fox", "fox <-> dog", "fox:A", "'", "''",
		"\x00", "\xff", "é", "e\u0301", "東京", "ǅ", "\U0001F600", "a\u200bb", "x\ty\nz",
	} {
		f.Add(s, 0)
		f.Add(s, 1)
	}
	stores := searchStores(f)
	fieldSets := [][]string{nil, {"title"}, {"body"}}
	f.Fuzz(func(t *testing.T, query string, fields int) {
		var results [][]string
		for _, s := range stores {
			q := storage.SearchQuery{Collection: fuzzCol, Query: query, Fields: fieldSets[uint(fields)%3], Limit: 100}
			page, err := s.SearchRecords(context.Background(), q)
			if err != nil {
				if !errors.Is(err, storage.ErrInvalidQuery) {
					t.Fatalf("%s: %q: %v", s.Dialect(), query, err)
				}
				results = append(results, []string{"refused"})
				continue
			}
			var keys []string
			for _, h := range page.Hits {
				keys = append(keys, h.Record.RKey)
			}
			slices.Sort(keys)
			results = append(results, keys)
		}
		if len(results) == 2 && printableASCII(query) && !reflect.DeepEqual(results[0], results[1]) {
			t.Fatalf("%q in %q: SQLite finds %q, PostgreSQL %q", query, fieldSets[uint(fields)%3], results[0], results[1])
		}
	})
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}
