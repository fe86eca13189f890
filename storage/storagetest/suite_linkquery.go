package storagetest

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/storage"
)

// testLinksDriveQueries: a db.query or db.count whose filter holds an
// equality of a plain field to a link is read from the link index (its
// plan walks record_links, not the collection) and answers exactly as a
// scan does: pages in both directions, with other conditions, within one
// repository, sorted by another field, and counts; with a record whose
// links were skipped (more than MaxLinksPerRecord), the same link at
// another path and in another collection, and after updates and deletes.
func testLinksDriveQueries(t *testing.T, s storage.Store) {
	ctx := context.Background()
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	likeOf := func(i, post int) storage.Record {
		v := map[string]any{
			"subject":   map[string]any{"uri": postURI(post), "cid": "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm"},
			"n":         i % 10,
			"createdAt": base.Add(time.Duration(i) * time.Minute).Format(time.RFC3339Nano),
		}
		if i%7 == 0 {
			v["via"] = map[string]any{"uri": postURI(1)} // the link at another path
		}
		// Several likes share a time: pages must break ties by URI.
		return Rec(fmt.Sprintf("did:plc:u%d", i%6), likeCol, fmt.Sprintf("l%04d", i), base.Add(time.Duration(i/3)*time.Minute), v)
	}
	var ops []storage.RecordOp
	for i := range 240 {
		ops = append(ops, put(likeOf(i, []int{1, 1, 1, 2, 2, 3}[i%6])))
	}
	// A like whose links pass the bound: its subject is still found.
	extra := make([]any, storage.MaxLinksPerRecord+5)
	for i := range extra {
		extra[i] = fmt.Sprintf("at://did:plc:x/app.test.post/e%d", i)
	}
	ops = append(ops, put(Rec("did:plc:u9", likeCol, "lmany", base.Add(time.Hour), map[string]any{
		"extra": extra, "subject": map[string]any{"uri": postURI(1)}, "n": 4})))
	// The same link in another collection.
	ops = append(ops, put(Rec("did:plc:u1", postCol, "quote", base, map[string]any{"subject": map[string]any{"uri": postURI(1)}})))
	apply(t, s, ops...)

	// A scan's answer: the same filter inside an OR the planner does not
	// take apart.
	scanOf := func(q storage.RecordQuery) storage.RecordQuery {
		q.Filter = &storage.Filter{Or: []storage.Filter{*q.Filter, {Field: "nothing.here", Op: "=", Value: "x"}}}
		return q
	}
	eq := func(post int) storage.Filter {
		return storage.Filter{Field: "subject.uri", Op: "=", Value: postURI(post)}
	}
	queries := func() []storage.RecordQuery {
		var qs []storage.RecordQuery
		for _, post := range []int{1, 2, 3, 9} {
			f := eq(post)
			qs = append(qs,
				storage.RecordQuery{Filter: &f, Limit: 7},
				storage.RecordQuery{Filter: &f, Limit: 5, Ascending: true},
				storage.RecordQuery{Filter: &storage.Filter{And: []storage.Filter{f, {Field: "n", Op: ">", Value: 3.0}}}, Limit: 6},
				storage.RecordQuery{Filter: &f, Limit: 4, DID: "did:plc:u3"},
				storage.RecordQuery{Filter: &f, Limit: 9, Sort: "n"},
			)
		}
		return qs
	}
	compare := func(when string) {
		t.Helper()
		for _, q := range queries() {
			q.Collection = likeCol
			got, _ := answerOf(t, s, q)
			want, _ := answerOf(t, s, scanOf(q))
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: %s\nfrom the link index: %d records %v, count %d\nscanning:            %d records %v, count %d",
					when, describe(q), len(got.keys), got.keys, got.count, len(want.keys), want.keys, want.count)
			}
		}
	}
	compare("written")
	if want := int64(121); func() int64 {
		f := eq(1)
		n, err := s.CountMatching(ctx, storage.RecordQuery{Collection: likeCol, Filter: &f})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}() != want {
		t.Errorf("post 1 is not liked by %d records", want)
	}

	// Likes move from post 2 to post 3, some are deleted, the marked like
	// goes.
	var changes []storage.RecordOp
	for i := 3; i < 240; i += 12 {
		changes = append(changes, put(likeOf(i, 3)))
	}
	for i := 0; i < 240; i += 10 {
		changes = append(changes, del(likeOf(i, 1).URI))
	}
	apply(t, s, changes...)
	compare("after updates and deletes")
	apply(t, s, del(fmt.Sprintf("at://did:plc:u9/%s/lmany", likeCol)))
	compare("after the marked record went")

	ex, ok := s.(explainer)
	if !ok {
		return
	}
	// Enough other likes that a planner with statistics prefers an index
	// over reading the small tables whole.
	ops = ops[:0]
	for i := range 12000 {
		ops = append(ops, put(likeOf(1000+i, 100+i%800)))
		if len(ops) == 3000 {
			apply(t, s, ops...)
			ops = ops[:0]
		}
	}
	if w, ok := s.(interface{ Writer() *sql.DB }); ok {
		if _, err := w.Writer().ExecContext(ctx, "ANALYZE"); err != nil {
			t.Fatal(err)
		}
	}
	f := eq(1)
	for _, count := range []bool{false, true} {
		plan, err := ex.ExplainQuery(ctx, storage.RecordQuery{Collection: likeCol, Filter: &storage.Filter{
			And: []storage.Filter{f, {Field: "n", Op: "=", Value: 4.0}}}}, count)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(plan, "record_links") || scansRecords(plan) {
			t.Errorf("count %v: the plan does not read the link index, or scans the records:\n%s", count, plan)
		}
		t.Logf("count %v:\n%s", count, plan)
	}
}
