package storagetest

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/storage"
)

// The listing order by creation time (Record.CreatedAt): the tests Run
// runs after the other listing tests.

// TIDKey returns the TID record key of a record created at t.
func TIDKey(t time.Time, clock uint) string { return syntax.NewTIDFromTime(t, clock).String() }

// createdFirst sorts records as listings without a DID order them, by
// want[uri] (their expected CreatedAt), then URI, descending. It returns
// their URIs, or with rkeys their record keys.
func createdFirst(recs []storage.Record, want map[string]time.Time, rkeys bool) []string {
	recs = slices.Clone(recs)
	slices.SortFunc(recs, func(a, b storage.Record) int {
		return cmp.Or(want[b.URI].Compare(want[a.URI]), strings.Compare(b.URI, a.URI))
	})
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.URI
		if rkeys {
			out[i] = r.RKey
		}
	}
	return out
}

// checkListings checks every listing that orders by creation time against
// the records of collection (and, when every is set, all records of the
// store: recs then holds them all): collection pages, every-collection
// pages, and QueryRecords newest and oldest first, at several page sizes.
func checkListings(t *testing.T, s storage.Store, collection string, recs []storage.Record, want map[string]time.Time, every bool) {
	t.Helper()
	var inColl []storage.Record
	for _, r := range recs {
		if r.Collection == collection {
			inColl = append(inColl, r)
		}
	}
	wantURIs := createdFirst(inColl, want, false)
	wantKeys := createdFirst(inColl, want, true)
	for _, limit := range []int{1, 2, 3, 7, 100} {
		if got := listAll(t, s, storage.ListQuery{Collection: collection, Limit: limit}); !reflect.DeepEqual(got, wantURIs) {
			t.Fatalf("collection, limit %d:\n got %v\nwant %v", limit, got, wantURIs)
		}
		if every {
			if got, all := listAll(t, s, storage.ListQuery{Limit: limit}), createdFirst(recs, want, false); !reflect.DeepEqual(got, all) {
				t.Fatalf("every collection, limit %d:\n got %v\nwant %v", limit, got, all)
			}
		}
		if got := pageAll(t, s, storage.RecordQuery{Collection: collection, Limit: limit}); !slices.Equal(got, wantKeys) {
			t.Fatalf("query newest first, limit %d:\n got %v\nwant %v", limit, got, wantKeys)
		}
		q := storage.RecordQuery{Collection: collection, Limit: limit, Ascending: true}
		if got := pageAll(t, s, q); !slices.Equal(got, reversed(wantKeys)) {
			t.Fatalf("query oldest first, limit %d:\n got %v\nwant %v", limit, got, reversed(wantKeys))
		}
	}
	for _, r := range recs {
		got, err := s.GetRecord(context.Background(), r.URI)
		if err != nil || !got.CreatedAt.Equal(want[r.URI]) {
			t.Fatalf("%s: CreatedAt %v (%v), want %v", r.URI, got.CreatedAt, err, want[r.URI])
		}
	}
}

// testListByCreationTime: a collection backfilled in random order (the
// newest records indexed first) lists newest created first, by the time
// of its TID keys, whatever the order of indexing and whatever createdAt
// says.
func testListByCreationTime(t *testing.T, s storage.Store) {
	rng := rand.New(rand.NewPCG(1, 2))
	var recs []storage.Record
	want := map[string]time.Time{}
	for i := range 60 {
		collection := []string{"app.test.post", "app.test.like"}[i%2]
		created := base.Add(-time.Duration(60-i) * time.Hour).Add(time.Duration(rng.IntN(1000)) * time.Microsecond)
		// A createdAt that disagrees: the key wins.
		r := Rec(fmt.Sprintf("did:plc:u%d", i%4), collection, TIDKey(created, uint(i)), time.Time{},
			map[string]any{"createdAt": base.Add(-time.Duration(i) * time.Hour).Format(time.RFC3339)})
		recs = append(recs, r)
		want[r.URI] = created.Truncate(time.Microsecond)
	}
	shuffled := slices.Clone(recs)
	rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	for i := 0; i < len(shuffled); i += 7 {
		var ops []storage.RecordOp
		for j, r := range shuffled[i:min(i+7, len(shuffled))] {
			r.IndexedAt = base.Add(time.Duration(i+j) * time.Second) // fetch order
			ops = append(ops, put(r))
		}
		apply(t, s, ops...)
	}
	checkListings(t, s, "app.test.post", recs, want, true)
}

