package storagetest

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/lexview/lexview/storage"
)

// RunFieldIndexes runs the field index suite (FieldIndexStore, and the
// query planner's use of the indexes) against stores made by open.
func RunFieldIndexes(t *testing.T, open func(t testing.TB) storage.Store) {
	runCases(t, open, []storeCase{
		{"DeclareListGetDrop", testFieldIndexRegistry},
		{"DeclareRefusesInvalid", testFieldIndexInvalid},
		{"BuildFillsEntriesInChunks", testFieldIndexBuild},
		{"WritesKeepEntries", testFieldIndexWrites},
		{"DropPurgesEntries", testFieldIndexDrop},
		{"BuildWhileWriting", testFieldIndexBuildWhileWriting},
		{"FailedBuildRestarts", testFieldIndexFailedBuild},
		{"PlannerAnswersAsScan", testPlannerAnswersAsScan},
		{"PlannerKeysetStableWhileAdding", testPlannerKeysetStable},
		{"PlannerCursorAcrossIndexChange", testPlannerCursorAcrossIndexChange},
		{"PlannerExplain", testPlannerExplain},
		{"PlannerScanHint", testPlannerScanHint},
	})
}

const fieldIndexCollection = "app.test.indexed"

func declareT(t *testing.T, s storage.Store, path string, kind storage.FieldIndexKind) (storage.FieldIndex, bool) {
	t.Helper()
	f, created, err := s.DeclareFieldIndex(context.Background(), storage.FieldIndexSpec{Collection: fieldIndexCollection, Path: path, Kind: kind})
	if err != nil {
		t.Fatalf("declare %s %s: %v", path, kind, err)
	}
	return f, created
}

// buildAll runs BuildFieldIndexes with chunks of n until no work is left,
// and returns the indexes that finished.
func buildAll(t *testing.T, s storage.Store, n int) []storage.FieldIndex {
	t.Helper()
	var finished []storage.FieldIndex
	for i := 0; ; i++ {
		if i > 10000 {
			t.Fatal("the build does not end")
		}
		p, err := s.BuildFieldIndexes(context.Background(), n)
		if err != nil {
			t.Fatalf("BuildFieldIndexes: %v", err)
		}
		if p.Processed > n {
			t.Fatalf("a step of %d processed %d", n, p.Processed)
		}
		finished = append(finished, p.Finished...)
		if !p.Pending {
			return finished
		}
	}
}

func getIndexT(t *testing.T, s storage.Store, id int64) storage.FieldIndex {
	t.Helper()
	f, err := s.GetFieldIndex(context.Background(), id)
	if err != nil {
		t.Fatalf("GetFieldIndex(%d): %v", id, err)
	}
	return f
}

func testFieldIndexRegistry(t *testing.T, s storage.Store) {
	ctx := context.Background()
	for i := range 3 {
		apply(t, s, put(Rec("did:plc:alice", fieldIndexCollection, fmt.Sprintf("r%d", i), base, map[string]any{"v": i})))
	}
	v, created := declareT(t, s, "subject.uri", storage.FieldIndexValue)
	if !created || v.ID == 0 || v.State != storage.FieldIndexBuilding || v.Total != 3 || v.Done != 0 ||
		v.Collection != fieldIndexCollection || v.Path != "subject.uri" || v.Kind != storage.FieldIndexValue || v.CreatedAt.IsZero() {
		t.Fatalf("declared: %+v created %v", v, created)
	}
	again, created := declareT(t, s, "subject.uri", storage.FieldIndexValue)
	if created || again.ID != v.ID {
		t.Fatalf("declared again: %+v created %v", again, created)
	}
	text, created := declareT(t, s, "subject.uri", storage.FieldIndexText)
	if !created || text.ID == v.ID {
		t.Fatalf("text index: %+v created %v", text, created)
	}
	other, _, err := s.DeclareFieldIndex(ctx, storage.FieldIndexSpec{Collection: "app.test.other", Path: "a[0].b", Kind: storage.FieldIndexValue})
	if err != nil {
		t.Fatal(err)
	}
	all, err := s.ListFieldIndexes(ctx, "")
	if err != nil || len(all) != 3 || all[0].ID != text.ID || all[1].ID != v.ID || all[2].ID != other.ID {
		t.Fatalf("list all: %+v %v", all, err)
	}
	mine, err := s.ListFieldIndexes(ctx, fieldIndexCollection)
	if err != nil || len(mine) != 2 {
		t.Fatalf("list one collection: %+v %v", mine, err)
	}
	if got := getIndexT(t, s, v.ID); got.Spec() != v.Spec() || got.State != storage.FieldIndexBuilding {
		t.Fatalf("get: %+v", got)
	}
	if err := s.DropFieldIndex(ctx, v.ID); err != nil {
		t.Fatalf("drop: %v", err)
	}
	if _, err := s.GetFieldIndex(ctx, v.ID); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("get dropped: %v", err)
	}
	if err := s.DropFieldIndex(ctx, v.ID); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("drop twice: %v", err)
	}
	if mine, _ := s.ListFieldIndexes(ctx, fieldIndexCollection); len(mine) != 1 || mine[0].ID != text.ID {
		t.Fatalf("after drop: %+v", mine)
	}
	renewed, created := declareT(t, s, "subject.uri", storage.FieldIndexValue)
	if !created || renewed.ID == v.ID {
		t.Fatalf("declared after drop: %+v created %v", renewed, created)
	}
	// The build makes every index ready, the text index too (its builder
	// is full-text search's: suite_search.go).
	finished := buildAll(t, s, 2)
	if len(finished) != 3 {
		t.Fatalf("finished: %+v", finished)
	}
	if got := getIndexT(t, s, renewed.ID); got.State != storage.FieldIndexReady || got.Done != 3 || got.Total != 3 || !got.UpdatedAt.After(got.CreatedAt.Add(-time.Millisecond)) {
		t.Fatalf("built: %+v", got)
	}
	if got := getIndexT(t, s, text.ID); got.State != storage.FieldIndexReady {
		t.Fatalf("text index: %+v", got)
	}
}

