package storagetest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/lexview/lexview/storage"
)

// RunSearch runs the full-text search suite (SearchStore over text field
// indexes) against stores made by open: the query syntax, ranking, field
// restriction, pages, every write path, the build beside writers, and
// dropping an index.
func RunSearch(t *testing.T, open func(t testing.TB) storage.Store) {
	runCases(t, open, []storeCase{
		{"Syntax", testSearchSyntax},
		{"Ranking", testSearchRanking},
		{"CaseAndAccents", testSearchFolding},
		{"Fields", testSearchFields},
		{"PagesAndDID", testSearchPages},
		{"Refusals", testSearchRefusals},
		{"WritesKeepDocuments", testSearchWrites},
		{"BuildWhileWriting", testSearchBuildWhileWriting},
		{"DropAndDeclareAgain", testSearchDrop},
		{"Plans", testSearchPlans},
		{"LongText", testSearchLongText},
	})
}

const searchCol = "app.test.searchable"

// declareText declares text indexes of collection on paths and builds
// them until they are ready.
func declareText(t *testing.T, s storage.Store, collection string, paths ...string) []storage.FieldIndex {
	t.Helper()
	var out []storage.FieldIndex
	for _, p := range paths {
		f, _, err := s.DeclareFieldIndex(context.Background(), storage.FieldIndexSpec{Collection: collection, Path: p, Kind: storage.FieldIndexText})
		if err != nil {
			t.Fatalf("declare text index %s: %v", p, err)
		}
		out = append(out, f)
	}
	buildAll(t, s, 7)
	for _, f := range out {
		if got := getIndexT(t, s, f.ID); got.State != storage.FieldIndexReady {
			t.Fatalf("text index %s after the build: %+v", f.Path, got)
		}
	}
	return out
}

// post is a record of searchCol by did with rkey and text.
func post(did, rkey, text string) storage.Record {
	return Rec(did, searchCol, rkey, base, map[string]any{"text": text})
}

// searchRKeys runs q through every page and returns the record keys
// found, best first.
func searchRKeys(t *testing.T, s storage.Store, q storage.SearchQuery) []string {
	t.Helper()
	var keys []string
	for range 1000 {
		page, err := s.SearchRecords(context.Background(), q)
		if err != nil {
			t.Fatalf("search %+v: %v", q, err)
		}
		for _, h := range page.Hits {
			keys = append(keys, h.Record.RKey)
		}
		if page.Cursor == "" {
			return keys
		}
		q.Cursor = page.Cursor
	}
	t.Fatal("search pages never end")
	return nil
}

// searchSet is searchRKeys sorted, for queries whose order is not tested.
func searchSet(t *testing.T, s storage.Store, collection, query string, fields ...string) []string {
	t.Helper()
	keys := searchRKeys(t, s, storage.SearchQuery{Collection: collection, Query: query, Fields: fields})
	slices.Sort(keys)
	return keys
}

func testSearchSyntax(t *testing.T, s storage.Store) {
	apply(t, s,
		put(post("did:plc:a", "p1", "the quick brown fox jumps")),
		put(post("did:plc:a", "p2", "a quick red fox")),
		put(post("did:plc:a", "p3", "brown bears and foxes")),
		put(post("did:plc:a", "p4", "quick-witted brown dog")),
		put(post("did:plc:a", "p5", "nothing in common, e-mail me")),
	)
	declareText(t, s, searchCol, "text")
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"fox", []string{"p1", "p2"}},
		{"quick fox", []string{"p1", "p2"}},
		{"QUICK Fox", []string{"p1", "p2"}},
		{`"quick brown"`, []string{"p1"}},
		{`"brown quick"`, nil},
		{"quick -red", []string{"p1", "p4"}},
		{`quick -"red fox"`, []string{"p1", "p4"}},
		{"fox*", []string{"p1", "p2", "p3"}},
		{"-jumps fox*", []string{"p2", "p3"}},
		{"red OR bears", []string{"p2", "p3"}},
		{"quick fox OR bears", []string{"p1", "p2", "p3"}},
		{"quick -fox OR dog", []string{"p4"}},
		{`"quick witted"`, []string{"p4"}},
		{"quick-witted", []string{"p4"}},
		{"e-mail", []string{"p5"}},
		{"email", nil},
		{"fox (quick)", []string{"p1", "p2"}},
		{"fox !!! ...", []string{"p1", "p2"}},
		{"or", nil},
		{"unknownword", nil},
	} {
		if got := searchSet(t, s, searchCol, c.query); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: got %q, want %q", c.query, got, c.want)
		}
	}
}

