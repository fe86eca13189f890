package storagetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/lexview/lexview/storage"
)

// RunLinks runs the link index suite (LinkStore) against stores made by
// open: links found at any depth as records are written, replaced by an
// update, removed with the record by every deletion path, idempotent under
// replay, served as backlink pages, counts and linking accounts, and
// driving db.query and db.count.
func RunLinks(t *testing.T, open func(t testing.TB) storage.Store) {
	runCases(t, open, []storeCase{
		{"ExtractedOnWrite", testLinksExtracted},
		{"UpdateReplacesLinks", testLinksUpdate},
		{"DeletesRemoveLinks", testLinksDeletes},
		{"ReplayIsIdempotent", testLinksReplay},
		{"PagesAndFilters", testLinksPages},
		{"InvalidQueries", testLinksInvalid},
		{"LinkingAccounts", testLinkingAccounts},
		{"DriveQueries", testLinksDriveQueries},
	})
}

const (
	likeCol   = "app.test.like"
	postCol   = "app.test.post"
	likeSrc   = "app.test.like:subject.uri"
	mentionSr = "app.test.post:facets[app.test.facet].features[app.test.facet#mention].did"
)

func postURI(n int) string { return fmt.Sprintf("at://did:plc:author/%s/p%d", postCol, n) }

// like is a like by did of post n, written at.
func like(did, rkey string, post int, at time.Time) storage.Record {
	return Rec(did, likeCol, rkey, at, map[string]any{
		"subject":   map[string]any{"uri": postURI(post), "cid": "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm"},
		"createdAt": at.Format(time.RFC3339Nano),
	})
}

func backlinks(t *testing.T, s storage.Store, q storage.BacklinkQuery) storage.BacklinkPage {
	t.Helper()
	page, err := s.Backlinks(context.Background(), q)
	if err != nil {
		t.Fatalf("Backlinks %+v: %v", q, err)
	}
	return page
}

