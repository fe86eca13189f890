package storagetest

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/storage"
)

// The planner's tests: answers from value indexes are the scan's answers.

const plannerCollection = "app.test.planner"

// plannerFields are the indexed fields of the planner's records.
var plannerFields = []string{"n", "s", "b", "o.x", "a[0]"}

// plannerScalars are the values the records' fields and the filters'
// conditions draw from: numbers, strings (bytewise order: upper case,
// digits and accents included), booleans.
var plannerScalars = []any{-3.0, -0.5, 0.0, 1.0, 2.0, 2.5, 10.0, 1e15, "", "A", "a", "a b", "ab", "b", "z", "10", "9", "á", "ä", "%", true, false}

// plannerValue returns a random value for a field that mostly holds
// values of the kind at kinds[0].
func plannerValue(rng *rand.Rand, kind int) any {
	switch r := rng.IntN(20); {
	case r < 12:
		// The field's usual kind: numbers, strings or booleans.
		lo, hi := []int{0, 8, 20}[kind], []int{8, 20, 22}[kind]
		return plannerScalars[lo+rng.IntN(hi-lo)]
	case r < 16:
		return plannerScalars[rng.IntN(len(plannerScalars))]
	case r < 17:
		return nil
	case r < 18:
		return map[string]any{"k": 1}
	case r < 19:
		return []any{1}
	}
	return absentField
}

// plannerRecord returns record i with random fields; its creation time is
// one of a few, so that creation order has ties.
func plannerRecord(rng *rand.Rand, i int) storage.Record {
	fields := map[string]any{}
	set := func(name string, v any) {
		if v != absentField {
			fields[name] = v
		}
	}
	set("n", plannerValue(rng, 0))
	set("s", plannerValue(rng, 1))
	set("b", plannerValue(rng, 2))
	set("m", plannerValue(rng, 0)) // never indexed
	if x := plannerValue(rng, rng.IntN(2)); rng.IntN(4) > 0 {
		o := map[string]any{}
		if x != absentField {
			o["x"] = x
		}
		fields["o"] = o
	}
	if x := plannerValue(rng, rng.IntN(3)); rng.IntN(4) > 0 && x != absentField {
		fields["a"] = []any{x, "tail"}
	}
	did := []string{"did:plc:alice", "did:plc:bob", "did:plc:carol"}[rng.IntN(3)]
	r := Rec(did, plannerCollection, fmt.Sprintf("p%05d", i), base.Add(time.Duration(rng.IntN(40))*time.Second), fields)
	r.CID = fmt.Sprintf("bafyplanner%d", rng.IntN(1<<30))
	return r
}

// plannerLeaf returns a random condition on one of the fields.
func plannerLeaf(rng *rand.Rand) storage.Filter {
	field := append(plannerFields, "m")[rng.IntN(len(plannerFields)+1)]
	ops := []string{"=", "=", "=", "<", "<=", ">", ">=", "!="}
	v := plannerScalars[rng.IntN(len(plannerScalars))]
	op := ops[rng.IntN(len(ops))]
	switch x := v.(type) {
	case bool:
		op = []string{"=", "!="}[rng.IntN(2)]
	case string:
		if rng.IntN(6) == 0 {
			op, v = "LIKE", x+"%"
		}
	}
	if rng.IntN(25) == 0 {
		op, v = []string{"=", "!="}[rng.IntN(2)], nil
	}
	return storage.Filter{Field: field, Op: op, Value: v}
}

// plannerQuery returns a random query: a filter (one condition, an AND
// or OR of some, an AND holding an OR), a sort and a page size.
func plannerQuery(rng *rand.Rand) storage.RecordQuery {
	q := storage.RecordQuery{Collection: plannerCollection, Limit: 2 + rng.IntN(9), Ascending: rng.IntN(2) == 0}
	switch r := rng.IntN(20); {
	case r < 4:
	case r < 11:
		f := plannerLeaf(rng)
		q.Filter = &f
	case r < 17:
		q.Filter = &storage.Filter{And: []storage.Filter{plannerLeaf(rng), plannerLeaf(rng)}}
		if rng.IntN(3) == 0 {
			q.Filter.And = append(q.Filter.And, plannerLeaf(rng))
		}
	case r < 19:
		q.Filter = &storage.Filter{Or: []storage.Filter{plannerLeaf(rng), plannerLeaf(rng)}}
	default:
		q.Filter = &storage.Filter{And: []storage.Filter{plannerLeaf(rng), {Or: []storage.Filter{plannerLeaf(rng), plannerLeaf(rng)}}}}
	}
	if rng.IntN(2) == 0 {
		q.Sort = append(plannerFields, "m")[rng.IntN(len(plannerFields)+1)]
	}
	if rng.IntN(6) == 0 {
		q.DID = []string{"did:plc:alice", "did:plc:bob"}[rng.IntN(2)]
	}
	return q
}

