package storagetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lexview/lexview/storage"
)

// Suite is one named suite of this package.
type Suite struct {
	Name string
	Run  func(t *testing.T, open func(t testing.TB) storage.Store)
}

// Suites returns every suite of this package, in the order RunAll runs
// them.
func Suites() []Suite {
	return []Suite{
		{"Core", Run},
		{"Access", RunAccess},
		{"Admin", RunAdmin},
		{"Backfill", RunBackfill},
		{"OAuth", RunOAuth},
		{"Scripts", RunScripts},
		{"Identity", RunIdentity},
		{"InstanceKey", RunInstanceKey},
		{"OAuthClient", RunOAuthClient},
		{"LinkedRepos", RunLinkedRepos},
		{"Labels", RunLabels},
		{"Plugins", RunPlugins},
		{"NetworkLexicons", RunNetworkLexicons},
		{"Links", RunLinks},
		{"FieldIndexes", RunFieldIndexes},
		{"Search", RunSearch},
		{"Validation", RunValidation},
	}
}

// RunAll runs every suite of this package against stores made by open,
// each as a subtest named after it (Core, Access, Admin, Backfill, OAuth,
// Scripts, Identity, InstanceKey, OAuthClient, LinkedRepos, Labels,
// Plugins, NetworkLexicons, Links, FieldIndexes, Search, Validation), each of its tests on a
// fresh store. A storage.Store implementation, Lexview's or an embedder's
// own, must pass it:
//
//	func TestStore(t *testing.T) {
//		storagetest.RunAll(t, func(t testing.TB) storage.Store { return openMine(t) })
//	}
//
// Select one suite or test with -run, e.g. -run 'TestStore/OAuth/'.
func RunAll(t *testing.T, open func(t testing.TB) storage.Store) {
	for _, s := range Suites() {
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			s.Run(t, open)
		})
	}
}

// Run runs the core storage suite against stores made by open: records,
// listings, stream cursors and lexicons (RecordStore, CursorStore,
// LexiconStore). Each subtest gets a fresh store. RunAll runs it with the
// other suites.
func Run(t *testing.T, open func(t testing.TB) storage.Store) {
	tests := []storeCase{
		{"MigrateIsIdempotentAndConcurrent", testMigrate},
		{"RecordRoundTrip", testRecordRoundTrip},
		{"UpsertIsIdempotent", testUpsertIdempotent},
		{"BatchKeepsOrderPerURI", testBatchOrder},
		{"OlderRevNeverOverwrites", testRevOrdering},
		{"ReplayKeepsTheSortKey", testReplayKeepsSortKey},
		{"DeletesLeaveTombstones", testTombstones},
		{"DeleteRecordsByDID", testDeleteByDID},
		{"LargeBatch", testLargeBatch},
		{"ListNewestFirstWithKeyset", testListKeyset},
		{"ListTiesAndDIDFilter", testListTiesAndDID},
		{"ListByDIDInRecordKeyOrder", testListByDIDKeyOrder},
		{"ListEveryCollection", testListEveryCollection},
		{"ListEveryCollectionManyCollections", testListEveryCollectionMany},
		{"ListByDIDEveryCollection", testListByDIDEveryCollection},
		{"ListByCreationTime", testListByCreationTime},
		{"CreationTimeSources", testCreationTimeSources},
		{"ListKeysetMixedCreationSources", testListKeysetMixed},
		{"ListCursorStableWhileAdding", testCursorStableWhileAdding},
		{"EditKeepsCreationTime", testEditKeepsCreationTime},
		{"ScanMatchesList", testScanMatchesList},
		{"StreamCursorWithBatch", testStreamCursor},
		{"RepoStateWithBatch", testRepoState},
		{"AccountStateWithBatch", testAccountState},
		{"LexiconRevisions", testLexiconRevisions},
		{"LexiconListAndDelete", testLexiconListDelete},
	}
	runCases(t, open, tests)
}

// storeCase is one subtest of a suite, run on a fresh store.
type storeCase struct {
	name string
	fn   func(t *testing.T, s storage.Store)
}

// runCases runs each case as a parallel subtest on a fresh store from
// open: the stores share nothing, and most of a case's time is the
// database's, so cases overlap well (go test -parallel bounds them).
func runCases(t *testing.T, open func(t testing.TB) storage.Store, cases []storeCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, open(t))
		})
	}
}

var base = time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)