func testFieldIndexInvalid(t *testing.T, s storage.Store) {
	ctx := context.Background()
	for _, spec := range []storage.FieldIndexSpec{
		{Collection: "", Path: "a", Kind: storage.FieldIndexValue},
		{Collection: "notnsid", Path: "a", Kind: storage.FieldIndexValue},
		{Collection: fieldIndexCollection, Path: "", Kind: storage.FieldIndexValue},
		{Collection: fieldIndexCollection, Path: "a..b", Kind: storage.FieldIndexValue},
		{Collection: fieldIndexCollection, Path: "a[x]", Kind: storage.FieldIndexValue},
		{Collection: fieldIndexCollection, Path: "a'b", Kind: storage.FieldIndexValue},
		{Collection: fieldIndexCollection, Path: "a", Kind: "fuzzy"},
	} {
		if _, _, err := s.DeclareFieldIndex(ctx, spec); !errors.Is(err, storage.ErrInvalidFieldIndex) {
			t.Errorf("%+v: %v", spec, err)
		}
	}
	for i := range storage.MaxFieldIndexes {
		declareT(t, s, fmt.Sprintf("f%d", i), storage.FieldIndexValue)
	}
	if _, _, err := s.DeclareFieldIndex(ctx, storage.FieldIndexSpec{Collection: fieldIndexCollection, Path: "one.more", Kind: storage.FieldIndexValue}); !errors.Is(err, storage.ErrInvalidFieldIndex) {
		t.Fatalf("index %d: %v", storage.MaxFieldIndexes+1, err)
	}
	if all, _ := s.ListFieldIndexes(ctx, ""); len(all) != storage.MaxFieldIndexes {
		t.Fatalf("%d indexes", len(all))
	}
}

// indexEntry is a value index entry as the tests compare them.
type indexEntry struct {
	grp     int
	num     string // normalised: strconv 'g' of the float, or ""
	str     string
	hasStr  bool
	created int64 // microseconds
}