// testCreationTimeSources: where a record's creation time comes from (a
// TID key, else a createdAt datetime, else the indexing time), that it is
// never later than the indexing time, and that one repository's listing
// keeps its record-key order.
func testCreationTimeSources(t *testing.T, s storage.Store) {
	const coll = "app.test.sources"
	indexed := base.Add(time.Hour)
	t1 := time.Date(2025, 6, 1, 12, 0, 0, 123456000, time.UTC)
	cases := []struct {
		rkey   string
		fields map[string]any
		want   time.Time
	}{
		{TIDKey(t1, 7), nil, t1},
		{TIDKey(t1.Add(time.Second), 0), map[string]any{"createdAt": "2020-01-01T00:00:00Z"}, t1.Add(time.Second)},
		{"self", map[string]any{"createdAt": "2025-06-01T12:00:02.123456Z"}, t1.Add(2 * time.Second)},
		{"offset", map[string]any{"createdAt": "2025-06-01T14:00:03.123456+02:00"}, t1.Add(3 * time.Second)},
		{"no-zone", map[string]any{"createdAt": "2025-06-01T12:00:04.123456"}, t1.Add(4 * time.Second)},
		{"nanos", map[string]any{"createdAt": "2025-06-01T12:00:05.123456789Z"}, t1.Add(5 * time.Second)},
		{"year-zero", map[string]any{"createdAt": "0000-01-01T00:00:00Z"}, time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"kkkkkkkkkkkkk", map[string]any{"createdAt": "2025-06-01T12:00:06.123456Z"}, t1.Add(6 * time.Second)}, // not a TID
		{"not-a-date", map[string]any{"createdAt": "yesterday"}, indexed},
		{"number", map[string]any{"createdAt": 1748779200}, indexed},
		{"nested", map[string]any{"meta": map[string]any{"createdAt": "2025-06-01T12:00:00Z"}}, indexed},
		{"other-case", map[string]any{"CreatedAt": "2025-06-01T12:00:00Z"}, indexed},
		{"neither", nil, indexed},
		{TIDKey(indexed.Add(time.Hour), 0), nil, indexed},
		{"future", map[string]any{"createdAt": "9999-12-31T23:59:59Z"}, indexed},
	}
	var recs []storage.Record
	var ops []storage.RecordOp
	want := map[string]time.Time{}
	for _, c := range cases {
		r := Rec("did:plc:alice", coll, c.rkey, indexed, c.fields)
		recs = append(recs, r)
		ops = append(ops, put(r))
		want[r.URI] = c.want
		if got := storage.CreationTime(r.RKey, r.Value, r.IndexedAt); !got.Equal(c.want) {
			t.Fatalf("CreationTime(%s) = %v, want %v", c.rkey, got, c.want)
		}
	}
	apply(t, s, ops...)
	checkListings(t, s, coll, recs, want, true)
	got, err := s.GetRecords(context.Background(), []string{recs[2].URI})
	if err != nil || !got[recs[2].URI].CreatedAt.Equal(want[recs[2].URI]) {
		t.Fatalf("GetRecords: %+v %v", got, err)
	}

	// One repository's listing stays in record-key order, against the
	// order of creation.
	var byKey []string
	ops = nil
	for i, k := range []string{"a", "b", "c"} {
		r := Rec("did:plc:bob", coll, k, indexed, map[string]any{"createdAt": t1.Add(-time.Duration(i) * time.Minute).Format(time.RFC3339)})
		ops = append(ops, put(r))
		byKey = append([]string{r.URI}, byKey...)
	}
	apply(t, s, ops...)
	if got := listAll(t, s, storage.ListQuery{Collection: coll, DID: "did:plc:bob", Limit: 2}); !reflect.DeepEqual(got, byKey) {
		t.Fatalf("did listing: %v, want record-key order %v", got, byKey)
	}
	if got := listAll(t, s, storage.ListQuery{DID: "did:plc:bob", Limit: 2}); !reflect.DeepEqual(got, byKey) {
		t.Fatalf("did listing of every collection: %v, want record-key order %v", got, byKey)
	}
}