// Rec builds a test record in collection for did with rkey.
func Rec(did, collection, rkey string, at time.Time, fields map[string]any) storage.Record {
	v := map[string]any{"$type": collection}
	for k, x := range fields {
		v[k] = x
	}
	raw, _ := json.Marshal(v)
	return storage.Record{
		URI:        fmt.Sprintf("at://%s/%s/%s", did, collection, rkey),
		DID:        did,
		Collection: collection,
		RKey:       rkey,
		CID:        "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm",
		Value:      raw,
		IndexedAt:  at,
	}
}

func apply(t *testing.T, s storage.Store, ops ...storage.RecordOp) {
	t.Helper()
	if err := s.ApplyBatch(context.Background(), storage.Batch{Ops: ops}); err != nil {
		t.Fatalf("ApplyBatch: %v", err)
	}
}

func put(r storage.Record) storage.RecordOp { return storage.RecordOp{Record: r} }
func del(uri string) storage.RecordOp {
	return storage.RecordOp{Delete: true, Record: storage.Record{URI: uri}}
}

func count(t *testing.T, s storage.Store, collection string) int64 {
	t.Helper()
	n, err := s.CountRecords(context.Background(), collection)
	if err != nil {
		t.Fatalf("CountRecords: %v", err)
	}
	return n
}

func sameJSON(t *testing.T, got, want []byte) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("stored JSON does not parse: %v (%s)", err, got)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("want JSON does not parse: %v", err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("JSON differs:\n got %s\nwant %s", got, want)
	}
}

func testMigrate(t *testing.T, s storage.Store) {
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- s.Migrate(ctx) }()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent Migrate: %v", err)
		}
	}
	if n := count(t, s, ""); n != 0 {
		t.Fatalf("fresh store has %d records", n)
	}
}

func testRecordRoundTrip(t *testing.T, s storage.Store) {
	ctx := context.Background()
	r := Rec("did:plc:alice", "app.test.post", "3kabc", base, map[string]any{
		"text": "héllo ✓ \u2028 \"quoted\"", "n": 42, "nested": map[string]any{"list": []any{1, "two", nil}},
	})
	r.Rev = "3kaaaaaaaaaa2"
	apply(t, s, put(r))
	got, err := s.GetRecord(ctx, r.URI)
	if err != nil {
		t.Fatalf("GetRecord: %v", err)
	}
	if got.URI != r.URI || got.DID != r.DID || got.Collection != r.Collection || got.RKey != r.RKey ||
		got.CID != r.CID || got.Rev != r.Rev {
		t.Fatalf("metadata differs: got %+v want %+v", got, r)
	}
	if !got.IndexedAt.Equal(base) {
		t.Fatalf("IndexedAt = %v, want %v (microsecond precision)", got.IndexedAt, base)
	}
	sameJSON(t, got.Value, r.Value)
	if _, err := s.GetRecord(ctx, "at://did:plc:alice/app.test.post/missing"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("GetRecord(missing) = %v, want ErrNotFound", err)
	}
}

func testUpsertIdempotent(t *testing.T, s storage.Store) {
	ctx := context.Background()
	r := Rec("did:plc:alice", "app.test.post", "1", base, map[string]any{"v": 1})
	apply(t, s, put(r))
	apply(t, s, put(r))
	r2 := Rec("did:plc:alice", "app.test.post", "1", base.Add(time.Second), map[string]any{"v": 2})
	r2.CID = "bafyreidifferent"
	apply(t, s, put(r2))
	if n := count(t, s, "app.test.post"); n != 1 {
		t.Fatalf("count = %d after three upserts of one URI", n)
	}
	got, err := s.GetRecord(ctx, r.URI)
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, got.Value, r2.Value)
	if got.CID != r2.CID || !got.IndexedAt.Equal(r2.IndexedAt) {
		t.Fatalf("update not applied: %+v", got)
	}
}

func testBatchOrder(t *testing.T, s storage.Store) {
	ctx := context.Background()
	a := Rec("did:plc:a", "app.test.post", "a", base, nil)
	b := Rec("did:plc:a", "app.test.post", "b", base, nil)
	b2 := Rec("did:plc:a", "app.test.post", "b", base, map[string]any{"edited": true})
	// a: create then delete -> absent. b: delete, create, update -> b2.
	apply(t, s, put(a), del(b.URI), put(b), del(a.URI), put(b2))
	if _, err := s.GetRecord(ctx, a.URI); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("created-then-deleted record exists: %v", err)
	}
	got, err := s.GetRecord(ctx, b.URI)
	if err != nil {
		t.Fatalf("deleted-then-created record missing: %v", err)
	}
	sameJSON(t, got.Value, b2.Value)
	// Deleting an absent record is not an error.
	apply(t, s, del("at://did:plc:a/app.test.post/never"))
}