// entriesOf reads a value index's entries through the store's database.
func entriesOf(t *testing.T, s storage.Store, id int64) map[string]indexEntry {
	t.Helper()
	w, ok := s.(interface{ Writer() *sql.DB })
	if !ok {
		t.Skip("the store does not expose its database")
	}
	q := `SELECT rec_uri, grp, num, str, rec_created FROM field_index_values WHERE index_id = ` + strconv.FormatInt(id, 10)
	rows, err := w.Writer().QueryContext(context.Background(), q)
	if err != nil {
		t.Fatalf("read entries: %v", err)
	}
	defer rows.Close()
	out := map[string]indexEntry{}
	for rows.Next() {
		var uri string
		var e indexEntry
		var num, created any
		var str sql.NullString
		if err := rows.Scan(&uri, &e.grp, &num, &str, &created); err != nil {
			t.Fatalf("read entries: %v", err)
		}
		e.str, e.hasStr = str.String, str.Valid
		switch x := num.(type) {
		case nil:
		case int64:
			e.num = strconv.FormatFloat(float64(x), 'g', -1, 64)
		case float64:
			e.num = strconv.FormatFloat(x, 'g', -1, 64)
		case []byte:
			f, err := strconv.ParseFloat(string(x), 64)
			if err != nil {
				t.Fatalf("num %q: %v", x, err)
			}
			e.num = strconv.FormatFloat(f, 'g', -1, 64)
		default:
			t.Fatalf("num of type %T", num)
		}
		switch x := created.(type) {
		case int64:
			e.created = x
		case time.Time:
			e.created = x.UnixMicro()
		default:
			t.Fatalf("rec_created of type %T", created)
		}
		out[uri] = e
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// expectedEntry is the entry of a record whose indexed field holds v.
func expectedEntry(v any, created time.Time) indexEntry {
	e := indexEntry{grp: 3, created: created.UnixMicro()}
	switch x := v.(type) {
	case float64:
		e.grp, e.num = 0, strconv.FormatFloat(x, 'g', -1, 64)
	case string:
		e.grp, e.str, e.hasStr = 1, x, true
	case bool:
		e.grp, e.num = 2, "0"
		if x {
			e.num = "1"
		}
	}
	return e
}

// fieldValues are values of every kind a field may hold, for the fields
// of test records.
var fieldValues = []any{0, 1, -7, 2.5, 1e15, "", "a", "B", "ápple", "a\u00a0b", true, false, nil, map[string]any{"x": 1}, []any{1}}

// wantEntries computes the entries of an index on "v.w" over records.
func wantEntries(t *testing.T, s storage.Store, uris []string) map[string]indexEntry {
	t.Helper()
	out := map[string]indexEntry{}
	for _, u := range uris {
		r, err := s.GetRecord(context.Background(), u)
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		out[u] = expectedEntry(fieldOf(t, r), r.CreatedAt)
	}
	return out
}

// fieldOf reads the field v.w of a test record (as Rec stores it).
func fieldOf(t *testing.T, r storage.Record) any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(r.Value, &doc); err != nil {
		t.Fatal(err)
	}
	v, ok := doc["v"].(map[string]any)
	if !ok {
		return nil
	}
	return v["w"]
}

func sameEntries(t *testing.T, what string, got, want map[string]indexEntry) {
	t.Helper()
	if maps.Equal(got, want) {
		return
	}
	keys := slices.Sorted(maps.Keys(want))
	for k := range got {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	n := 0
	for _, k := range keys {
		g, gok := got[k]
		w, wok := want[k]
		if g != w || gok != wok {
			t.Errorf("%s: %s: got %+v (%v), want %+v (%v)", what, k, g, gok, w, wok)
			if n++; n > 10 {
				break
			}
		}
	}
	t.FailNow()
}

// fieldRec is a record of fieldIndexCollection whose field v.w holds value
// (absent when value is absentField).
func fieldRec(did string, i int, value any) storage.Record {
	fields := map[string]any{"i": i}
	if value != absentField {
		fields["v"] = map[string]any{"w": value}
	}
	return Rec(did, fieldIndexCollection, fmt.Sprintf("k%05d", i), base.Add(time.Duration(i)*time.Second), fields)
}

// absentField leaves the indexed field out of a record.
const absentField = "\x00absent"

func testFieldIndexBuild(t *testing.T, s storage.Store) {
	var ops []storage.RecordOp
	var uris []string
	for i := range 2 * len(fieldValues) {
		var value any = absentField
		if i < len(fieldValues) {
			value = fieldValues[i]
		}
		r := fieldRec("did:plc:alice", i, value)
		ops, uris = append(ops, put(r)), append(uris, r.URI)
	}
	// A record of another collection is not indexed.
	ops = append(ops, put(Rec("did:plc:alice", "app.test.other", "x", base, map[string]any{"v": map[string]any{"w": 1}})))
	apply(t, s, ops...)
	f, _ := declareT(t, s, "v.w", storage.FieldIndexValue)
	if got := entriesOf(t, s, f.ID); len(got) != 0 {
		t.Fatalf("entries before the build: %v", got)
	}
	p, err := s.BuildFieldIndexes(context.Background(), 4)
	if err != nil || p.Processed != 4 || !p.Pending || len(p.Finished) != 0 {
		t.Fatalf("first step: %+v %v", p, err)
	}
	if got := getIndexT(t, s, f.ID); got.Done != 4 || got.State != storage.FieldIndexBuilding {
		t.Fatalf("after the first step: %+v", got)
	}
	finished := buildAll(t, s, 4)
	if len(finished) != 1 || finished[0].ID != f.ID || finished[0].State != storage.FieldIndexReady || finished[0].Done != int64(len(uris)) {
		t.Fatalf("finished: %+v", finished)
	}
	sameEntries(t, "built", entriesOf(t, s, f.ID), wantEntries(t, s, uris))
	if p, err := s.BuildFieldIndexes(context.Background(), 4); err != nil || p.Pending || p.Processed != 0 {
		t.Fatalf("nothing left: %+v %v", p, err)
	}
}

func testFieldIndexWrites(t *testing.T, s storage.Store) {
	ctx := context.Background()
	f, _ := declareT(t, s, "v.w", storage.FieldIndexValue)
	buildAll(t, s, 10)
	var uris []string
	var ops []storage.RecordOp
	for i, v := range fieldValues {
		r := fieldRec("did:plc:alice", i, v)
		ops, uris = append(ops, put(r)), append(uris, r.URI)
	}
	for i := range 5 {
		r := fieldRec("did:plc:bob", 100+i, i)
		ops, uris = append(ops, put(r)), append(uris, r.URI)
	}
	apply(t, s, ops...)
	sameEntries(t, "inserted", entriesOf(t, s, f.ID), wantEntries(t, s, uris))
	// Updates change the value, or its type, or remove the field.
	updated := fieldRec("did:plc:alice", 1, "now a string")
	updated.CID = "bafyupdated"
	gone := fieldRec("did:plc:alice", 2, absentField)
	gone.CID = "bafygone"
	apply(t, s, put(updated), put(gone), del(uris[3]))
	sameEntries(t, "updated", entriesOf(t, s, f.ID), wantEntries(t, s, uris))
	if _, err := s.DeleteRecordsByDID(ctx, "did:plc:bob"); err != nil {
		t.Fatal(err)
	}
	sameEntries(t, "deleted by DID", entriesOf(t, s, f.ID), wantEntries(t, s, uris))
	// A script's raw writes: insert, update, delete, and a move to
	// another collection.
	indexedAt := "0"
	if s.Dialect() == "postgres" {
		indexedAt = "'2026-01-02T03:04:05Z'"
	}
	raw := fieldRec("did:plc:carol", 7, 0)
	rawT(t, s, `INSERT INTO records (uri, did, collection, rkey, cid, record, indexed_at) VALUES (`+
		ph(s, 1)+`, 'did:plc:carol', '`+fieldIndexCollection+`', 'k00007', 'bafyraw', '{"v": {"w": 42}}', `+indexedAt+`)`, raw.URI)
	uris = append(uris, raw.URI)
	sameEntries(t, "raw insert", entriesOf(t, s, f.ID), wantEntries(t, s, uris))
	rawT(t, s, `UPDATE records SET record = '{"v": {"w": "raw"}}' WHERE uri = `+ph(s, 1), uris[0])
	rawT(t, s, `UPDATE records SET collection = 'app.test.elsewhere' WHERE uri = `+ph(s, 1), uris[4])
	rawT(t, s, `DELETE FROM records WHERE uri = `+ph(s, 1), uris[5])
	want := wantEntries(t, s, uris)
	delete(want, uris[4])
	sameEntries(t, "raw writes", entriesOf(t, s, f.ID), want)
}

func testFieldIndexDrop(t *testing.T, s storage.Store) {
	ctx := context.Background()
	var ops []storage.RecordOp
	for i := range 25 {
		ops = append(ops, put(fieldRec("did:plc:alice", i, i)))
	}
	apply(t, s, ops...)
	f, _ := declareT(t, s, "v.w", storage.FieldIndexValue)
	keep, _ := declareT(t, s, "i", storage.FieldIndexValue)
	buildAll(t, s, 100)
	if len(entriesOf(t, s, f.ID)) != 25 {
		t.Fatal("not built")
	}
	if err := s.DropFieldIndex(ctx, f.ID); err != nil {
		t.Fatal(err)
	}
	p, err := s.BuildFieldIndexes(ctx, 10)
	if err != nil || p.Processed != 10 || !p.Pending {
		t.Fatalf("first purge step: %+v %v", p, err)
	}
	buildAll(t, s, 10)
	if got := entriesOf(t, s, f.ID); len(got) != 0 {
		t.Fatalf("%d entries left", len(got))
	}
	if got := entriesOf(t, s, keep.ID); len(got) != 25 {
		t.Fatalf("the other index has %d entries", len(got))
	}
	// Writes after the drop do not index the dropped field.
	apply(t, s, put(fieldRec("did:plc:alice", 99, 1)))
	if got := entriesOf(t, s, f.ID); len(got) != 0 {
		t.Fatalf("a write indexed a dropped index: %v", got)
	}
}

// testFieldIndexBuildWhileWriting builds an index while records are
// inserted, updated and deleted, then compares its entries with those of
// a fresh build over the final records.
func testFieldIndexBuildWhileWriting(t *testing.T, s storage.Store) {
	const n = 600
	var ops []storage.RecordOp
	for i := range n {
		ops = append(ops, put(fieldRec("did:plc:alice", i, fieldValues[i%len(fieldValues)])))
	}
	apply(t, s, ops...)
	f, _ := declareT(t, s, "v.w", storage.FieldIndexValue)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		// Rewrites every record on its own, and deletes and re-creates
		// some, while the build runs.
		for round := 0; ; round++ {
			for i := round % 7; i < n+50; i += 7 {
				if ctx.Err() != nil {
					done <- nil
					return
				}
				r := fieldRec("did:plc:alice", i, fieldValues[(i+round+1)%len(fieldValues)])
				r.CID = fmt.Sprintf("bafyround%d", round)
				op := put(r)
				if (i+round)%5 == 0 {
					op = del(r.URI)
				}
				if err := s.ApplyBatch(context.Background(), storage.Batch{Ops: []storage.RecordOp{op}}); err != nil {
					done <- err
					return
				}
			}
		}
	}()
	buildAll(t, s, 25)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("writer: %v", err)
	}
	if got := getIndexT(t, s, f.ID); got.State != storage.FieldIndexReady {
		t.Fatalf("after the build: %+v", got)
	}
	got := entriesOf(t, s, f.ID)
	var uris []string
	for i := range n + 50 {
		uris = append(uris, fieldRec("did:plc:alice", i, nil).URI)
	}
	sameEntries(t, "built while writing, against the records", got, wantEntries(t, s, uris))
	// A fresh build over the same records.
	if err := s.DropFieldIndex(context.Background(), f.ID); err != nil {
		t.Fatal(err)
	}
	fresh, _ := declareT(t, s, "v.w", storage.FieldIndexValue)
	buildAll(t, s, 1000)
	sameEntries(t, "built while writing, against a fresh build", got, entriesOf(t, s, fresh.ID))
}