// testListKeysetMixed: records whose times come from all three sources,
// with ties within and across sources, page by the keyset cursor without
// loss or repetition.
func testListKeysetMixed(t *testing.T, s storage.Store) {
	t0 := base.Add(-24 * time.Hour)
	later := base.Add(time.Hour)
	var recs []storage.Record
	want := map[string]time.Time{}
	add := func(did, collection, rkey string, indexedAt time.Time, fields map[string]any, created time.Time) {
		r := Rec(did, collection, rkey, indexedAt, fields)
		recs = append(recs, r)
		want[r.URI] = created
	}
	for i := range 12 {
		did := fmt.Sprintf("did:plc:m%d", i%3)
		at := t0.Add(time.Duration(i/3) * time.Millisecond) // four times, three records each per source
		collection := []string{"app.test.mixed", "app.test.other"}[i%4/3]
		add(did, collection, TIDKey(at, uint(i)), later, nil, at)
		add(did, collection, fmt.Sprintf("created-%02d", i), later, map[string]any{"createdAt": at.Format(time.RFC3339Nano)}, at)
		add(did, collection, fmt.Sprintf("indexed-%02d", i), at, nil, at)
	}
	var ops []storage.RecordOp
	for _, r := range recs {
		ops = append(ops, put(r))
	}
	apply(t, s, ops...)
	checkListings(t, s, "app.test.mixed", recs, want, true)
}

// testCursorStableWhileAdding: a listing walked page by page while records
// arrive (newer ones, backfilled older ones) and listed records are edited
// lists every record it started with once, in order, and the older
// arrivals that fall after its position.
func testCursorStableWhileAdding(t *testing.T, s storage.Store) {
	ctx := context.Background()
	const coll = "app.test.stable"
	at := func(seconds int) time.Time { return base.Add(time.Duration(seconds) * time.Second) }
	later := base.Add(time.Hour)
	rec := func(seconds int, clock uint) storage.Record {
		return Rec("did:plc:alice", coll, TIDKey(at(seconds), clock), later, map[string]any{"n": seconds})
	}
	var start []storage.Record
	var ops []storage.RecordOp
	for i := range 20 {
		r := rec(i*10, 0)
		start = append(start, r)
		ops = append(ops, put(r))
	}
	apply(t, s, ops...)

	q := storage.ListQuery{Collection: coll, Limit: 4}
	var seen []storage.Record
	for pages := 0; ; pages++ {
		page, err := s.ListRecords(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, page.Records...)
		if page.Next == nil {
			break
		}
		switch pages {
		case 0:
			// Newer records, before the position: not listed.
			apply(t, s, put(rec(1000, 0)), put(rec(1010, 0)))
		case 1:
			// Backfilled older records: those created before the position
			// (55 s, and 0 s, tied with a record not yet listed) are
			// listed; one created after it (190 s) is not.
			apply(t, s, put(rec(55, 0)), put(rec(190, 1)), put(rec(0, 1)))
		case 2:
			// Edits of records listed and not yet listed: they keep their
			// places.
			var edits []storage.RecordOp
			for _, r := range []storage.Record{start[19], start[3]} {
				r.CID, r.IndexedAt = "bafyreiedited", later.Add(time.Hour)
				edits = append(edits, put(r))
			}
			apply(t, s, edits...)
		}
		p, err := storage.DecodeCursor("s", storage.EncodeCursor("s", *page.Next))
		if err != nil {
			t.Fatal(err)
		}
		q.After = &p
	}
	listed := map[string]bool{}
	for i, r := range seen {
		if listed[r.URI] {
			t.Fatalf("%s listed twice", r.URI)
		}
		listed[r.URI] = true
		if i > 0 {
			prev := seen[i-1]
			if c := cmp.Or(prev.CreatedAt.Compare(r.CreatedAt), strings.Compare(prev.URI, r.URI)); c <= 0 {
				t.Fatalf("out of order: %s (%v) before %s (%v)", prev.URI, prev.CreatedAt, r.URI, r.CreatedAt)
			}
		}
	}
	for _, r := range start {
		if !listed[r.URI] {
			t.Fatalf("%s (created %v) was skipped", r.URI, creationOf(r))
		}
	}
	for _, r := range []storage.Record{rec(55, 0), rec(0, 1)} {
		if !listed[r.URI] {
			t.Fatalf("older arrival %s after the position was skipped", r.URI)
		}
	}
	for _, r := range []storage.Record{rec(1000, 0), rec(1010, 0), rec(190, 1)} {
		if listed[r.URI] {
			t.Fatalf("arrival %s before the position was listed", r.URI)
		}
	}
}