func testRevOrdering(t *testing.T, s storage.Store) {
	ctx := context.Background()
	newer := Rec("did:plc:a", "app.test.post", "r", base, map[string]any{"v": "new"})
	newer.Rev = "3kbbbbbbbbbb2"
	older := Rec("did:plc:a", "app.test.post", "r", base.Add(time.Minute), map[string]any{"v": "old"})
	older.Rev = "3kaaaaaaaaaa2"
	apply(t, s, put(newer))
	apply(t, s, put(older))
	got, err := s.GetRecord(ctx, newer.URI)
	if err != nil {
		t.Fatal(err)
	}
	if got.Rev != newer.Rev {
		t.Fatalf("older rev overwrote newer: stored rev %s", got.Rev)
	}
	sameJSON(t, got.Value, newer.Value)
}

// testReplayKeepsSortKey: events replayed after a reconnect (the same rev
// and CID) change nothing, so a client walking a list by cursor meanwhile
// loses nothing; a record's indexed_at moves only when its CID does, and
// with it the creation time of a record that states none (these records
// have neither TID keys nor createdAt).
func testReplayKeepsSortKey(t *testing.T, s storage.Store) {
	ctx := context.Background()
	var recs []storage.Record
	for i, rkey := range []string{"a", "b", "c"} {
		r := Rec("did:plc:a", "app.test.post", rkey, base.Add(time.Duration(i)*time.Minute), map[string]any{"v": rkey})
		r.Rev = "3kaaaaaaaaaa2"
		recs = append(recs, r)
		apply(t, s, put(r))
	}
	order := listAll(t, s, storage.ListQuery{Collection: "app.test.post", Limit: 2})
	check := func(what string, uri string, want storage.Record) {
		t.Helper()
		got, err := s.GetRecord(ctx, uri)
		if err != nil {
			t.Fatal(err)
		}
		if got.Rev != want.Rev || got.CID != want.CID || !got.IndexedAt.Equal(want.IndexedAt) {
			t.Fatalf("%s: stored rev %s cid %s indexed_at %v, want %s %s %v", what, got.Rev, got.CID, got.IndexedAt,
				want.Rev, want.CID, want.IndexedAt)
		}
		if again := listAll(t, s, storage.ListQuery{Collection: "app.test.post", Limit: 2}); !slices.Equal(again, order) {
			t.Fatalf("%s: list order %v, was %v", what, again, order)
		}
	}
	// The same rev and CID, seen again an hour later: a no-op.
	replay := recs[0]
	replay.IndexedAt = base.Add(time.Hour)
	apply(t, s, put(replay))
	check("replay", replay.URI, recs[0])
	// A newer commit that leaves the record as it was: the rev moves on,
	// the sort key does not.
	same := withRev(recs[0], "3kbbbbbbbbbb2")
	same.IndexedAt = base.Add(2 * time.Hour)
	apply(t, s, put(same))
	check("unchanged record at a newer rev", same.URI, withRev(recs[0], "3kbbbbbbbbbb2"))
	// The record itself changes: now it moves to the front.
	edited := Rec("did:plc:a", "app.test.post", "a", base.Add(3*time.Hour), map[string]any{"v": "edited"})
	edited.Rev, edited.CID = "3kcccccccccc2", "bafyreidifferent"
	apply(t, s, put(edited))
	got, err := s.GetRecord(ctx, edited.URI)
	if err != nil || !got.IndexedAt.Equal(edited.IndexedAt) || got.CID != edited.CID {
		t.Fatalf("an edit was not applied: %+v %v", got, err)
	}
	if again := listAll(t, s, storage.ListQuery{Collection: "app.test.post", Limit: 2}); again[0] != edited.URI {
		t.Fatalf("an edited record did not move to the front: %v", again)
	}
}

