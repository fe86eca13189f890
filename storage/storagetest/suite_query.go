package storagetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/storage"
)

// queryCollection is the collection of the query fixture.
const queryCollection = "app.test.query"

// queryFixture stores eight records of queryCollection whose fields cover
// every JSON type, plus one record elsewhere that matches most filters.
// Record rNN is indexed NN seconds after base, in did:plc:alice when NN is
// odd and did:plc:bob when even.
func queryFixture(t *testing.T, s storage.Store) map[string]storage.Record {
	t.Helper()
	values := map[string]map[string]any{
		"r01": {"n": 1, "s": "apple", "b": true, "tags": []any{"x", "y"}, "obj": map[string]any{"v": 10, "0": "zero-key"}, "a-b": "dash"},
		"r02": {"n": 2.5, "s": "Banana", "b": false, "obj": map[string]any{"v": "10"}, "arr": []any{map[string]any{"alt": "first"}, map[string]any{"alt": "second"}}},
		"r03": {"n": "3", "s": "cherry", "b": nil, "tags": []any{"y"}},
		"r04": {"n": -1, "s": "ápple", "arr": map[string]any{"0": map[string]any{"alt": "obj-key"}}},
		"r05": {"n": nil, "s": "APPLE pie"},
		"r06": {},
		"r07": {"n": 10, "s": "100%_sure", "b": "true"},
		"r08": {"n": 2, "s": `a\b`, "obj": []any{10}},
	}
	out := map[string]storage.Record{}
	var ops []storage.RecordOp
	for rkey, v := range values {
		var i int
		fmt.Sscanf(rkey, "r%d", &i)
		did := "did:plc:bob"
		if i%2 == 1 {
			did = "did:plc:alice"
		}
		r := Rec(did, queryCollection, rkey, base.Add(time.Duration(i)*time.Second), v)
		out[rkey] = r
		ops = append(ops, put(r))
	}
	ops = append(ops, put(Rec("did:plc:alice", "app.test.other", "r01", base, map[string]any{"n": 1, "s": "apple", "b": true})))
	apply(t, s, ops...)
	return out
}

// rkeys lists the record keys of a page.
func rkeys(recs []storage.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.RKey
	}
	return out
}

func queryT(t *testing.T, s storage.Store, q storage.RecordQuery) storage.RecordQueryPage {
	t.Helper()
	page, err := s.QueryRecords(context.Background(), q)
	if err != nil {
		t.Fatalf("QueryRecords(%+v): %v", q, err)
	}
	return page
}

func leaf(field, op string, v any) *storage.Filter {
	return &storage.Filter{Field: field, Op: op, Value: v}
}