func testSearchRanking(t *testing.T, s storage.Store) {
	ops := []storage.RecordOp{
		put(post("did:plc:a", "all", "apple banana cherry")),
		put(post("did:plc:a", "two", "apple banana and more words")),
		put(post("did:plc:a", "one", "apple and other words here")),
	}
	// "common" is in most records, "rare" in one.
	for i := range 20 {
		ops = append(ops, put(post("did:plc:b", fmt.Sprintf("c%02d", i), "common filler text")))
	}
	ops = append(ops, put(post("did:plc:b", "rare", "rare filler text")))
	apply(t, s, ops...)
	declareText(t, s, searchCol, "text")
	got := searchRKeys(t, s, storage.SearchQuery{Collection: searchCol, Query: "apple OR banana OR cherry"})
	if want := []string{"all", "two", "one"}; !reflect.DeepEqual(got, want) {
		t.Errorf("more words matched rank first: got %q, want %q", got, want)
	}
	page, err := s.SearchRecords(context.Background(), storage.SearchQuery{Collection: searchCol, Query: "apple OR banana", Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range page.Hits {
		if h.Rank <= 0 || i > 0 && h.Rank > page.Hits[i-1].Rank {
			t.Errorf("ranks %v", page.Hits)
		}
	}
	if s.Dialect() == "postgres" {
		return // cover density does not weigh rarity (docs/queries.md)
	}
	got = searchRKeys(t, s, storage.SearchQuery{Collection: searchCol, Query: "common OR rare", Limit: 5})
	if len(got) != 21 || got[0] != "rare" {
		t.Errorf("a rarer word ranks first: got %q", got)
	}
}

func testSearchFolding(t *testing.T, s storage.Store) {
	apply(t, s, put(post("did:plc:a", "p1", "Crème brûlée à LA Façon")))
	declareText(t, s, searchCol, "text")
	for _, q := range []string{"crème brûlée", "LA façon", "Crème"} {
		if got := searchSet(t, s, searchCol, q); !reflect.DeepEqual(got, []string{"p1"}) {
			t.Errorf("%q: %q", q, got)
		}
	}
	if s.Dialect() == "postgres" {
		// PostgreSQL folds the case of the letters its database's
		// LC_CTYPE knows (only ASCII under the C locale), and the
		// "simple" configuration keeps diacritics (docs/queries.md).
		if got := searchSet(t, s, searchCol, "creme"); got != nil {
			t.Errorf("simple removed diacritics: %q", got)
		}
		return
	}
	// SQLite's unicode61 tokenizer folds the case of every letter and
	// removes diacritics.
	for _, q := range []string{"CRÈME BRÛLÉE", "creme brulee facon", "A"} {
		if got := searchSet(t, s, searchCol, q); !reflect.DeepEqual(got, []string{"p1"}) {
			t.Errorf("%q: %q", q, got)
		}
	}
}

func testSearchFields(t *testing.T, s storage.Store) {
	rec := func(rkey, title, body string, tags ...any) storage.RecordOp {
		return put(Rec("did:plc:a", searchCol, rkey, base, map[string]any{"title": title, "body": map[string]any{"text": body}, "tags": tags}))
	}
	apply(t, s,
		rec("r1", "golden gate", "a bridge in fog", "travel", 7, "bridges"),
		rec("r2", "fog city", "golden hour over the gate"),
		rec("r3", "nothing", "gate golden", map[string]any{"not": "indexed"}),
	)
	declareText(t, s, searchCol, "title", "body.text", "tags")
	for _, c := range []struct {
		query  string
		fields []string
		want   []string
	}{
		{"golden", nil, []string{"r1", "r2", "r3"}},
		{"golden", []string{"title"}, []string{"r1"}},
		{"golden", []string{"body.text"}, []string{"r2", "r3"}},
		{"golden fog", nil, []string{"r1", "r2"}}, // words in different fields
		{"golden fog", []string{"title"}, nil},    // not both in the title
		{`"golden gate"`, nil, []string{"r1"}},    // a phrase stays in one field
		{`"gate golden"`, []string{"title", "body.text"}, []string{"r3"}},
		{`"gate a"`, nil, nil}, // never across fields
		{"golden -fog", nil, []string{"r3"}},
		{"golden -fog", []string{"title"}, []string{"r1"}}, // fog excluded in the title only
		{"golden -fog", []string{"body.text"}, []string{"r2", "r3"}},
		{"bridges", nil, []string{"r1"}}, // an array's strings
		{"bridges", []string{"tags"}, []string{"r1"}},
		{"indexed", nil, nil}, // an object's are not
		{"travel OR hour", []string{"tags"}, []string{"r1"}},
		{"fog*", []string{"title", "title"}, []string{"r2"}},
	} {
		if got := searchSet(t, s, searchCol, c.query, c.fields...); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q in %q: got %q, want %q", c.query, c.fields, got, c.want)
		}
	}
}

func testSearchPages(t *testing.T, s storage.Store) {
	var ops []storage.RecordOp
	for i := range 30 {
		text := "match" + strings.Repeat(" match", i%4) + " filler"
		ops = append(ops, put(post(fmt.Sprintf("did:plc:u%d", i%3), fmt.Sprintf("r%02d", i), text)))
	}
	apply(t, s, ops...)
	declareText(t, s, searchCol, "text")
	all := searchRKeys(t, s, storage.SearchQuery{Collection: searchCol, Query: "match", Limit: 100})
	paged := searchRKeys(t, s, storage.SearchQuery{Collection: searchCol, Query: "match", Limit: 7})
	if len(all) != 30 || !reflect.DeepEqual(paged, all) {
		t.Fatalf("pages of 7:\n got %q\nwant %q", paged, all)
	}
	// Ties in rank are broken by URI.
	page, err := s.SearchRecords(context.Background(), storage.SearchQuery{Collection: searchCol, Query: "match", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(page.Hits); i++ {
		a, b := page.Hits[i-1], page.Hits[i]
		if a.Rank < b.Rank || a.Rank == b.Rank && a.Record.URI > b.Record.URI {
			t.Fatalf("out of order at %d: %+v then %+v", i, a, b)
		}
	}
	if h := page.Hits[0].Record; h.Collection != searchCol || h.DID == "" || h.CID == "" || len(h.Value) == 0 || h.CreatedAt.IsZero() {
		t.Errorf("served record %+v", h)
	}
	mine := searchRKeys(t, s, storage.SearchQuery{Collection: searchCol, Query: "match", DID: "did:plc:u1", Limit: 4})
	if len(mine) != 10 {
		t.Fatalf("one account's: %q", mine)
	}
	for _, k := range mine {
		var n int
		fmt.Sscanf(k, "r%d", &n)
		if n%3 != 1 {
			t.Errorf("record %s is another account's", k)
		}
	}
	first, err := s.SearchRecords(context.Background(), storage.SearchQuery{Collection: searchCol, Query: "match", Limit: 5})
	if err != nil || first.Cursor == "" {
		t.Fatalf("first page: %+v %v", first, err)
	}
	for _, q := range []storage.SearchQuery{
		{Collection: searchCol, Query: "filler", Cursor: first.Cursor},
		{Collection: searchCol, Query: "match", DID: "did:plc:u1", Cursor: first.Cursor},
		{Collection: searchCol, Query: "match", Fields: []string{"text"}, Cursor: first.Cursor},
		{Collection: searchCol, Query: "match", Cursor: "garbage"},
	} {
		if _, err := s.SearchRecords(context.Background(), q); !errors.Is(err, storage.ErrInvalidQuery) || !errors.Is(err, storage.ErrInvalidCursor) {
			t.Errorf("a cursor of another search %+v: %v", q, err)
		}
	}
}

func testSearchRefusals(t *testing.T, s storage.Store) {
	ctx := context.Background()
	apply(t, s, put(post("did:plc:a", "p1", "hello world")))
	declareText(t, s, searchCol, "text")
	long := strings.Repeat("a ", storage.MaxSearchQueryLen)
	many := strings.Repeat("w ", storage.MaxSearchTerms+1)
	for _, q := range []string{
		"", "   ", "!!! ...", `"unclosed phrase`, `hello "unclosed`, "OR hello", "hello OR", "hello OR OR world",
		"-hello", "hello OR -world", "a*", "-", long, many, "hello \xff",
	} {
		_, err := s.SearchRecords(ctx, storage.SearchQuery{Collection: searchCol, Query: q})
		if !errors.Is(err, storage.ErrInvalidQuery) || !strings.Contains(err.Error(), "search: ") {
			t.Errorf("query %.40q: %v", q, err)
		}
	}
	for _, q := range []storage.SearchQuery{
		{Query: "hello"},
		{Collection: "app.test.unindexed", Query: "hello"},
		{Collection: searchCol, Query: "hello", Fields: []string{"title"}},
		{Collection: searchCol, Query: "hello", Limit: storage.MaxSearchLimit + 1},
	} {
		if _, err := s.SearchRecords(ctx, q); !errors.Is(err, storage.ErrInvalidQuery) {
			t.Errorf("%+v: %v", q, err)
		}
	}
	// An index still building is not searched.
	if _, _, err := s.DeclareFieldIndex(ctx, storage.FieldIndexSpec{Collection: "app.test.later", Path: "text", Kind: storage.FieldIndexText}); err != nil {
		t.Fatal(err)
	}
	_, err := s.SearchRecords(ctx, storage.SearchQuery{Collection: "app.test.later", Query: "hello"})
	if !errors.Is(err, storage.ErrInvalidQuery) || !strings.Contains(err.Error(), "not ready") {
		t.Errorf("a building index: %v", err)
	}
	// At most MaxTextIndexes per collection.
	for i := range storage.MaxTextIndexes {
		_, _, err := s.DeclareFieldIndex(ctx, storage.FieldIndexSpec{Collection: "app.test.many", Path: fmt.Sprintf("f%d", i), Kind: storage.FieldIndexText})
		if err != nil {
			t.Fatal(err)
		}
	}
	_, _, err = s.DeclareFieldIndex(ctx, storage.FieldIndexSpec{Collection: "app.test.many", Path: "more", Kind: storage.FieldIndexText})
	if !errors.Is(err, storage.ErrInvalidFieldIndex) {
		t.Errorf("a text index too many: %v", err)
	}
	if _, _, err := s.DeclareFieldIndex(ctx, storage.FieldIndexSpec{Collection: "app.test.many", Path: "more", Kind: storage.FieldIndexValue}); err != nil {
		t.Errorf("a value index beside them: %v", err)
	}
}

// testSearchPlans shows in the database's own plans that a selective
// search starts from the full-text index (the FTS4 table; the GIN index
// on PostgreSQL) and fetches records by URI, never walking the
// collection's records. (PostgreSQL reads the documents in full, rightly,
// for a word most of them hold.)
func testSearchPlans(t *testing.T, s storage.Store) {
	ex, ok := s.(interface {
		ExplainSearch(ctx context.Context, q storage.SearchQuery) (string, error)
	})
	if !ok {
		t.Skip("the store does not explain its plans")
	}
	// Enough records that PostgreSQL's planner prefers the index to
	// reading the table for a selective query, indexed as they are
	// written.
	if _, _, err := s.DeclareFieldIndex(context.Background(), storage.FieldIndexSpec{Collection: searchCol, Path: "text", Kind: storage.FieldIndexText}); err != nil {
		t.Fatal(err)
	}
	buildAll(t, s, 1000)
	var ops []storage.RecordOp
	for i := range 20000 {
		ops = append(ops, put(post(fmt.Sprintf("did:plc:u%d", i%20), fmt.Sprintf("r%05d", i), fmt.Sprintf("word%d common text", i%5000))))
		if len(ops) == 2000 {
			apply(t, s, ops...)
			ops = ops[:0]
		}
	}
	if w, ok := s.(interface{ Writer() *sql.DB }); ok {
		// As autovacuum would: statistics, and on PostgreSQL the GIN
		// index's pending entries moved into the index proper.
		stmt := "ANALYZE"
		if s.Dialect() == "postgres" {
			stmt = "VACUUM ANALYZE"
		}
		if _, err := w.Writer().ExecContext(context.Background(), stmt); err != nil {
			t.Fatal(err)
		}
	}
	want := "search_fts VIRTUAL TABLE"
	if s.Dialect() == "postgres" {
		want = "search_docs_doc"
	}
	for _, q := range []storage.SearchQuery{
		{Collection: searchCol, Query: "word7"},
		{Collection: searchCol, Query: "word7 -nothing", DID: "did:plc:u3"},
		{Collection: searchCol, Query: `"word7 common" OR word12*`, Fields: []string{"text"}},
	} {
		plan, err := ex.ExplainSearch(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(plan, want) || scansRecords(plan) {
			t.Errorf("%q: the plan does not start from %s, or walks records:\n%s", q.Query, want, plan)
		}
	}
}