func testLargeBatch(t *testing.T, s storage.Store) {
	ops := make([]storage.RecordOp, 0, 1000)
	for i := range 1000 {
		ops = append(ops, put(Rec(fmt.Sprintf("did:plc:u%d", i%7), "app.test.bulk", fmt.Sprintf("k%04d", i), base, map[string]any{"i": i})))
	}
	apply(t, s, ops...)
	if n := count(t, s, "app.test.bulk"); n != 1000 {
		t.Fatalf("count = %d, want 1000", n)
	}
	if n := count(t, s, "app.test.other"); n != 0 {
		t.Fatalf("other collection count = %d", n)
	}
}

// listAll pages through q and returns the URIs in order.
func listAll(t *testing.T, s storage.Store, q storage.ListQuery) []string {
	t.Helper()
	var uris []string
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatal("pagination does not terminate")
		}
		page, err := s.ListRecords(context.Background(), q)
		if err != nil {
			t.Fatalf("ListRecords: %v", err)
		}
		if len(page.Records) > q.Limit {
			t.Fatalf("page of %d exceeds limit %d", len(page.Records), q.Limit)
		}
		for _, r := range page.Records {
			uris = append(uris, r.URI)
		}
		if page.Next == nil {
			return uris
		}
		if len(page.Records) != q.Limit {
			t.Fatalf("short page (%d of %d) still has a next position", len(page.Records), q.Limit)
		}
		// Positions survive the opaque cursor round trip.
		p, err := storage.DecodeCursor("scope", storage.EncodeCursor("scope", *page.Next))
		if err != nil {
			t.Fatalf("cursor round trip: %v", err)
		}
		q.After = &p
	}
}

func testListKeyset(t *testing.T, s storage.Store) {
	var ops []storage.RecordOp
	var want []string
	for i := range 25 {
		r := Rec("did:plc:a", "app.test.post", fmt.Sprintf("k%02d", i), base.Add(time.Duration(i)*time.Millisecond), nil)
		ops = append(ops, put(r))
		want = append([]string{r.URI}, want...) // newest first
	}
	ops = append(ops, put(Rec("did:plc:a", "app.test.other", "x", base.Add(time.Hour), nil)))
	apply(t, s, ops...)
	for _, limit := range []int{1, 7, 25, 100} {
		got := listAll(t, s, storage.ListQuery{Collection: "app.test.post", Limit: limit})
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("limit %d: got %v\nwant %v", limit, got, want)
		}
	}
	page, err := s.ListRecords(context.Background(), storage.ListQuery{Collection: "app.test.post", Limit: 25})
	if err != nil || page.Next != nil {
		t.Fatalf("exact final page must have no next position: %v %v", page.Next, err)
	}
	page, err = s.ListRecords(context.Background(), storage.ListQuery{Collection: "app.test.none", Limit: 5})
	if err != nil || len(page.Records) != 0 || page.Next != nil {
		t.Fatalf("empty collection: %+v %v", page, err)
	}
}

func testListTiesAndDID(t *testing.T, s storage.Store) {
	// Every record shares one timestamp, so order falls to the URI.
	var ops []storage.RecordOp
	var alice []string
	for i := range 30 {
		did := "did:plc:bob"
		if i%3 == 0 {
			did = "did:plc:alice"
		}
		r := Rec(did, "app.test.post", fmt.Sprintf("k%02d", i), base, nil)
		ops = append(ops, put(r))
		if did == "did:plc:alice" {
			alice = append([]string{r.URI}, alice...)
		}
	}
	apply(t, s, ops...)
	all := listAll(t, s, storage.ListQuery{Collection: "app.test.post", Limit: 4})
	if len(all) != 30 {
		t.Fatalf("listed %d of 30 tied records", len(all))
	}
	seen := map[string]bool{}
	for i, u := range all {
		if seen[u] {
			t.Fatalf("duplicate %s", u)
		}
		seen[u] = true
		if i > 0 && all[i-1] < u {
			t.Fatalf("ties not ordered by URI descending: %s before %s", all[i-1], u)
		}
	}
	got := listAll(t, s, storage.ListQuery{Collection: "app.test.post", DID: "did:plc:alice", Limit: 3})
	if !reflect.DeepEqual(got, alice) {
		t.Fatalf("did filter: got %v want %v", got, alice)
	}
}