// answer is everything a query answers: its records, page by page, and
// its count.
type answer struct {
	keys  []string
	count int64
}

// answerOf pages through q to the end and counts it. scanned reports
// whether the store said it scanned the collection for a field an index
// would serve.
func answerOf(t *testing.T, s storage.Store, q storage.RecordQuery) (a answer, scanned bool) {
	t.Helper()
	ctx := context.Background()
	q.OnScan = func(h storage.ScanHint) {
		if h.Collection != q.Collection || len(h.Fields) == 0 {
			t.Errorf("scan hint %+v for %+v", h, q)
		}
		scanned = true
	}
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatalf("%s: too many pages", describe(q))
		}
		page, err := s.QueryRecords(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", describe(q), err)
		}
		a.keys = append(a.keys, rkeys(page.Records)...)
		if page.Cursor == "" {
			break
		}
		if len(page.Records) != q.Limit {
			t.Fatalf("%s: short page %d with a cursor", describe(q), len(page.Records))
		}
		q.Cursor = page.Cursor
	}
	q.Cursor = ""
	n, err := s.CountMatching(ctx, q)
	if err != nil {
		t.Fatalf("count %s: %v", describe(q), err)
	}
	a.count = n
	return a, scanned
}

// describe renders a query for failure messages.
func describe(q storage.RecordQuery) string {
	var b strings.Builder
	var filter func(f *storage.Filter)
	filter = func(f *storage.Filter) {
		switch {
		case f == nil:
			b.WriteString("none")
		case f.And != nil || f.Or != nil:
			members, join := f.And, " AND "
			if f.Or != nil {
				members, join = f.Or, " OR "
			}
			b.WriteString("(")
			for i := range members {
				if i > 0 {
					b.WriteString(join)
				}
				filter(&members[i])
			}
			b.WriteString(")")
		default:
			fmt.Fprintf(&b, "%s %s %#v", f.Field, f.Op, f.Value)
		}
	}
	filter(q.Filter)
	fmt.Fprintf(&b, " sort %q asc %v limit %d did %q", q.Sort, q.Ascending, q.Limit, q.DID)
	return b.String()
}

// declarePlannerIndexes declares value indexes on plannerFields and builds
// them.
func declarePlannerIndexes(t *testing.T, s storage.Store) []int64 {
	t.Helper()
	var ids []int64
	for _, f := range plannerFields {
		idx, _, err := s.DeclareFieldIndex(context.Background(), storage.FieldIndexSpec{Collection: plannerCollection, Path: f, Kind: storage.FieldIndexValue})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, idx.ID)
	}
	buildAll(t, s, 97)
	return ids
}

