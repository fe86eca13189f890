package storagetest

import (
	"context"
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

// The cases of RunSearch about writes: every write path keeps the search
// documents, the build beside writers, dropping an index, long texts.

func testSearchWrites(t *testing.T, s storage.Store) {
	ctx := context.Background()
	declareText(t, s, searchCol, "text")
	found := func(query string) []string {
		t.Helper()
		return searchSet(t, s, searchCol, query)
	}
	p1 := post("did:plc:a", "p1", "first version")
	p1.Rev = "3aaaaaaaaaa22"
	apply(t, s, put(p1), put(post("did:plc:b", "p2", "version by b")), put(post("did:plc:c", "p3", "version by c")))
	if got := found("version"); !reflect.DeepEqual(got, []string{"p1", "p2", "p3"}) {
		t.Fatalf("written: %q", got)
	}
	edited := post("did:plc:a", "p1", "second edition")
	edited.Rev, edited.CID = "3aaaaaaaaaa33", "bafyreihedited"
	apply(t, s, put(edited))
	if got := found("first"); got != nil {
		t.Errorf("the old text is still found: %q", got)
	}
	if got := found("edition"); !reflect.DeepEqual(got, []string{"p1"}) {
		t.Errorf("the new text: %q", got)
	}
	apply(t, s, put(p1)) // an older revision replayed changes nothing
	if got := found("edition"); !reflect.DeepEqual(got, []string{"p1"}) {
		t.Errorf("after replaying an older revision: %q", got)
	}
	apply(t, s, del(edited.URI))
	if got := found("edition"); got != nil {
		t.Errorf("after a delete: %q", got)
	}
	if _, err := s.DeleteRecordsByDID(ctx, "did:plc:b"); err != nil {
		t.Fatal(err)
	}
	if got := found("version"); !reflect.DeepEqual(got, []string{"p3"}) {
		t.Errorf("after deleting an account's records: %q", got)
	}
	// A script's raw writes: insert, update, delete.
	rawT(t, s, `INSERT INTO records (uri, did, collection, rkey, cid, record, indexed_at, created_at)
		VALUES (`+ph(s, 1)+`, 'did:plc:r', '`+searchCol+`', 'raw', 'bafyraw', `+ph(s, 2)+`, `+rawTime(s)+`, `+rawTime(s)+`)`,
		"at://did:plc:r/"+searchCol+"/raw", `{"text":"inserted by a script"}`)
	if got := found("script"); !reflect.DeepEqual(got, []string{"raw"}) {
		t.Errorf("a raw insert: %q", got)
	}
	rawT(t, s, `UPDATE records SET record = `+ph(s, 1)+` WHERE uri = `+ph(s, 2), `{"text":"rewritten"}`, "at://did:plc:r/"+searchCol+"/raw")
	if got := found("script"); got != nil {
		t.Errorf("a raw update kept the old text: %q", got)
	}
	if got := found("rewritten"); !reflect.DeepEqual(got, []string{"raw"}) {
		t.Errorf("a raw update: %q", got)
	}
	rawT(t, s, `DELETE FROM records WHERE uri = `+ph(s, 1), "at://did:plc:r/"+searchCol+"/raw")
	if got := found("rewritten"); got != nil {
		t.Errorf("a raw delete: %q", got)
	}
	if _, err := s.DeleteCollection(ctx, searchCol); err != nil {
		t.Fatal(err)
	}
	if got := found("version"); got != nil {
		t.Errorf("after deleting the collection: %q", got)
	}
}

// rawTime is a literal of a stored time in a raw statement.
func rawTime(s storage.Store) string {
	if s.Dialect() == "postgres" {
		return "now()"
	}
	return "1"
}

// testSearchBuildWhileWriting declares a text index over stored records
// and builds it in small steps while writers add, change and delete
// records; once ready, every search finds exactly the records whose text
// holds the word, as the records are at the end.
func testSearchBuildWhileWriting(t *testing.T, s storage.Store) {
	ctx := context.Background()
	const n = 120
	words := []string{"alpha", "beta", "gamma"}
	text := func(i, round int) string { return words[(i+round)%3] + fmt.Sprintf(" round%d", round) }
	var ops []storage.RecordOp
	for i := range n {
		ops = append(ops, put(post("did:plc:w", fmt.Sprintf("r%03d", i), text(i, 0))))
	}
	apply(t, s, ops...)
	if _, _, err := s.DeclareFieldIndex(ctx, storage.FieldIndexSpec{Collection: searchCol, Path: "text", Kind: storage.FieldIndexText}); err != nil {
		t.Fatal(err)
	}
	final := map[string]string{}
	for i := range n {
		final[fmt.Sprintf("r%03d", i)] = text(i, 0)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for round := 1; ; round++ {
			select {
			case <-stop:
				return
			default:
			}
			i := (round * 7) % n
			key := fmt.Sprintf("r%03d", i)
			var op storage.RecordOp
			mu.Lock()
			switch round % 4 {
			case 0:
				op = del(post("did:plc:w", key, "").URI)
				delete(final, key)
			default:
				r := post("did:plc:w", key, text(i, round))
				r.CID = fmt.Sprintf("bafyround%d", round)
				op = put(r)
				final[key] = text(i, round)
			}
			if err := s.ApplyBatch(ctx, storage.Batch{Ops: []storage.RecordOp{op}}); err != nil {
				mu.Unlock()
				t.Errorf("write: %v", err)
				return
			}
			mu.Unlock()
			time.Sleep(time.Millisecond)
		}
	}()
	for steps := 0; ; steps++ {
		p, err := s.BuildFieldIndexes(ctx, 9)
		if err != nil {
			t.Fatal(err)
		}
		if !p.Pending {
			break
		}
		if steps > 10000 {
			t.Fatal("the build does not end")
		}
	}
	close(stop)
	wg.Wait()
	for _, w := range words {
		var want []string
		for k, v := range final {
			if strings.HasPrefix(v, w+" ") {
				want = append(want, k)
			}
		}
		slices.Sort(want)
		if got := searchSet(t, s, searchCol, w); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %d records %q\nwant %d %q", w, len(got), got, len(want), want)
		}
	}
}