// testListByDIDKeyOrder: one repository's records come newest record key
// first (as com.atproto.repo.listRecords lists them), whatever their
// indexing times, and no neighbour in URI order leaks in.
func testListByDIDKeyOrder(t *testing.T, s storage.Store) {
	var want []string
	var ops []storage.RecordOp
	for i := range 12 {
		// Later keys were indexed earlier.
		r := Rec("did:plc:alice", "app.test.post", fmt.Sprintf("3k%02d", i), base.Add(-time.Duration(i)*time.Minute), nil)
		ops = append(ops, put(r))
		want = append([]string{r.URI}, want...)
	}
	for _, n := range []struct{ did, collection string }{
		{"did:plc:alic", "app.test.post"}, {"did:plc:alice2", "app.test.post"},
		{"did:plc:alice", "app.test.pos"}, {"did:plc:alice", "app.test.posts"}, {"did:plc:alice", "app.test.other"},
	} {
		ops = append(ops, put(Rec(n.did, n.collection, "3k99", base, nil)))
	}
	apply(t, s, ops...)
	for _, limit := range []int{1, 5, 12, 100} {
		got := listAll(t, s, storage.ListQuery{Collection: "app.test.post", DID: "did:plc:alice", Limit: limit})
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("limit %d: got %v\nwant %v", limit, got, want)
		}
	}
	page, err := s.ListRecords(context.Background(), storage.ListQuery{Collection: "app.test.post", DID: "did:plc:nobody", Limit: 5})
	if err != nil || len(page.Records) != 0 || page.Next != nil {
		t.Fatalf("unknown DID: %+v %v", page, err)
	}
}

// newestFirst sorts records as listings without a DID order them, for
// records created when indexed (neither a TID key nor createdAt):
// IndexedAt, then URI, descending. It returns their URIs.
func newestFirst(recs []storage.Record) []string {
	recs = slices.Clone(recs)
	slices.SortFunc(recs, func(a, b storage.Record) int {
		if c := b.IndexedAt.Compare(a.IndexedAt); c != 0 {
			return c
		}
		return strings.Compare(b.URI, a.URI)
	})
	uris := make([]string, len(recs))
	for i, r := range recs {
		uris[i] = r.URI
	}
	return uris
}

// testListEveryCollection: without a collection, a listing merges every
// collection newest first, ties broken by URI across collections, and
// pages by the same keyset positions.
func testListEveryCollection(t *testing.T, s storage.Store) {
	ctx := context.Background()
	page, err := s.ListRecords(ctx, storage.ListQuery{Limit: 5})
	if err != nil || len(page.Records) != 0 || page.Next != nil {
		t.Fatalf("empty store: %+v %v", page, err)
	}
	collections := []string{"app.test.post", "app.test.like", "app.test.a", "com.example.z"}
	var recs []storage.Record
	for i := range 40 {
		c := collections[(i*7)%len(collections)]
		at := base.Add(time.Duration(i%13) * time.Millisecond) // many ties, within and across collections
		recs = append(recs, Rec(fmt.Sprintf("did:plc:u%d", i%3), c, fmt.Sprintf("k%02d", i), at, nil))
	}
	var ops []storage.RecordOp
	for _, r := range recs {
		ops = append(ops, put(r))
	}
	apply(t, s, ops...)
	want := newestFirst(recs)
	for _, limit := range []int{1, 3, 7, 40, 100} {
		if got := listAll(t, s, storage.ListQuery{Limit: limit}); !reflect.DeepEqual(got, want) {
			t.Fatalf("limit %d: got %v\nwant %v", limit, got, want)
		}
	}
	page, err = s.ListRecords(ctx, storage.ListQuery{Limit: 40})
	if err != nil || len(page.Records) != 40 || page.Next != nil {
		t.Fatalf("exact final page: %d records, next %v, %v", len(page.Records), page.Next, err)
	}
	first := page.Records[0]
	if first.URI != want[0] || first.Collection == "" || first.DID == "" || len(first.Value) == 0 || first.IndexedAt.IsZero() {
		t.Fatalf("first record: %+v", first)
	}

	// Writes move records: an update is newest, a deleted record and an
	// emptied collection are gone.
	moved := recs[0]
	moved.IndexedAt, moved.CID = base.Add(time.Hour), "bafyreidifferent"
	apply(t, s, put(moved), del(recs[1].URI))
	if _, err := s.DeleteCollection(ctx, "app.test.a"); err != nil {
		t.Fatal(err)
	}
	recs[0] = moved
	var left []storage.Record
	for _, r := range recs {
		if r.URI != recs[1].URI && r.Collection != "app.test.a" {
			left = append(left, r)
		}
	}
	got := listAll(t, s, storage.ListQuery{Limit: 6})
	if want := newestFirst(left); !reflect.DeepEqual(got, want) || got[0] != moved.URI {
		t.Fatalf("after writes: got %v\nwant %v", got, want)
	}
}