func source(t *testing.T, s string) storage.LinkSource {
	t.Helper()
	src, err := storage.ParseLinkSource(s)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// linkURIs lists the linking records of every page of q.
func linkURIs(t *testing.T, s storage.Store, q storage.BacklinkQuery) []string {
	t.Helper()
	var uris []string
	for range 1000 {
		page := backlinks(t, s, q)
		for _, r := range page.Records {
			uris = append(uris, r.URI)
		}
		if page.Cursor == "" {
			return uris
		}
		q.Cursor = page.Cursor
	}
	t.Fatal("backlinks never end")
	return nil
}

func testLinksExtracted(t *testing.T, s storage.Store) {
	post := Rec("did:plc:writer", postCol, "1", base, map[string]any{
		"text":  "hi @m, see https://example.com/a",
		"reply": map[string]any{"root": map[string]any{"uri": postURI(0)}, "parent": map[string]any{"uri": postURI(1)}},
		"facets": []any{map[string]any{"$type": "app.test.facet", "features": []any{
			map[string]any{"$type": "app.test.facet#mention", "did": "did:plc:m"},
			map[string]any{"$type": "app.test.facet#link", "uri": "https://example.com/a"},
		}}},
		"tags": []any{"did:plc:tagged", "not a link", 7},
	})
	apply(t, s, put(post), put(like("did:plc:fan", "l1", 1, base)))
	for _, c := range []struct{ subject, source string }{
		{postURI(0), "app.test.post:reply.root.uri"},
		{postURI(1), "app.test.post:reply.parent.uri"},
		{"did:plc:m", mentionSr},
		{"https://example.com/a", "app.test.post:facets[app.test.facet].features[app.test.facet#link].uri"},
		{"did:plc:tagged", "app.test.post:tags[]"},
	} {
		page := backlinks(t, s, storage.BacklinkQuery{Subject: c.subject, Source: source(t, c.source)})
		if page.Total != 1 || len(page.Records) != 1 || page.Records[0].URI != post.URI || page.Cursor != "" {
			t.Errorf("%s from %s: %+v", c.subject, c.source, page)
			continue
		}
		if r := page.Records[0]; r.DID != "did:plc:writer" || r.Collection != postCol || r.RKey != "1" {
			t.Errorf("backlink %+v", r)
		}
	}
	page := backlinks(t, s, storage.BacklinkQuery{Subject: postURI(1), Source: source(t, likeSrc)})
	if page.Total != 1 || page.Records[0].URI != "at://did:plc:fan/app.test.like/l1" {
		t.Errorf("like: %+v", page)
	}
	// Another source, or a non-link value, finds nothing.
	for _, q := range []storage.BacklinkQuery{
		{Subject: postURI(1), Source: source(t, "app.test.post:subject.uri")},
		{Subject: "not a link", Source: source(t, "app.test.post:tags[]")},
		{Subject: postURI(1), Source: source(t, "app.test.other:reply.parent.uri")},
	} {
		if page := backlinks(t, s, q); page.Total != 0 || len(page.Records) != 0 {
			t.Errorf("%+v: %+v", q, page)
		}
	}
}

func testLinksUpdate(t *testing.T, s storage.Store) {
	l := like("did:plc:fan", "l1", 1, base)
	l.Rev = "3aaaaaaaaaa22"
	apply(t, s, put(l))
	moved := like("did:plc:fan", "l1", 2, base)
	moved.Rev, moved.CID = "3aaaaaaaaaa33", "bafyreihmoved"
	apply(t, s, put(moved))
	src := source(t, likeSrc)
	if page := backlinks(t, s, storage.BacklinkQuery{Subject: postURI(1), Source: src}); page.Total != 0 {
		t.Errorf("the old subject keeps the link: %+v", page)
	}
	if page := backlinks(t, s, storage.BacklinkQuery{Subject: postURI(2), Source: src}); page.Total != 1 {
		t.Errorf("the new subject lacks the link: %+v", page)
	}
	// An older revision replayed later changes nothing.
	apply(t, s, put(l))
	if page := backlinks(t, s, storage.BacklinkQuery{Subject: postURI(1), Source: src}); page.Total != 0 {
		t.Errorf("an older revision brought its link back: %+v", page)
	}
	// An update without links drops them.
	bare := Rec("did:plc:fan", likeCol, "l1", base, map[string]any{"subject": "nothing"})
	bare.Rev, bare.CID = "3aaaaaaaaaa44", "bafyreihbare"
	apply(t, s, put(bare))
	if page := backlinks(t, s, storage.BacklinkQuery{Subject: postURI(2), Source: src}); page.Total != 0 {
		t.Errorf("an update without links kept them: %+v", page)
	}
	// A raw update of the record drops its links too.
	apply(t, s, put(like("did:plc:raw", "l2", 3, base)))
	if _, err := s.RawQuery(context.Background(), `UPDATE records SET record = `+ph(s, 1)+` WHERE uri = `+ph(s, 2),
		[]any{`{"$type":"app.test.like"}`, "at://did:plc:raw/app.test.like/l2"}, 10, 0); err != nil {
		t.Fatalf("raw update: %v", err)
	}
	if page := backlinks(t, s, storage.BacklinkQuery{Subject: postURI(3), Source: src}); page.Total != 0 {
		t.Errorf("a raw update kept the links: %+v", page)
	}
}

func testLinksDeletes(t *testing.T, s storage.Store) {
	ctx := context.Background()
	src := source(t, likeSrc)
	apply(t, s,
		put(like("did:plc:a", "l1", 1, base)), put(like("did:plc:a", "l2", 1, base.Add(time.Second))),
		put(like("did:plc:b", "l3", 1, base)), put(like("did:plc:c", "l4", 1, base)),
		put(Rec("did:plc:d", "app.test.other", "o1", base, map[string]any{"subject": map[string]any{"uri": postURI(1)}})))
	total := func() int64 {
		t.Helper()
		return backlinks(t, s, storage.BacklinkQuery{Subject: postURI(1), Source: src}).Total
	}
	if n := total(); n != 4 {
		t.Fatalf("%d links", n)
	}
	apply(t, s, del("at://did:plc:a/app.test.like/l1"))
	if n := total(); n != 3 {
		t.Errorf("after a delete: %d links", n)
	}
	if _, err := s.DeleteRecordsByDID(ctx, "did:plc:a"); err != nil {
		t.Fatal(err)
	}
	if n := total(); n != 2 {
		t.Errorf("after deleting an account's records: %d links", n)
	}
	if err := s.ApplyBatch(ctx, storage.Batch{Accounts: []storage.AccountState{{DID: "did:plc:b", Status: "takendown"}}}); err != nil {
		t.Fatal(err)
	}
	if n := total(); n != 1 {
		t.Errorf("after an account was taken down: %d links", n)
	}
	if _, err := s.RawQuery(ctx, `DELETE FROM records WHERE uri = `+ph(s, 1), []any{"at://did:plc:c/app.test.like/l4"}, 10, 0); err != nil {
		t.Fatalf("raw delete: %v", err)
	}
	if n := total(); n != 0 {
		t.Errorf("after a raw delete: %d links", n)
	}
	if _, err := s.DeleteCollection(ctx, "app.test.other"); err != nil {
		t.Fatal(err)
	}
	if page := backlinks(t, s, storage.BacklinkQuery{Subject: postURI(1), Source: source(t, "app.test.other:subject.uri")}); page.Total != 0 {
		t.Errorf("after deleting the collection: %+v", page)
	}
}

func testLinksReplay(t *testing.T, s storage.Store) {
	ops := []storage.RecordOp{put(like("did:plc:a", "l1", 1, base)), put(like("did:plc:b", "l2", 1, base))}
	for range 3 {
		apply(t, s, ops...)
	}
	c, err := s.CountBacklinks(context.Background(), storage.BacklinkCountQuery{Subject: postURI(1), Source: source(t, likeSrc), DIDs: true})
	if err != nil || c != (storage.BacklinkCount{Records: 2, DIDs: 2}) {
		t.Fatalf("count after replays: %+v %v", c, err)
	}
	// The same record twice in one batch, and a record linking twice to
	// one target from one path, count once.
	twice := Rec("did:plc:c", "app.test.list", "x", base, map[string]any{"items": []any{"did:plc:z", "did:plc:z"}})
	apply(t, s, put(twice), put(twice))
	c, err = s.CountBacklinks(context.Background(), storage.BacklinkCountQuery{Subject: "did:plc:z", Source: source(t, "app.test.list:items[]")})
	if err != nil || c.Records != 1 {
		t.Fatalf("count of a repeated link: %+v %v", c, err)
	}
}

func testLinksPages(t *testing.T, s storage.Store) {
	var ops []storage.RecordOp
	var want []string // newest first
	for i := range 40 {
		did := fmt.Sprintf("did:plc:u%02d", i%7)
		r := like(did, fmt.Sprintf("l%02d", i), 1, base.Add(time.Duration(i%20)*time.Minute)) // ties in time
		ops = append(ops, put(r))
		want = append(want, r.URI)
	}
	apply(t, s, ops...)
	byNewest := func(uris []string, at func(string) int) {
		slices.SortFunc(uris, func(a, b string) int {
			if d := at(b) - at(a); d != 0 {
				return d
			}
			if a > b {
				return -1
			}
			return 1
		})
	}
	minute := func(uri string) int {
		var n int
		fmt.Sscanf(uri[len(uri)-2:], "%d", &n)
		return n % 20
	}
	byNewest(want, minute)
	src := source(t, likeSrc)
	first := backlinks(t, s, storage.BacklinkQuery{Subject: postURI(1), Source: src})
	if first.Total != 40 || len(first.Records) != storage.DefaultBacklinkLimit || first.Cursor == "" {
		t.Fatalf("first page: total %d, %d records, cursor %q", first.Total, len(first.Records), first.Cursor)
	}
	got := linkURIs(t, s, storage.BacklinkQuery{Subject: postURI(1), Source: src, Limit: 7})
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("pages:\n got %q\nwant %q", got, want)
	}
	// Records arriving between pages do not disturb the pages after.
	page := backlinks(t, s, storage.BacklinkQuery{Subject: postURI(1), Source: src, Limit: 10})
	apply(t, s, put(like("did:plc:late", "zz", 1, base.Add(time.Hour))))
	rest := linkURIs(t, s, storage.BacklinkQuery{Subject: postURI(1), Source: src, Limit: 10, Cursor: page.Cursor})
	if !reflect.DeepEqual(rest, want[10:]) {
		t.Fatalf("pages after a new link:\n got %q\nwant %q", rest, want[10:])
	}
	// Filtered by account: only theirs, and the total counts only theirs.
	dids := []string{"did:plc:u01", "did:plc:u03"}
	var mine []string
	for _, u := range want {
		if slices.Contains(dids, u[len("at://"):len("at://")+len("did:plc:u01")]) {
			mine = append(mine, u)
		}
	}
	q := storage.BacklinkQuery{Subject: postURI(1), Source: src, DIDs: dids, Limit: 4}
	if got := linkURIs(t, s, q); !reflect.DeepEqual(got, mine) {
		t.Fatalf("by account:\n got %q\nwant %q", got, mine)
	}
	if p := backlinks(t, s, q); p.Total != int64(len(mine)) {
		t.Errorf("total by account: %d, want %d", p.Total, len(mine))
	}
	// A cursor of one query does not continue another.
	other := storage.BacklinkQuery{Subject: postURI(2), Source: src, Cursor: first.Cursor}
	if _, err := s.Backlinks(context.Background(), other); !errors.Is(err, storage.ErrInvalidBacklinkQuery) {
		t.Errorf("a cursor of another subject: %v", err)
	}
}

