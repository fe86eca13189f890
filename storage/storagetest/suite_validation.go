package storagetest

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/lexview/lexview/storage"
)

// RunValidation runs the suite of records stored with a validation error
// (Record.Invalid, ValidationStore) against stores made by open: the error
// round-trips, every read path leaves flagged records out when asked and
// only then, the counts, the re-validation's updates and its progress.
func RunValidation(t *testing.T, open func(t testing.TB) storage.Store) {
	runCases(t, open, []storeCase{
		{"InvalidRoundTrip", testInvalidRoundTrip},
		{"RewriteChangesTheFlag", testInvalidRewrite},
		{"ListingsExcludeInvalid", testListingsExcludeInvalid},
		{"QueriesExcludeInvalid", testQueriesExcludeInvalid},
		{"LinkQueriesExcludeInvalid", testLinkQueriesExcludeInvalid},
		{"SearchExcludesInvalid", testSearchExcludesInvalid},
		{"InvalidCounts", testInvalidCounts},
		{"SetRecordValidation", testSetRecordValidation},
		{"ValidationPasses", testValidationPasses},
	})
}

const validationCol = "app.test.checked"

// flaggedRecs stores records r0..r(n-1) of validationCol by did, those
// with an odd number flagged, and returns them.
func flaggedRecs(t *testing.T, s storage.Store, did string, n int) []storage.Record {
	t.Helper()
	var recs []storage.Record
	var ops []storage.RecordOp
	for i := range n {
		r := Rec(did, validationCol, fmt.Sprintf("r%02d", i), base.Add(time.Duration(i)*time.Second), map[string]any{"n": i, "text": "common words"})
		if i%2 == 1 {
			r.Invalid = "record/n: must be even"
		}
		recs = append(recs, r)
		ops = append(ops, put(r))
	}
	apply(t, s, ops...)
	return recs
}

func testInvalidRoundTrip(t *testing.T, s storage.Store) {
	ctx := context.Background()
	recs := flaggedRecs(t, s, "did:plc:alice", 2)
	for _, r := range recs {
		got, err := s.GetRecord(ctx, r.URI)
		if err != nil {
			t.Fatal(err)
		}
		if got.Invalid != r.Invalid {
			t.Errorf("%s: Invalid %q, want %q", r.RKey, got.Invalid, r.Invalid)
		}
		var view string
		if err := s.ScanRecord(ctx, r.URI, func(v storage.RecordView) error { view = string(v.Invalid); return nil }); err != nil {
			t.Fatal(err)
		}
		if view != r.Invalid {
			t.Errorf("%s: view's Invalid %q, want %q", r.RKey, view, r.Invalid)
		}
	}
	if n := count(t, s, validationCol); n != 2 {
		t.Fatalf("CountRecords = %d, want both records, flagged or not", n)
	}
}

func testInvalidRewrite(t *testing.T, s storage.Store) {
	ctx := context.Background()
	r := Rec("did:plc:alice", validationCol, "r1", base, map[string]any{"n": 1})
	r.Rev = "3kaaaaaaaaaa2"
	r.Invalid = "bad"
	apply(t, s, put(r))
	// The same version again, now valid (another lexicon revision): the
	// flag goes, the rest stays.
	r.Invalid = ""
	apply(t, s, put(r))
	if got, _ := s.GetRecord(ctx, r.URI); got.Invalid != "" || !got.CreatedAt.Equal(base) {
		t.Fatalf("after a valid rewrite: Invalid %q, CreatedAt %v", got.Invalid, got.CreatedAt)
	}
	r.Invalid = "worse"
	apply(t, s, put(r))
	if got, _ := s.GetRecord(ctx, r.URI); got.Invalid != "worse" {
		t.Fatalf("after an invalid rewrite: Invalid %q", got.Invalid)
	}
	// An older revision changes nothing, its flag neither.
	old := r
	old.Rev, old.Invalid = "3kaaaaaaaaaa1", ""
	apply(t, s, put(old))
	if got, _ := s.GetRecord(ctx, r.URI); got.Invalid != "worse" || got.Rev != r.Rev {
		t.Fatalf("an older rev rewrote the record: %+v", got)
	}
}

// valid returns the record keys of recs without a validation error,
// newest first (or in record-key order descending, the same here).
func validKeys(recs []storage.Record, all bool) []string {
	var out []string
	for _, r := range slices.Backward(recs) {
		if all || r.Invalid == "" {
			out = append(out, r.RKey)
		}
	}
	return out
}