// creationOf is the creation time of a record as written.
func creationOf(r storage.Record) time.Time {
	return storage.CreationTime(r.RKey, r.Value, r.IndexedAt)
}

// testEditKeepsCreationTime: an edit (a new CID, indexed later) leaves a
// record's creation time, and so its place, unless it changes what the
// time comes from; a replay changes nothing.
func testEditKeepsCreationTime(t *testing.T, s storage.Store) {
	ctx := context.Background()
	const coll = "app.test.edits"
	t1 := base.Add(-time.Hour).Truncate(time.Second) // createdAt below is written to the second
	tid := Rec("did:plc:a", coll, TIDKey(t1, 0), base, map[string]any{"v": 1})
	dated := Rec("did:plc:a", coll, "self", base, map[string]any{"createdAt": t1.Add(time.Minute).Format(time.RFC3339)})
	apply(t, s, put(tid), put(dated))
	order := listAll(t, s, storage.ListQuery{Collection: coll, Limit: 1})
	check := func(what string, r storage.Record, created time.Time) {
		t.Helper()
		got, err := s.GetRecord(ctx, r.URI)
		if err != nil || !got.CreatedAt.Equal(created) || !got.IndexedAt.Equal(r.IndexedAt) || got.CID != r.CID {
			t.Fatalf("%s: %+v %v, want created %v, indexed %v", what, got, err, created, r.IndexedAt)
		}
	}
	edited := tid
	edited.CID, edited.IndexedAt, edited.Value = "bafyreiedited", base.Add(time.Hour), []byte(`{"v":2}`)
	apply(t, s, put(edited))
	check("edited TID record", edited, t1)
	editedDated := dated
	editedDated.CID, editedDated.IndexedAt = "bafyreiedited", base.Add(time.Hour)
	apply(t, s, put(editedDated))
	check("edited record with the same createdAt", editedDated, t1.Add(time.Minute))
	if got := listAll(t, s, storage.ListQuery{Collection: coll, Limit: 1}); !slices.Equal(got, order) {
		t.Fatalf("edits moved records: %v, was %v", got, order)
	}
	replay := editedDated
	replay.IndexedAt = base.Add(2 * time.Hour)
	apply(t, s, put(replay))
	check("replay", editedDated, t1.Add(time.Minute))
	// A new createdAt moves the record: it is another creation time.
	redated := Rec("did:plc:a", coll, "self", base.Add(3*time.Hour), map[string]any{"createdAt": t1.Add(-time.Minute).Format(time.RFC3339)})
	redated.CID = "bafyreiredated"
	apply(t, s, put(redated))
	check("new createdAt", redated, t1.Add(-time.Minute))
	if got := listAll(t, s, storage.ListQuery{Collection: coll, Limit: 1}); !slices.Equal(got, []string{tid.URI, dated.URI}) {
		t.Fatalf("after a new createdAt: %v", got)
	}
}