func testLinksInvalid(t *testing.T, s storage.Store) {
	src := source(t, likeSrc)
	many := make([]string, storage.MaxBacklinkDIDs+1)
	for i := range many {
		many[i] = fmt.Sprintf("did:plc:%d", i)
	}
	for _, q := range []storage.BacklinkQuery{
		{Subject: "", Source: src},
		{Subject: postURI(1), Source: src, Limit: storage.MaxBacklinkLimit + 1},
		{Subject: postURI(1), Source: src, Cursor: "garbage"},
		{Subject: postURI(1), Source: src, DIDs: many},
	} {
		if _, err := s.Backlinks(context.Background(), q); !errors.Is(err, storage.ErrInvalidBacklinkQuery) {
			t.Errorf("%+v: %v", q, err)
		}
	}
	for _, bad := range []string{"", "app.test.like", "app.test.like:", ":subject.uri", "not an nsid:subject"} {
		if _, err := storage.ParseLinkSource(bad); !errors.Is(err, storage.ErrInvalidBacklinkQuery) {
			t.Errorf("source %q: %v", bad, err)
		}
	}
	if src, err := storage.ParseLinkSource("app.test.like:.subject.uri"); err != nil || src.Path != "subject.uri" {
		t.Errorf("a dotted path: %+v %v", src, err)
	}
}