// testPlannerAnswersAsScan is the planner's property test: random records
// and random queries, answered with every field indexed and with none,
// page by page, must agree; so must counts. Between the rounds records
// are rewritten and deleted, so that the entries the triggers keep are
// compared too.
func testPlannerAnswersAsScan(t *testing.T, s storage.Store) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 32))
	const n = 250
	var ops []storage.RecordOp
	for i := range n {
		ops = append(ops, put(plannerRecord(rng, i)))
	}
	apply(t, s, ops...)
	queries := make([]storage.RecordQuery, 100)
	for i := range queries {
		queries[i] = plannerQuery(rng)
	}
	answers := func() ([]answer, []bool) {
		out, scans := make([]answer, len(queries)), make([]bool, len(queries))
		for i, q := range queries {
			out[i], scans[i] = answerOf(t, s, q)
		}
		return out, scans
	}
	compare := func(round string, got, want []answer) {
		t.Helper()
		for i := range want {
			if !slices.Equal(got[i].keys, want[i].keys) || got[i].count != want[i].count {
				t.Errorf("%s: %s:\n got %v (count %d)\nwant %v (count %d)", round, describe(queries[i]),
					got[i].keys, got[i].count, want[i].keys, want[i].count)
			}
		}
	}
	scan, scanned := answers()
	ids := declarePlannerIndexes(t, s)
	indexed, stillScanned := answers()
	compare("indexed", indexed, scan)
	served := 0
	for i := range queries {
		if scanned[i] && !stillScanned[i] {
			served++
		}
	}
	if served < len(queries)/4 {
		t.Errorf("the indexes served %d queries of %d", served, len(queries))
	}
	// Rewrite and delete some records with the indexes ready, then
	// compare with a scan again (after the drops).
	ops = ops[:0]
	for i := range n / 3 {
		j := rng.IntN(n + 20)
		if rng.IntN(4) == 0 {
			ops = append(ops, del(plannerRecord(rng, j).URI))
		} else {
			ops = append(ops, put(plannerRecord(rng, j)))
		}
		if i%10 == 9 {
			apply(t, s, ops...)
			ops = ops[:0]
		}
	}
	apply(t, s, ops...)
	indexed, _ = answers()
	for _, id := range ids {
		if err := s.DropFieldIndex(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
	scan, _ = answers()
	compare("after writes", indexed, scan)
}

// pageKeys pages through q, calling between(page) after each page, and
// returns the record keys in order.
func pageKeys(t *testing.T, s storage.Store, q storage.RecordQuery, between func(page int)) []string {
	t.Helper()
	var out []string
	for page := 0; ; page++ {
		p := queryT(t, s, q)
		out = append(out, rkeys(p.Records)...)
		if p.Cursor == "" || page > 1000 {
			return out
		}
		q.Cursor = p.Cursor
		between(page)
	}
}

// testPlannerKeysetStable: a field-sorted listing, indexed or not, keeps
// its place while records are added and rewritten between its pages:
// every record present from start to end comes exactly once.
func testPlannerKeysetStable(t *testing.T, s storage.Store) {
	rng := rand.New(rand.NewPCG(7, 7))
	var ops []storage.RecordOp
	for i := range 120 {
		ops = append(ops, put(plannerRecord(rng, i)))
	}
	apply(t, s, ops...)
	next := 1000
	for _, indexed := range []bool{false, true} {
		if indexed {
			declarePlannerIndexes(t, s)
		}
		for _, sort := range []string{"n", "s"} {
			for _, asc := range []bool{false, true} {
				q := storage.RecordQuery{Collection: plannerCollection, Sort: sort, Ascending: asc, Limit: 7}
				keys := pageKeys(t, s, q, func(int) {
					// New records, and existing ones with new CIDs but the
					// same values (so that their place stays).
					var ops []storage.RecordOp
					for range 3 {
						ops = append(ops, put(plannerRecord(rng, next)))
						next++
					}
					apply(t, s, ops...)
				})
				seen := map[string]int{}
				for _, k := range keys {
					seen[k]++
				}
				for i := range 120 {
					if k := fmt.Sprintf("p%05d", i); seen[k] != 1 {
						t.Errorf("indexed %v sort %s asc %v: %s came %d times", indexed, sort, asc, k, seen[k])
					}
				}
				for k, c := range seen {
					if c > 1 {
						t.Errorf("indexed %v sort %s asc %v: %s came %d times", indexed, sort, asc, k, c)
					}
				}
			}
		}
	}
}

// testPlannerCursorAcrossIndexChange: a cursor issued while the field was
// not indexed continues once it is, and the other way round.
func testPlannerCursorAcrossIndexChange(t *testing.T, s storage.Store) {
	rng := rand.New(rand.NewPCG(3, 3))
	var ops []storage.RecordOp
	for i := range 100 {
		ops = append(ops, put(plannerRecord(rng, i)))
	}
	apply(t, s, ops...)
	queries := []storage.RecordQuery{
		{Collection: plannerCollection, Sort: "n", Limit: 6},
		{Collection: plannerCollection, Sort: "s", Ascending: true, Limit: 6},
		{Collection: plannerCollection, Filter: leaf("b", "=", true), Limit: 4},
		{Collection: plannerCollection, Filter: leaf("n", ">=", 1.0), Sort: "n", Limit: 4},
	}
	var ids []int64
	for _, q := range queries {
		want, _ := answerOf(t, s, q)
		for _, flip := range []int{1, 3} {
			got := pageKeys(t, s, q, func(page int) {
				if page != flip {
					return
				}
				if ids == nil {
					ids = declarePlannerIndexes(t, s)
					return
				}
				for _, id := range ids {
					if err := s.DropFieldIndex(context.Background(), id); err != nil {
						t.Fatal(err)
					}
				}
				ids = nil
			})
			if !slices.Equal(got, want.keys) {
				t.Errorf("%s, the index changing after page %d:\n got %v\nwant %v", describe(q), flip, got, want.keys)
			}
		}
	}
}

// explainer is the diagnostic of sqlstore's stores (sqlstore.DB.ExplainQuery).
type explainer interface {
	ExplainQuery(ctx context.Context, q storage.RecordQuery, count bool) (string, error)
}

// testPlannerExplain shows the planner's choices in the database's own
// plans: an indexed equality, range, sort and count read the entries
// (field_index_values) through the index that serves them, and do not
// scan records; a condition on an unindexed field scans the collection.
func testPlannerExplain(t *testing.T, s storage.Store) {
	ctx := context.Background()
	ex, ok := s.(explainer)
	if !ok {
		t.Skip("the store does not explain its plans")
	}
	var ops []storage.RecordOp
	for i := range 3000 {
		r := Rec("did:plc:alice", plannerCollection, fmt.Sprintf("p%05d", i), base.Add(time.Duration(i)*time.Second),
			map[string]any{"n": i % 300, "s": fmt.Sprintf("s%04d", i), "m": i % 300})
		ops = append(ops, put(r))
		if len(ops) == 500 {
			apply(t, s, ops...)
			ops = ops[:0]
		}
	}
	declarePlannerIndexes(t, s)
	if w, ok := s.(interface{ Writer() *sql.DB }); ok {
		if _, err := w.Writer().ExecContext(ctx, "ANALYZE"); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name  string
		q     storage.RecordQuery
		count bool
		want  string // the index that must serve it
	}{
		{"equality", storage.RecordQuery{Filter: leaf("n", "=", 7.0)}, false, "field_index_numbers"},
		{"string equality in a conjunction", storage.RecordQuery{Filter: &storage.Filter{And: []storage.Filter{*leaf("s", "=", "s0042"), *leaf("m", ">", 3.0)}}}, false, "field_index_strings"},
		{"range", storage.RecordQuery{Filter: leaf("s", ">", "s2990")}, false, "field_index_string"},
		{"sort", storage.RecordQuery{Sort: "n"}, false, "field_index_number_order"},
		{"sort, string group", storage.RecordQuery{Sort: "s", Ascending: true}, false, "field_index_string_order"},
		{"count", storage.RecordQuery{Filter: leaf("n", "=", 7.0)}, true, "field_index_numbers"},
	}
	for _, tc := range cases {
		tc.q.Collection = plannerCollection
		plan, err := ex.ExplainQuery(ctx, tc.q, tc.count)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !strings.Contains(plan, tc.want) || scansRecords(plan) {
			t.Errorf("%s: the plan does not read %s, or scans records:\n%s", tc.name, tc.want, plan)
		}
		t.Logf("%s:\n%s", tc.name, plan)
	}
	plan, err := ex.ExplainQuery(ctx, storage.RecordQuery{Collection: plannerCollection, Filter: leaf("m", "=", 7.0)}, false)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plan, "field_index") {
		t.Errorf("an unindexed field's plan reads an index's entries:\n%s", plan)
	}
}