func testSearchDrop(t *testing.T, s storage.Store) {
	ctx := context.Background()
	apply(t, s, put(Rec("did:plc:a", searchCol, "r1", base, map[string]any{"title": "kept words", "body": "dropped words"})))
	idx := declareText(t, s, searchCol, "title", "body")
	if got := searchSet(t, s, searchCol, "dropped"); !reflect.DeepEqual(got, []string{"r1"}) {
		t.Fatalf("before the drop: %q", got)
	}
	if err := s.DropFieldIndex(ctx, idx[1].ID); err != nil {
		t.Fatal(err)
	}
	// At once, before the build clears its words, the dropped field is
	// not searched.
	if got := searchSet(t, s, searchCol, "dropped"); got != nil {
		t.Errorf("a dropped field is searched: %q", got)
	}
	if _, err := s.SearchRecords(ctx, storage.SearchQuery{Collection: searchCol, Query: "words", Fields: []string{"body"}}); !errors.Is(err, storage.ErrInvalidQuery) {
		t.Errorf("searching a dropped field: %v", err)
	}
	apply(t, s, put(Rec("did:plc:a", searchCol, "r2", base, map[string]any{"title": "kept too", "body": "dropped too"})))
	buildAll(t, s, 1)
	if got := searchSet(t, s, searchCol, "kept"); !reflect.DeepEqual(got, []string{"r1", "r2"}) {
		t.Errorf("the other field after the drop: %q", got)
	}
	// The slot is free again: a new index on the body takes it and
	// finds the body's words, and not the title's in its field.
	declareText(t, s, searchCol, "body")
	if got := searchSet(t, s, searchCol, "dropped", "body"); !reflect.DeepEqual(got, []string{"r1", "r2"}) {
		t.Errorf("declared again: %q", got)
	}
	if got := searchSet(t, s, searchCol, "kept", "body"); got != nil {
		t.Errorf("the title's words in the body: %q", got)
	}
	// Dropping every text index of the collection removes its documents.
	for _, f := range listText(t, s, searchCol) {
		if err := s.DropFieldIndex(ctx, f.ID); err != nil {
			t.Fatal(err)
		}
	}
	buildAll(t, s, 1)
	if _, err := s.SearchRecords(ctx, storage.SearchQuery{Collection: searchCol, Query: "kept"}); !errors.Is(err, storage.ErrInvalidQuery) {
		t.Errorf("a collection without text indexes: %v", err)
	}
	declareText(t, s, searchCol, "title")
	if got := searchSet(t, s, searchCol, "kept OR dropped"); !reflect.DeepEqual(got, []string{"r1", "r2"}) {
		t.Errorf("declared again after dropping all: %q", got)
	}
}

func listText(t *testing.T, s storage.Store, collection string) []storage.FieldIndex {
	t.Helper()
	all, err := s.ListFieldIndexes(context.Background(), collection)
	if err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(all, func(f storage.FieldIndex) bool { return f.Kind != storage.FieldIndexText })
}

// testSearchLongText: a field's text is indexed up to
// storage.MaxSearchFieldText characters, and a record with more is
// written all the same.
func testSearchLongText(t *testing.T, s storage.Store) {
	declareText(t, s, searchCol, "text")
	// "early ", then words up to the limit exactly, then one more.
	filler := strings.Repeat("x ", (storage.MaxSearchFieldText-len("early "))/2)
	apply(t, s, put(post("did:plc:a", "long", "early "+filler+"late")))
	if got := searchSet(t, s, searchCol, "early"); !reflect.DeepEqual(got, []string{"long"}) {
		t.Errorf("a word at the start: %q", got)
	}
	if got := searchSet(t, s, searchCol, "late"); got != nil {
		t.Errorf("a word past the indexed text: %q", got)
	}
}