func testLinkingAccounts(t *testing.T, s storage.Store) {
	var ops []storage.RecordOp
	for i := range 30 {
		ops = append(ops, put(like(fmt.Sprintf("did:plc:u%02d", i%12), fmt.Sprintf("l%02d", i), 1, base.Add(time.Duration(i)*time.Second))))
	}
	apply(t, s, ops...)
	src := source(t, likeSrc)
	c, err := s.CountBacklinks(context.Background(), storage.BacklinkCountQuery{Subject: postURI(1), Source: src, DIDs: true})
	if err != nil || c != (storage.BacklinkCount{Records: 30, DIDs: 12}) {
		t.Fatalf("count: %+v %v", c, err)
	}
	var dids []string
	q := storage.BacklinkDIDQuery{Subject: postURI(1), Source: src, Limit: 5}
	for range 10 {
		page, err := s.BacklinkDIDs(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		if page.Total != 12 {
			t.Errorf("total %d", page.Total)
		}
		dids = append(dids, page.DIDs...)
		if page.Cursor == "" {
			break
		}
		q.Cursor = page.Cursor
	}
	var want []string
	for i := range 12 {
		want = append(want, fmt.Sprintf("did:plc:u%02d", i))
	}
	if !reflect.DeepEqual(dids, want) {
		t.Fatalf("linking accounts %q", dids)
	}
}