// testListEveryCollectionMany lists across more collections than one
// statement of a merging backend may take at once.
func testListEveryCollectionMany(t *testing.T, s storage.Store) {
	var recs []storage.Record
	var ops []storage.RecordOp
	for i := range 150 {
		c := fmt.Sprintf("app.test.c%03d", i)
		for j := range 2 {
			// Timestamps interleave collections: c000 holds the newest and
			// the oldest record.
			at := base.Add(time.Duration((j*150+i)*37%300) * time.Millisecond)
			r := Rec("did:plc:alice", c, fmt.Sprintf("k%d", j), at, nil)
			recs = append(recs, r)
			ops = append(ops, put(r))
		}
	}
	apply(t, s, ops...)
	want := newestFirst(recs)
	for _, limit := range []int{13, 100} {
		if got := listAll(t, s, storage.ListQuery{Limit: limit}); !reflect.DeepEqual(got, want) {
			t.Fatalf("limit %d: listed %d records, want %d, or out of order", limit, len(got), len(want))
		}
	}
}

// testListByDIDEveryCollection: with a DID and no collection, the
// repository's records of every collection come by URI descending
// (collection, then record key), and no other repository leaks in.
func testListByDIDEveryCollection(t *testing.T, s storage.Store) {
	var want []string
	var ops []storage.RecordOp
	for _, c := range []string{"app.test.a", "app.test.post", "app.test.posts", "com.example.z"} {
		for i := range 4 {
			r := Rec("did:plc:alice", c, fmt.Sprintf("3k%02d", i), base.Add(-time.Duration(i)*time.Minute), nil)
			ops = append(ops, put(r))
			want = append(want, r.URI)
		}
	}
	slices.Sort(want)
	slices.Reverse(want)
	for _, did := range []string{"did:plc:alic", "did:plc:alice2", "did:plc:alicf", "did:plc:bob"} {
		ops = append(ops, put(Rec(did, "app.test.post", "3k99", base.Add(time.Hour), nil)))
	}
	apply(t, s, ops...)
	for _, limit := range []int{1, 5, 16, 100} {
		got := listAll(t, s, storage.ListQuery{DID: "did:plc:alice", Limit: limit})
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("limit %d: got %v\nwant %v", limit, got, want)
		}
	}
	page, err := s.ListRecords(context.Background(), storage.ListQuery{DID: "did:plc:nobody", Limit: 5})
	if err != nil || len(page.Records) != 0 || page.Next != nil {
		t.Fatalf("unknown DID: %+v %v", page, err)
	}
}