// scansRecords reports whether a plan walks the records of the
// collection rather than fetching them by URI.
func scansRecords(plan string) bool {
	for _, line := range strings.Split(plan, "\n") {
		if strings.Contains(line, "Seq Scan on records") || strings.Contains(line, "records_collection_created") ||
			strings.HasPrefix(strings.TrimSpace(line), "SCAN records") {
			return true
		}
	}
	return false
}

// testPlannerScanHint: a query that scans for want of an index says which
// index would serve it; one an index serves says nothing.
func testPlannerScanHint(t *testing.T, s storage.Store) {
	ctx := context.Background()
	apply(t, s, put(Rec("did:plc:alice", plannerCollection, "p1", base, map[string]any{"n": 1, "m": 2})))
	var hints []storage.ScanHint
	q := storage.RecordQuery{Collection: plannerCollection, Sort: "s", OnScan: func(h storage.ScanHint) { hints = append(hints, h) },
		Filter: &storage.Filter{And: []storage.Filter{*leaf("m", "=", 2.0), *leaf("n", "LIKE", "x"), *leaf("n", ">", 0.0)}}}
	if _, err := s.QueryRecords(ctx, q); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CountMatching(ctx, q); err != nil {
		t.Fatal(err)
	}
	want := storage.ScanHint{Collection: plannerCollection, Fields: []string{"m", "n", "s"}}
	if len(hints) != 2 || !slices.Equal(hints[0].Fields, want.Fields) || hints[0].Collection != want.Collection ||
		!slices.Equal(hints[1].Fields, []string{"m", "n"}) {
		t.Fatalf("hints: %+v", hints)
	}
	declarePlannerIndexes(t, s)
	hints = nil
	if page, err := s.QueryRecords(ctx, q); err != nil || len(page.Records) != 0 {
		t.Fatalf("%+v %v", page, err)
	}
	q.Filter = leaf("n", "=", 1.0)
	if n, err := s.CountMatching(ctx, q); err != nil || n != 1 {
		t.Fatalf("count %d %v", n, err)
	}
	if len(hints) != 0 {
		t.Fatalf("hints with the indexes: %+v", hints)
	}
	// No hint when no index could serve: a LIKE, an OR.
	q = storage.RecordQuery{Collection: plannerCollection, OnScan: q.OnScan,
		Filter: &storage.Filter{Or: []storage.Filter{*leaf("m", "=", 2.0), *leaf("m", "=", 3.0)}}}
	if _, err := s.QueryRecords(ctx, q); err != nil || len(hints) != 0 {
		t.Fatalf("%+v %v", hints, err)
	}
}