func testQueryFilters(t *testing.T, s storage.Store) {
	ctx := context.Background()
	fx := queryFixture(t, s)
	all := []string{"r01", "r02", "r03", "r04", "r05", "r06", "r07", "r08"}
	cases := []struct {
		name   string
		did    string
		filter *storage.Filter
		want   []string
	}{
		{"number =", "", leaf("n", "=", 1.0), []string{"r01"}},
		{"number != skips strings, null, absent", "", leaf("n", "!=", 1.0), []string{"r02", "r04", "r07", "r08"}},
		{"number <", "", leaf("n", "<", 2.5), []string{"r01", "r04", "r08"}},
		{"number <=", "", leaf("n", "<=", 2.5), []string{"r01", "r02", "r04", "r08"}},
		{"number > skips numeric strings", "", leaf("n", ">", 2.0), []string{"r02", "r07"}},
		{"number >=", "", leaf("n", ">=", 10.0), []string{"r07"}},
		{"integer value", "", leaf("n", "=", 2), []string{"r08"}},
		{"string = is exact", "", leaf("s", "=", "apple"), []string{"r01"}},
		{"string matches only strings", "", leaf("n", "=", "3"), []string{"r03"}},
		{"string != skips absent", "", leaf("s", "!=", "apple"), []string{"r02", "r03", "r04", "r05", "r07", "r08"}},
		{"string > is bytewise", "", leaf("s", ">", "b"), []string{"r03", "r04"}},
		{"string < is bytewise", "", leaf("s", "<", "B"), []string{"r05", "r07"}},
		{"string <=", "", leaf("s", "<=", "APPLE pie"), []string{"r05", "r07"}},
		{"string >=", "", leaf("s", ">=", "cherry"), []string{"r03", "r04"}},
		{"LIKE ignores ASCII case only", "", leaf("s", "LIKE", "apple%"), []string{"r01", "r05"}},
		{"LIKE infix", "", leaf("s", "like", "%APP%"), []string{"r01", "r05"}},
		{"LIKE _ is one character", "", leaf("s", "LIKE", "_pple"), []string{"r01", "r04"}},
		{"LIKE escapes", "", leaf("s", "LIKE", `100\%\_sure`), []string{"r07"}},
		{"LIKE escaped backslash", "", leaf("s", "LIKE", `a\\b`), []string{"r08"}},
		{"LIKE on numbers never matches", "", leaf("n", "LIKE", "%"), []string{"r03"}},
		{"NOT LIKE skips absent", "", leaf("s", "NOT LIKE", "apple%"), []string{"r02", "r03", "r04", "r07", "r08"}},
		{"NOT LIKE on a missing field", "", leaf("zzz", "NOT LIKE", "x"), nil},
		{"bool = true", "", leaf("b", "=", true), []string{"r01"}},
		{"bool = false", "", leaf("b", "=", false), []string{"r02"}},
		{"bool != true skips strings", "", leaf("b", "!=", true), []string{"r02"}},
		{"bool != false", "", leaf("b", "!=", false), []string{"r01"}},
		{"nil = is absent or null", "", leaf("b", "=", nil), []string{"r03", "r04", "r05", "r06", "r08"}},
		{"nil != is present and not null", "", leaf("b", "!=", nil), []string{"r01", "r02", "r07"}},
		{"nil = on n", "", leaf("n", "=", nil), []string{"r05", "r06"}},
		{"array index", "", leaf("tags[0]", "=", "x"), []string{"r01"}},
		{"array index 1", "", leaf("tags[1]", "=", "y"), []string{"r01"}},
		{"nested number", "", leaf("obj.v", "=", 10.0), []string{"r01"}},
		{"nested string", "", leaf("obj.v", "=", "10"), []string{"r02"}},
		{"digit name is an object key", "", leaf("obj.0", "=", "zero-key"), []string{"r01"}},
		{"index steps into arrays only", "", leaf("obj[0]", "=", 10.0), []string{"r08"}},
		{"index never reads an object key", "", leaf("obj[0]", "=", "zero-key"), nil},
		{"objects in arrays", "", leaf("arr[1].alt", "=", "second"), []string{"r02"}},
		{"digit key in objects", "", leaf("arr.0.alt", "=", "obj-key"), []string{"r04"}},
		{"digit key never indexes an array", "", leaf("arr.0.alt", "=", "first"), nil},
		{"dashes and dollars", "", leaf("a-b", "=", "dash"), []string{"r01"}},
		{"$type", "", leaf("$type", "=", queryCollection), all},
		{"DID", "did:plc:bob", leaf("n", "!=", nil), []string{"r02", "r04", "r08"}},
		{"or of and", "", &storage.Filter{Or: []storage.Filter{
			*leaf("n", "=", 1.0),
			{And: []storage.Filter{*leaf("s", "LIKE", "%an%"), *leaf("b", "=", false)}},
		}}, []string{"r01", "r02"}},
		{"and of or", "", &storage.Filter{And: []storage.Filter{
			*leaf("n", ">", 0.0),
			{Or: []storage.Filter{*leaf("s", "=", "cherry"), *leaf("s", "=", "apple")}},
		}}, []string{"r01"}},
		{"no filter", "", nil, all},
	}
	for _, tc := range cases {
		q := storage.RecordQuery{Collection: queryCollection, DID: tc.did, Filter: tc.filter, Ascending: true, Limit: 100}
		got := rkeys(queryT(t, s, q).Records)
		if !slices.Equal(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
		if n, err := s.CountMatching(ctx, q); err != nil || n != int64(len(tc.want)) {
			t.Errorf("%s: count %d %v, want %d", tc.name, n, err, len(tc.want))
		}
	}
	// Records come back as served: what GetRecord returns but the Rev
	// and IndexedAt.
	page := queryT(t, s, storage.RecordQuery{Collection: queryCollection, Filter: leaf("a-b", "=", "dash")})
	want, err := s.GetRecord(ctx, fx["r01"].URI)
	if err != nil || len(page.Records) != 1 {
		t.Fatalf("%v %v", page, err)
	}
	got := page.Records[0]
	sameJSON(t, got.Value, want.Value)
	if got.URI != want.URI || got.DID != want.DID || got.Collection != want.Collection || got.RKey != want.RKey ||
		got.CID != want.CID || !got.CreatedAt.Equal(want.CreatedAt) {
		t.Fatalf("record: %+v, want %+v", got, want)
	}
}

// nestAnd wraps f in n single-member And groups.
func nestAnd(f storage.Filter, n int) *storage.Filter {
	for range n {
		f = storage.Filter{And: []storage.Filter{f}}
	}
	return &f
}

func testQueryInvalid(t *testing.T, s storage.Store) {
	ctx := context.Background()
	queryFixture(t, s)
	bad := map[string]storage.RecordQuery{
		"no collection":     {Filter: leaf("n", "=", 1.0)},
		"unknown operator":  {Filter: leaf("n", "~", 1.0)},
		"injected operator": {Filter: leaf("n", "= 1 OR 1 =", 1.0)},
		"bad path":          {Filter: leaf("n') OR 1=1 --", "=", 1.0)},
		"bad sort path":     {Sort: "n;DROP"},
		"bool with <":       {Filter: leaf("b", "<", true)},
		"nil with >":        {Filter: leaf("b", ">", nil)},
		"LIKE with number":  {Filter: leaf("s", "LIKE", 1.0)},
		"unsupported value": {Filter: leaf("s", "=", []string{"x"})},
		"empty group":       {Filter: &storage.Filter{And: []storage.Filter{}}},
		"empty filter":      {Filter: &storage.Filter{}},
		"too deep":          {Filter: nestAnd(*leaf("n", "=", 1.0), storage.MaxFilterDepth)},
		"garbage cursor":    {Cursor: "not-a-cursor"},
	}
	for name, q := range bad {
		if q.Collection == "" && name != "no collection" {
			q.Collection = queryCollection
		}
		if _, err := s.QueryRecords(ctx, q); !errors.Is(err, storage.ErrInvalidQuery) {
			t.Errorf("%s: QueryRecords: %v", name, err)
		}
		if name == "garbage cursor" || name == "bad sort path" {
			continue // CountMatching ignores both
		}
		if _, err := s.CountMatching(ctx, q); !errors.Is(err, storage.ErrInvalidQuery) {
			t.Errorf("%s: CountMatching: %v", name, err)
		}
	}
	// A leaf at the deepest level is fine.
	deep := nestAnd(*leaf("n", "=", 1.0), storage.MaxFilterDepth-1)
	if got := rkeys(queryT(t, s, storage.RecordQuery{Collection: queryCollection, Filter: deep}).Records); !slices.Equal(got, []string{"r01"}) {
		t.Fatalf("deepest leaf: %v", got)
	}
}

// pageAll follows cursors and returns every rkey in order.
func pageAll(t *testing.T, s storage.Store, q storage.RecordQuery) []string {
	t.Helper()
	var out []string
	for pages := 0; ; pages++ {
		if pages > 50 {
			t.Fatalf("%+v: too many pages", q)
		}
		page := queryT(t, s, q)
		out = append(out, rkeys(page.Records)...)
		if page.Cursor == "" {
			return out
		}
		if len(page.Records) != q.Limit {
			t.Fatalf("%+v: short page %d with a cursor", q, len(page.Records))
		}
		q.Cursor = page.Cursor
	}
}

func reversed(s []string) []string {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}

func testQueryIndexedOrder(t *testing.T, s storage.Store) {
	queryFixture(t, s)
	asc := []string{"r01", "r02", "r03", "r04", "r05", "r06", "r07", "r08"}
	for _, limit := range []int{1, 3, 8, 100} {
		q := storage.RecordQuery{Collection: queryCollection, Limit: limit}
		if got := pageAll(t, s, q); !slices.Equal(got, reversed(asc)) {
			t.Fatalf("newest first, limit %d: %v", limit, got)
		}
		q.Ascending = true
		if got := pageAll(t, s, q); !slices.Equal(got, asc) {
			t.Fatalf("oldest first, limit %d: %v", limit, got)
		}
	}
	q := storage.RecordQuery{Collection: queryCollection, Filter: leaf("s", "LIKE", "%p%"), Limit: 2}
	if got := pageAll(t, s, q); !slices.Equal(got, []string{"r05", "r04", "r01"}) {
		t.Fatalf("filtered pages: %v", got)
	}

	// Ties on indexing time are ordered by URI, across pages.
	const ties = "app.test.ties"
	var ops []storage.RecordOp
	var want []string
	for i := range 9 {
		rkey := fmt.Sprintf("t%d", i)
		ops = append(ops, put(Rec("did:plc:ties", ties, rkey, base.Add(time.Duration(i/3)*time.Second), nil)))
		want = append(want, rkey)
	}
	apply(t, s, ops...)
	for _, limit := range []int{2, 4} {
		if got := pageAll(t, s, storage.RecordQuery{Collection: ties, Limit: limit, Ascending: true}); !slices.Equal(got, want) {
			t.Fatalf("ties ascending, limit %d: %v", limit, got)
		}
		if got := pageAll(t, s, storage.RecordQuery{Collection: ties, Limit: limit}); !slices.Equal(got, reversed(want)) {
			t.Fatalf("ties descending, limit %d: %v", limit, got)
		}
	}
}

func testQueryFieldSort(t *testing.T, s storage.Store) {
	queryFixture(t, s)
	cases := []struct {
		sort string
		asc  []string
		desc []string
	}{
		// Numbers, then strings, then booleans, then the rest by URI
		// (alice's odd records before bob's even ones).
		{"n", []string{"r04", "r01", "r08", "r02", "r07", "r03", "r05", "r06"},
			[]string{"r07", "r02", "r08", "r01", "r04", "r03", "r06", "r05"}},
		{"b", []string{"r07", "r02", "r01", "r03", "r05", "r04", "r06", "r08"},
			[]string{"r07", "r01", "r02", "r08", "r06", "r04", "r05", "r03"}},
		{"s", []string{"r07", "r05", "r02", "r08", "r01", "r03", "r04", "r06"},
			[]string{"r04", "r03", "r01", "r08", "r02", "r05", "r07", "r06"}},
		{"obj.v", []string{"r01", "r02", "r03", "r05", "r07", "r04", "r06", "r08"},
			[]string{"r01", "r02", "r08", "r06", "r04", "r07", "r05", "r03"}},
	}
	for _, tc := range cases {
		for _, limit := range []int{3, 100} {
			q := storage.RecordQuery{Collection: queryCollection, Sort: tc.sort, Ascending: true, Limit: limit}
			if got := pageAll(t, s, q); !slices.Equal(got, tc.asc) {
				t.Errorf("sort %s ascending, limit %d: %v, want %v", tc.sort, limit, got, tc.asc)
			}
			q.Ascending = false
			if got := pageAll(t, s, q); !slices.Equal(got, tc.desc) {
				t.Errorf("sort %s descending, limit %d: %v, want %v", tc.sort, limit, got, tc.desc)
			}
		}
	}
	q := storage.RecordQuery{Collection: queryCollection, Sort: "n", Filter: leaf("n", ">", 0.0), Limit: 2, Ascending: true}
	if got := pageAll(t, s, q); !slices.Equal(got, []string{"r01", "r08", "r02", "r07"}) {
		t.Fatalf("filtered field sort: %v", got)
	}
}

func testQueryCursorScope(t *testing.T, s storage.Store) {
	ctx := context.Background()
	queryFixture(t, s)
	q := storage.RecordQuery{Collection: queryCollection, Filter: leaf("s", "!=", "x"), Limit: 2}
	first := queryT(t, s, q)
	fieldQ := storage.RecordQuery{Collection: queryCollection, Sort: "n", Limit: 2}
	fieldFirst := queryT(t, s, fieldQ)
	if first.Cursor == "" || fieldFirst.Cursor == "" {
		t.Fatal("no cursors")
	}
	other := map[string]storage.RecordQuery{
		"other collection": {Collection: "app.test.other", Filter: q.Filter, Limit: 2, Cursor: first.Cursor},
		"other filter":     {Collection: queryCollection, Filter: leaf("s", "!=", "y"), Limit: 2, Cursor: first.Cursor},
		"no filter":        {Collection: queryCollection, Limit: 2, Cursor: first.Cursor},
		"other DID":        {Collection: queryCollection, DID: "did:plc:bob", Filter: q.Filter, Limit: 2, Cursor: first.Cursor},
		"other direction":  {Collection: queryCollection, Filter: q.Filter, Ascending: true, Limit: 2, Cursor: first.Cursor},
		"field cursor":     {Collection: queryCollection, Filter: q.Filter, Limit: 2, Cursor: fieldFirst.Cursor},
		"other sort field": {Collection: queryCollection, Sort: "s", Limit: 2, Cursor: fieldFirst.Cursor},
		"truncated":        {Collection: queryCollection, Filter: q.Filter, Limit: 2, Cursor: first.Cursor[:len(first.Cursor)-2]},
	}
	for name, oq := range other {
		_, err := s.QueryRecords(ctx, oq)
		if !errors.Is(err, storage.ErrInvalidQuery) || !errors.Is(err, storage.ErrInvalidCursor) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// The limit is not part of the scope.
	q.Cursor, q.Limit = first.Cursor, 5
	if got := rkeys(queryT(t, s, q).Records); !slices.Equal(got, []string{"r05", "r04", "r03", "r02", "r01"}) {
		t.Fatalf("continued with another limit: %v", got)
	}
}

func testQueryLimits(t *testing.T, s storage.Store) {
	const coll = "app.test.many"
	var ops []storage.RecordOp
	// Padded so that a full page outgrows a store's first buffer.
	pad := strings.Repeat("p", 200)
	for i := range 105 {
		ops = append(ops, put(Rec("did:plc:many", coll, fmt.Sprintf("m%03d", i), base.Add(time.Duration(i)*time.Millisecond), map[string]any{"i": i, "pad": pad})))
	}
	apply(t, s, ops...)
	for limit, want := range map[int]int{0: storage.DefaultQueryLimit, -5: storage.DefaultQueryLimit, 7: 7,
		500: storage.MaxQueryLimit, storage.MaxQueryLimit: storage.MaxQueryLimit} {
		for _, sort := range []string{"", "i"} {
			page := queryT(t, s, storage.RecordQuery{Collection: coll, Limit: limit, Sort: sort})
			if len(page.Records) != want || page.Cursor == "" {
				t.Errorf("limit %d sort %q: %d records, cursor %q", limit, sort, len(page.Records), page.Cursor)
			}
		}
	}
	for _, sort := range []string{"", "i"} {
		page := queryT(t, s, storage.RecordQuery{Collection: coll, Limit: 100, Sort: sort})
		next := queryT(t, s, storage.RecordQuery{Collection: coll, Limit: 100, Sort: sort, Cursor: page.Cursor})
		if len(next.Records) != 5 || next.Cursor != "" || next.Records[4].RKey != "m000" {
			t.Errorf("sort %q: last page %v cursor %q", sort, rkeys(next.Records), next.Cursor)
		}
		// The records are the caller's: later reads leave them intact.
		for _, r := range append(page.Records, next.Records...) {
			want := fmt.Sprintf(`{"$type":%q,"i":%d,"pad":%q}`, coll, rkeyNumber(t, r.RKey), pad)
			sameJSON(t, r.Value, []byte(want))
		}
	}
	if n, err := s.CountMatching(context.Background(), storage.RecordQuery{Collection: coll, Limit: 1}); err != nil || n != 105 {
		t.Fatalf("count ignores the limit: %d %v", n, err)
	}
}

func testGetRecords(t *testing.T, s storage.Store) {
	ctx := context.Background()
	fx := queryFixture(t, s)
	missing := "at://did:plc:nobody/" + queryCollection + "/zzz"
	got, err := s.GetRecords(ctx, []string{fx["r01"].URI, fx["r03"].URI, missing, fx["r01"].URI})
	if err != nil || len(got) != 2 {
		t.Fatalf("GetRecords: %v %v", got, err)
	}
	for _, k := range []string{"r01", "r03"} {
		want, _ := s.GetRecord(ctx, fx[k].URI)
		r := got[fx[k].URI]
		sameJSON(t, r.Value, want.Value)
		if r.RKey != k || r.DID != want.DID || r.CID != want.CID || !r.IndexedAt.Equal(want.IndexedAt) {
			t.Fatalf("%s: %+v", k, r)
		}
	}
	if got, err := s.GetRecords(ctx, nil); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("no URIs: %v %v", got, err)
	}
	uris := make([]string, storage.MaxGetRecords)
	for i := range uris {
		uris[i] = fmt.Sprintf("at://did:plc:x/%s/%d", queryCollection, i)
	}
	uris[0] = fx["r02"].URI
	if got, err := s.GetRecords(ctx, uris); err != nil || len(got) != 1 {
		t.Fatalf("%d URIs: %d records, %v", len(uris), len(got), err)
	}
	uris = append(uris, "at://one/more/uri")
	if _, err := s.GetRecords(ctx, uris); !errors.Is(err, storage.ErrInvalidQuery) ||
		!strings.Contains(err.Error(), fmt.Sprint(storage.MaxGetRecords)) {
		t.Fatalf("too many URIs: %v", err)
	}
}

// rkeyNumber is the number in a record key of testQueryLimits (m007: 7).
func rkeyNumber(t *testing.T, rkey string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscanf(rkey, "m%03d", &n); err != nil {
		t.Fatalf("record key %q: %v", rkey, err)
	}
	return n
}