func testStreamCursor(t *testing.T, s storage.Store) {
	ctx := context.Background()
	if _, err := s.GetStreamCursor(ctx, "source:jetstream"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("GetStreamCursor on empty store = %v", err)
	}
	r := Rec("did:plc:a", "app.test.post", "c", base, nil)
	for _, v := range []int64{100, 250} {
		err := s.ApplyBatch(ctx, storage.Batch{Ops: []storage.RecordOp{put(r)}, Cursors: []storage.StreamCursor{{Name: "source:jetstream", Value: v}}})
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.GetStreamCursor(ctx, "source:jetstream")
		if err != nil || got != v {
			t.Fatalf("cursor = %d, %v; want %d", got, err, v)
		}
	}
	// A cursor alone (no records) is stored too.
	if err := s.ApplyBatch(ctx, storage.Batch{Cursors: []storage.StreamCursor{{Name: "source:jetstream", Value: 300}}}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetStreamCursor(ctx, "source:jetstream"); got != 300 {
		t.Fatalf("cursor-only batch: %d", got)
	}
	// One batch carries the positions of several streams, each kept under
	// its own name; of two with one name, the later wins.
	err := s.ApplyBatch(ctx, storage.Batch{Ops: []storage.RecordOp{put(r)}, Cursors: []storage.StreamCursor{
		{Name: "source:labeler", Value: 7}, {Name: "source:jetstream", Value: 310}, {Name: "source:labeler", Value: 9},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]int64{"source:jetstream": 310, "source:labeler": 9} {
		if got, err := s.GetStreamCursor(ctx, name); err != nil || got != want {
			t.Fatalf("%s = %d, %v; want %d", name, got, err, want)
		}
	}
}

// testRepoState: repository sync states are stored with a batch (alone
// or with records and a cursor), one per repository, and a stored state is
// replaced only by a newer revision.
func testRepoState(t *testing.T, s storage.Store) {
	ctx := context.Background()
	if _, err := s.GetRepoState(ctx, "did:plc:a"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("GetRepoState on empty store = %v", err)
	}
	r := Rec("did:plc:a", "app.test.post", "c", base, nil)
	a1 := storage.RepoState{DID: "did:plc:a", Rev: "3laaaaaaaaa22", Data: "bafyA1"}
	err := s.ApplyBatch(ctx, storage.Batch{Ops: []storage.RecordOp{put(r)},
		Cursors: []storage.StreamCursor{{Name: "source:firehose", Value: 5}}, Repos: []storage.RepoState{a1}})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetRepoState(ctx, "did:plc:a"); err != nil || got != a1 {
		t.Fatalf("GetRepoState = %+v, %v; want %+v", got, err, a1)
	}
	// A batch of states alone; of two for one repository the newer wins,
	// and an older revision never replaces a stored newer one.
	a2 := storage.RepoState{DID: "did:plc:a", Rev: "3lbbbbbbbbb22", Data: "bafyA2"}
	older := storage.RepoState{DID: "did:plc:a", Rev: "3l2222222222a", Data: "bafyOld"}
	b1 := storage.RepoState{DID: "did:plc:b", Rev: "3laaaaaaaaa22", Data: "bafyB1"}
	if err := s.ApplyBatch(ctx, storage.Batch{Repos: []storage.RepoState{a2, b1, older}}); err != nil {
		t.Fatal(err)
	}
	if err := s.ApplyBatch(ctx, storage.Batch{Repos: []storage.RepoState{a1}}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []storage.RepoState{a2, b1} {
		if got, err := s.GetRepoState(ctx, want.DID); err != nil || got != want {
			t.Fatalf("GetRepoState(%s) = %+v, %v; want %+v", want.DID, got, err, want)
		}
	}
	if got, _ := s.GetStreamCursor(ctx, "source:firehose"); got != 5 {
		t.Fatalf("cursor stored with the state: %d", got)
	}
}

var lexDoc = json.RawMessage(`{"lexicon": 1, "id": "app.test.post", "defs": {"main": {"type": "record", "key": "tid", "record": {"type": "object", "properties": {}}}}}`)

func testLexiconRevisions(t *testing.T, s storage.Store) {
	ctx := context.Background()
	l := storage.Lexicon{ID: "app.test.post", Type: "record", JSON: lexDoc, Backfill: true}
	first, created, err := s.PutLexicon(ctx, l)
	if err != nil || !created || first.Revision != 1 {
		t.Fatalf("first put: rev %d created %v err %v", first.Revision, created, err)
	}
	if first.CreatedAt.IsZero() || !first.CreatedAt.Equal(first.UpdatedAt) {
		t.Fatalf("timestamps: %+v", first)
	}
	time.Sleep(2 * time.Millisecond)
	l.Backfill = false
	l.TargetCollection = "app.test.post"
	l.Script = "function handle() return {} end"
	second, created, err := s.PutLexicon(ctx, l)
	if err != nil || created || second.Revision != 2 {
		t.Fatalf("second put: rev %d created %v err %v", second.Revision, created, err)
	}
	if !second.CreatedAt.Equal(first.CreatedAt) || !second.UpdatedAt.After(first.UpdatedAt) {
		t.Fatalf("re-upload timestamps: first %+v second %+v", first, second)
	}
	got, err := s.GetLexicon(ctx, l.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Revision != 2 || got.Backfill || got.TargetCollection != "app.test.post" || got.Script != l.Script ||
		got.IndexHook != "" || got.Type != "record" {
		t.Fatalf("stored lexicon: %+v", got)
	}
	sameJSON(t, got.JSON, lexDoc)
}

func testLexiconListDelete(t *testing.T, s storage.Store) {
	ctx := context.Background()
	for _, id := range []string{"b.test.q", "a.test.q"} {
		if _, _, err := s.PutLexicon(ctx, storage.Lexicon{ID: id, Type: "query", JSON: json.RawMessage(`{"lexicon":1,"id":"` + id + `"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	list, err := s.ListLexicons(ctx)
	if err != nil || len(list) != 2 || list[0].ID != "a.test.q" || list[1].ID != "b.test.q" {
		t.Fatalf("list: %+v %v", list, err)
	}
	if err := s.DeleteLexicon(ctx, "a.test.q"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteLexicon(ctx, "a.test.q"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("second delete = %v", err)
	}
	if _, err := s.GetLexicon(ctx, "a.test.q"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("get deleted = %v", err)
	}
	again, created, err := s.PutLexicon(ctx, storage.Lexicon{ID: "a.test.q", Type: "query", JSON: json.RawMessage(`{"lexicon":1,"id":"a.test.q"}`)})
	if err != nil || !created || again.Revision != 1 {
		t.Fatalf("re-create after delete: %+v %v %v", again, created, err)
	}
}

func delRev(uri, rev string) storage.RecordOp {
	return storage.RecordOp{Delete: true, Record: storage.Record{URI: uri, Rev: rev}}
}

func withRev(r storage.Record, rev string) storage.Record {
	r.Rev = rev
	return r
}

func exists(t *testing.T, s storage.Store, uri string) bool {
	t.Helper()
	_, err := s.GetRecord(context.Background(), uri)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		t.Fatal(err)
	}
	return err == nil
}

func testTombstones(t *testing.T, s storage.Store) {
	ctx := context.Background()
	r := Rec("did:plc:a", "app.test.post", "t1", base, nil)
	// A delete at rev 3 removes the rev-2 record and leaves a tombstone.
	apply(t, s, put(withRev(r, "3kaaaaaaaaaa2")))
	apply(t, s, delRev(r.URI, "3kaaaaaaaaaa3"))
	if exists(t, s, r.URI) {
		t.Fatal("delete did not remove the record")
	}
	// A replayed older create (rev 2) does not resurrect it, in any batch.
	apply(t, s, put(withRev(r, "3kaaaaaaaaaa2")))
	if exists(t, s, r.URI) {
		t.Fatal("an older write resurrected a deleted record")
	}
	// A newer create (rev 4) does.
	apply(t, s, put(withRev(r, "3kaaaaaaaaaa4")))
	if !exists(t, s, r.URI) {
		t.Fatal("a newer write after a delete was refused")
	}
	// An older delete (rev 3, replayed) does not remove the rev-4 record.
	apply(t, s, delRev(r.URI, "3kaaaaaaaaaa3"))
	if !exists(t, s, r.URI) {
		t.Fatal("an older delete removed a newer record")
	}
	// Writes without a rev (imports) are not subject to tombstones.
	u := Rec("did:plc:a", "app.test.post", "t2", base, nil)
	apply(t, s, put(withRev(u, "3kaaaaaaaaaa5")), delRev(u.URI, "3kaaaaaaaaaa6"))
	apply(t, s, put(u))
	if !exists(t, s, u.URI) {
		t.Fatal("a rev-less write was blocked by a tombstone")
	}
	// Purging tombstones forgets the deletes.
	v := Rec("did:plc:a", "app.test.post", "t3", base, nil)
	apply(t, s, delRev(v.URI, "3kaaaaaaaaaa7"))
	n, err := s.PurgeTombstones(ctx, time.Now().Add(time.Hour))
	if err != nil || n < 1 {
		t.Fatalf("purge: %d %v", n, err)
	}
	apply(t, s, put(withRev(v, "3kaaaaaaaaaa2")))
	if !exists(t, s, v.URI) {
		t.Fatal("tombstone survived the purge")
	}
}

func testDeleteByDID(t *testing.T, s storage.Store) {
	ctx := context.Background()
	apply(t, s,
		put(Rec("did:plc:gone", "app.test.post", "1", base, nil)),
		put(Rec("did:plc:gone", "app.test.other", "2", base, nil)),
		put(Rec("did:plc:stays", "app.test.post", "3", base, nil)),
		put(Rec("did:plc:gone2", "app.test.post", "4", base, nil)), // shares a prefix of the DID
		put(Rec("did:plc:gon", "app.test.post", "5", base, nil)))
	n, err := s.DeleteRecordsByDID(ctx, "did:plc:gone")
	if err != nil || n != 2 {
		t.Fatalf("deleted %d, %v", n, err)
	}
	if total := count(t, s, ""); total != 3 {
		t.Fatalf("%d records left", total)
	}
}