func testListingsExcludeInvalid(t *testing.T, s storage.Store) {
	ctx := context.Background()
	recs := flaggedRecs(t, s, "did:plc:alice", 9)
	for _, exclude := range []bool{false, true} {
		want := validKeys(recs, !exclude)
		for _, did := range []string{"", "did:plc:alice"} {
			q := storage.ListQuery{Collection: validationCol, DID: did, Limit: 2, ExcludeInvalid: exclude}
			var listed, scanned []string
			for range 20 {
				page, err := s.ListRecords(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range page.Records {
					listed = append(listed, r.RKey)
					if exclude && r.Invalid != "" {
						t.Errorf("listed a flagged record: %s", r.URI)
					}
				}
				if page.Next == nil {
					break
				}
				q.After = page.Next
			}
			q.After = nil
			for range 20 {
				next, err := s.ScanRecords(ctx, q, func(v storage.RecordView) error {
					_, _, rkey := splitTestURI(string(v.URI))
					scanned = append(scanned, rkey)
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if next == nil {
					break
				}
				q.After = next
			}
			if !slices.Equal(listed, want) || !slices.Equal(scanned, want) {
				t.Errorf("exclude=%v did=%q: listed %v, scanned %v, want %v", exclude, did, listed, scanned, want)
			}
		}
	}
}

// splitTestURI splits at://did/collection/rkey.
func splitTestURI(uri string) (did, collection, rkey string) {
	var parts [3]string
	rest := uri[len("at://"):]
	for i := range 2 {
		j := 0
		for j < len(rest) && rest[j] != '/' {
			j++
		}
		parts[i], rest = rest[:j], rest[min(j+1, len(rest)):]
	}
	parts[2] = rest
	return parts[0], parts[1], parts[2]
}

func testQueriesExcludeInvalid(t *testing.T, s storage.Store) {
	ctx := context.Background()
	recs := flaggedRecs(t, s, "did:plc:alice", 8)
	check := func(label string) {
		t.Helper()
		for _, exclude := range []bool{false, true} {
			for _, q := range []storage.RecordQuery{
				{Collection: validationCol},
				{Collection: validationCol, DID: "did:plc:alice"},
				{Collection: validationCol, Filter: &storage.Filter{Field: "n", Op: ">=", Value: 2}},
				{Collection: validationCol, Sort: "n"},
			} {
				q.ExcludeInvalid, q.Limit = exclude, 3
				var got []string
				for range 20 {
					page, err := s.QueryRecords(ctx, q)
					if err != nil {
						t.Fatalf("%s: %+v: %v", label, q, err)
					}
					for _, r := range page.Records {
						got = append(got, r.RKey)
					}
					if page.Cursor == "" {
						break
					}
					q.Cursor = page.Cursor
				}
				q.Cursor = ""
				var want []string
				for _, k := range validKeys(recs, !exclude) {
					if q.Filter != nil && k < "r02" {
						continue
					}
					want = append(want, k)
				}
				if !slices.Equal(got, want) {
					t.Errorf("%s: exclude=%v %+v: %v, want %v", label, exclude, q, got, want)
				}
				n, err := s.CountMatching(ctx, q)
				if err != nil {
					t.Fatalf("%s: count %+v: %v", label, q, err)
				}
				if n != int64(len(want)) {
					t.Errorf("%s: exclude=%v CountMatching %+v = %d, want %d", label, exclude, q, n, len(want))
				}
			}
		}
	}
	check("scan")
	// The same answers when a value index drives the filter and the sort.
	if _, _, err := s.DeclareFieldIndex(ctx, storage.FieldIndexSpec{Collection: validationCol, Path: "n", Kind: storage.FieldIndexValue}); err != nil {
		t.Fatal(err)
	}
	buildAll(t, s, 100)
	check("value index")
}

// testLinkQueriesExcludeInvalid: a query or count whose filter is an
// equality to a link, which the link index answers (a count from the
// number it keeps), leaves flagged records out when asked, as a scan does.
func testLinkQueriesExcludeInvalid(t *testing.T, s storage.Store) {
	ctx := context.Background()
	const target = "at://did:plc:bob/app.test.post/p1"
	var ops []storage.RecordOp
	for i := range 6 {
		r := Rec("did:plc:alice", validationCol, fmt.Sprintf("l%d", i), base.Add(time.Duration(i)*time.Second),
			map[string]any{"subject": map[string]any{"uri": target}})
		if i < 2 {
			r.Invalid = "record/createdAt: required"
		}
		ops = append(ops, put(r))
	}
	apply(t, s, ops...)
	for _, exclude := range []bool{false, true} {
		q := storage.RecordQuery{Collection: validationCol, ExcludeInvalid: exclude,
			Filter: &storage.Filter{Field: "subject.uri", Op: "=", Value: target}}
		want := 6
		if exclude {
			want = 4
		}
		page, err := s.QueryRecords(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Records) != want {
			t.Errorf("exclude=%v: %d records, want %d", exclude, len(page.Records), want)
		}
		n, err := s.CountMatching(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if n != int64(want) {
			t.Errorf("exclude=%v: CountMatching = %d, want %d", exclude, n, want)
		}
	}
}

func testSearchExcludesInvalid(t *testing.T, s storage.Store) {
	ctx := context.Background()
	recs := flaggedRecs(t, s, "did:plc:alice", 6)
	flaggedRecs(t, s, "did:plc:bob", 4)
	if _, _, err := s.DeclareFieldIndex(ctx, storage.FieldIndexSpec{Collection: validationCol, Path: "text", Kind: storage.FieldIndexText}); err != nil {
		t.Fatal(err)
	}
	buildAll(t, s, 100)
	for _, exclude := range []bool{false, true} {
		q := storage.SearchQuery{Collection: validationCol, Query: "common", DID: "did:plc:alice", Limit: 2, ExcludeInvalid: exclude}
		got := searchRKeys(t, s, q)
		slices.Sort(got)
		want := validKeys(recs, !exclude)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("exclude=%v: found %v, want %v", exclude, got, want)
		}
	}
}

func testInvalidCounts(t *testing.T, s storage.Store) {
	ctx := context.Background()
	flaggedRecs(t, s, "did:plc:alice", 6) // 3 flagged
	other := Rec("did:plc:alice", "app.test.other", "x", base, nil)
	other.Invalid = "missing field"
	apply(t, s, put(other))
	got, err := s.InvalidRecordCounts(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []storage.InvalidCount{
		{Collection: validationCol, Reason: "record/n: must be even", Count: 3},
		{Collection: "app.test.other", Reason: "missing field", Count: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("InvalidRecordCounts = %+v, want %+v", got, want)
	}
	if got, _ := s.InvalidRecordCounts(ctx, 1); len(got) != 1 || got[0] != want[0] {
		t.Fatalf("InvalidRecordCounts(limit 1) = %+v", got)
	}
	apply(t, s, del(other.URI))
	if got, _ := s.InvalidRecordCounts(ctx, 0); len(got) != 1 {
		t.Fatalf("after a delete: %+v", got)
	}
}

func testSetRecordValidation(t *testing.T, s storage.Store) {
	ctx := context.Background()
	recs := flaggedRecs(t, s, "did:plc:alice", 4) // r01, r03 flagged
	outcomes := []storage.Revalidation{
		{URI: recs[0].URI, CID: recs[0].CID, Invalid: "now refused"},     // flagged
		{URI: recs[1].URI, CID: recs[1].CID},                             // cleared
		{URI: recs[2].URI, CID: recs[2].CID},                             // stays valid
		{URI: recs[3].URI, CID: "bafyother", Invalid: ""},                // rewritten since: left alone
		{URI: "at://did:plc:alice/" + validationCol + "/gone", CID: "x"}, // deleted since
	}
	flagged, cleared, err := s.SetRecordValidation(ctx, outcomes)
	if err != nil {
		t.Fatal(err)
	}
	if flagged != 1 || cleared != 1 {
		t.Fatalf("flagged %d, cleared %d, want 1 and 1", flagged, cleared)
	}
	want := []string{"now refused", "", "", "record/n: must be even"}
	for i, r := range recs {
		got, _ := s.GetRecord(ctx, r.URI)
		if got.Invalid != want[i] {
			t.Errorf("%s: Invalid %q, want %q", r.RKey, got.Invalid, want[i])
		}
	}
	// Applying the same outcomes again changes nothing.
	if flagged, cleared, err := s.SetRecordValidation(ctx, outcomes); err != nil || flagged != 0 || cleared != 0 {
		t.Fatalf("again: flagged %d, cleared %d, %v", flagged, cleared, err)
	}
}

func testValidationPasses(t *testing.T, s storage.Store) {
	ctx := context.Background()
	if got, err := s.ValidationPasses(ctx); err != nil || len(got) != 0 {
		t.Fatalf("fresh store: %+v, %v", got, err)
	}
	start := base.Add(time.Hour)
	p := storage.ValidationPass{Collection: validationCol, Revision: 2, StartedAt: start, UpdatedAt: start}
	if err := s.PutValidationPass(ctx, p); err != nil {
		t.Fatal(err)
	}
	p.After = &storage.Position{Time: base, URI: "at://did:plc:alice/" + validationCol + "/r05"}
	p.Checked, p.Flagged, p.Cleared, p.UpdatedAt = 500, 3, 2, start.Add(time.Minute)
	if err := s.PutValidationPass(ctx, p); err != nil {
		t.Fatal(err)
	}
	other := storage.ValidationPass{Collection: "app.test.a", Revision: 1, Done: true, Checked: 7, StartedAt: start, UpdatedAt: start}
	if err := s.PutValidationPass(ctx, other); err != nil {
		t.Fatal(err)
	}
	got, err := s.ValidationPasses(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !reflect.DeepEqual(got[0], other) {
		t.Fatalf("passes = %+v", got)
	}
	g := got[1]
	if g.Collection != p.Collection || g.Revision != 2 || g.After == nil || !g.After.Time.Equal(base) || g.After.URI != p.After.URI ||
		g.Checked != 500 || g.Flagged != 3 || g.Cleared != 2 || g.Done || !g.StartedAt.Equal(start) || !g.UpdatedAt.Equal(p.UpdatedAt) {
		t.Fatalf("pass = %+v (after %+v)", g, g.After)
	}
}