// testFieldIndexFailedBuild: a build that cannot go on (on SQLite, a record
// that a script stored as malformed JSON) marks its index failed, with the
// error; declaring it again restarts it.
func testFieldIndexFailedBuild(t *testing.T, s storage.Store) {
	ctx := context.Background()
	if s.Dialect() != "sqlite" {
		t.Skip("only SQLite stores malformed JSON")
	}
	apply(t, s, put(fieldRec("did:plc:alice", 1, 1)))
	bad := fieldRec("did:plc:alice", 2, 2)
	rawT(t, s, `INSERT INTO records (uri, did, collection, rkey, cid, record, indexed_at) VALUES (?, 'did:plc:alice', '`+
		fieldIndexCollection+`', 'k00002', 'bafybad', '{"v": {"w":', 0)`, bad.URI)
	f, _ := declareT(t, s, "v.w", storage.FieldIndexValue)
	finished := buildAll(t, s, 10)
	if len(finished) != 1 || finished[0].State != storage.FieldIndexFailed || finished[0].Error == "" {
		t.Fatalf("finished: %+v", finished)
	}
	if got := getIndexT(t, s, f.ID); got.State != storage.FieldIndexFailed || got.Error != finished[0].Error {
		t.Fatalf("failed index: %+v", got)
	}
	rawT(t, s, `DELETE FROM records WHERE uri = ?`, bad.URI)
	again, created := declareT(t, s, "v.w", storage.FieldIndexValue)
	if created || again.ID != f.ID || again.State != storage.FieldIndexBuilding || again.Error != "" {
		t.Fatalf("declared again: %+v %v", again, created)
	}
	if finished := buildAll(t, s, 10); len(finished) != 1 || finished[0].State != storage.FieldIndexReady {
		t.Fatalf("rebuilt: %+v", finished)
	}
	sameEntries(t, "rebuilt", entriesOf(t, s, f.ID), wantEntries(t, s, []string{fieldRec("did:plc:alice", 1, 1).URI}))
	if _, err := s.QueryRecords(ctx, storage.RecordQuery{Collection: fieldIndexCollection, Filter: leaf("v.w", "=", 1.0)}); err != nil {
		t.Fatal(err)
	}
}
