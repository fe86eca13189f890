package storagetest

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/lexview/lexview/storage"
)

// RunScripts runs the suite for the stores behind Lua scripting: scripts
// and script variables (ScriptStore), dead letters (DeadLetterStore), the
// pending retries of record-event scripts (ScriptRetryStore) and scripted
// record queries and raw SQL (QueryStore). Each subtest gets a
// fresh store.
func RunScripts(t *testing.T, open func(t testing.TB) storage.Store) {
	tests := []storeCase{
		{"ScriptRevisions", testScriptRevisions},
		{"ScriptUpdateAndDelete", testScriptUpdateDelete},
		{"ScriptVariables", testScriptVariables},
		{"DeadLetterRoundTrip", testDeadLetterRoundTrip},
		{"DeadLetterPagingAndFilters", testDeadLetterPaging},
		{"DeadLetterResolveAndFailure", testDeadLetterResolve},
		{"ScriptRetriesAreNoDeadLetters", testScriptRetries},
		{"ScriptRetryClaims", testScriptRetryClaims},
		{"QueryFilterOperators", testQueryFilters},
		{"QueryRefusesInvalid", testQueryInvalid},
		{"QueryIndexedAtOrderAndCursors", testQueryIndexedOrder},
		{"QueryFieldSort", testQueryFieldSort},
		{"QueryCursorScope", testQueryCursorScope},
		{"QueryLimits", testQueryLimits},
		{"GetRecords", testGetRecords},
		{"RawReads", testRawReads},
		{"RawRefusesAllButTheAllowList", testRawRefusals},
		{"RawWrites", testRawWrites},
		{"RawDeadline", testRawDeadline},
		{"RawMaxBytes", testRawMaxBytes},
	}
	runCases(t, open, tests)
}

func putScriptT(t *testing.T, s storage.Store, sc storage.Script) (storage.Script, bool) {
	t.Helper()
	got, created, err := s.PutScript(context.Background(), sc)
	if err != nil {
		t.Fatalf("PutScript(%s): %v", sc.Trigger, err)
	}
	return got, created
}

func testScriptRevisions(t *testing.T, s storage.Store) {
	ctx := context.Background()
	const trig = "record.index:app.test.post"
	first, created := putScriptT(t, s, storage.Script{Trigger: trig, Source: "return 1", Description: "one"})
	if !created || first.ID == "" || first.Trigger != trig || first.Source != "return 1" || first.Description != "one" ||
		first.Revision != 1 || first.CreatedAt.IsZero() || !first.UpdatedAt.Equal(first.CreatedAt) {
		t.Fatalf("create: %+v created=%v", first, created)
	}
	// A new description alone keeps the revision.
	same, created := putScriptT(t, s, storage.Script{Trigger: trig, Source: "return 1", Description: "uno"})
	if created || same.ID != first.ID || same.Revision != 1 || same.Description != "uno" || !same.CreatedAt.Equal(first.CreatedAt) {
		t.Fatalf("same source: %+v created=%v", same, created)
	}
	changed, created := putScriptT(t, s, storage.Script{Trigger: trig, Source: "return 2", Description: "uno"})
	if created || changed.ID != first.ID || changed.Revision != 2 || changed.Source != "return 2" ||
		changed.UpdatedAt.Before(first.UpdatedAt) {
		t.Fatalf("new source: %+v created=%v", changed, created)
	}
	other, created := putScriptT(t, s, storage.Script{Trigger: "xrpc.query:app.test.getPosts", Source: "return {}"})
	if !created || other.ID == first.ID || other.Revision != 1 {
		t.Fatalf("second trigger: %+v created=%v", other, created)
	}
	got, err := s.GetScript(ctx, first.ID)
	if err != nil || got != changed {
		t.Fatalf("get: %+v %v, want %+v", got, err, changed)
	}
	list, err := s.ListScripts(ctx)
	if err != nil || len(list) != 2 || list[0] != changed || list[1] != other {
		t.Fatalf("list ordered by trigger: %+v %v", list, err)
	}
	if _, err := s.GetScript(ctx, storage.NewID()); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("unknown script: %v", err)
	}
}

func testScriptUpdateDelete(t *testing.T, s storage.Store) {
	ctx := context.Background()
	sc, _ := putScriptT(t, s, storage.Script{Trigger: "record.create:app.test.post", Source: "a", Description: "d"})
	ptr := func(v string) *string { return &v }
	update := func(source, desc *string) storage.Script {
		t.Helper()
		got, err := s.UpdateScript(ctx, sc.ID, source, desc)
		if err != nil {
			t.Fatalf("UpdateScript: %v", err)
		}
		return got
	}
	if got := update(nil, ptr("new words")); got.Revision != 1 || got.Source != "a" || got.Description != "new words" {
		t.Fatalf("description only: %+v", got)
	}
	if got := update(ptr("a"), nil); got.Revision != 1 || got.Description != "new words" {
		t.Fatalf("same source: %+v", got)
	}
	if got := update(ptr("b"), ptr("")); got.Revision != 2 || got.Source != "b" || got.Description != "" {
		t.Fatalf("new source: %+v", got)
	}
	if got := update(nil, nil); got.Revision != 2 || got.Source != "b" || got.Trigger != sc.Trigger {
		t.Fatalf("no change: %+v", got)
	}
	if _, err := s.UpdateScript(ctx, storage.NewID(), ptr("x"), nil); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("update unknown: %v", err)
	}
	if err := s.DeleteScript(ctx, sc.ID); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if err := s.DeleteScript(ctx, sc.ID); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("delete again: %v", err)
	}
	if _, err := s.GetScript(ctx, sc.ID); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("get deleted: %v", err)
	}
	again, created := putScriptT(t, s, storage.Script{Trigger: sc.Trigger, Source: "c"})
	if !created || again.ID == sc.ID || again.Revision != 1 {
		t.Fatalf("recreate: %+v %v", again, created)
	}
}

func testScriptVariables(t *testing.T, s storage.Store) {
	ctx := context.Background()
	put := func(v storage.ScriptVariable) {
		t.Helper()
		if err := s.PutScriptVariable(ctx, v); err != nil {
			t.Fatalf("PutScriptVariable(%s): %v", v.Key, err)
		}
	}
	list := func() []storage.ScriptVariable {
		t.Helper()
		vs, err := s.ListScriptVariables(ctx)
		if err != nil {
			t.Fatalf("ListScriptVariables: %v", err)
		}
		return vs
	}
	if vs := list(); len(vs) != 0 {
		t.Fatalf("fresh store: %+v", vs)
	}
	put(storage.ScriptVariable{Key: "webhook_token", Sealed: "sealed-1", CreatedAt: base, UpdatedAt: base})
	put(storage.ScriptVariable{Key: "api_key", Sealed: "sealed-2"})
	later := base.Add(time.Hour)
	put(storage.ScriptVariable{Key: "webhook_token", Sealed: "sealed-3", CreatedAt: later, UpdatedAt: later})
	vs := list()
	if len(vs) != 2 || vs[0].Key != "api_key" || vs[0].Sealed != "sealed-2" || vs[0].CreatedAt.IsZero() ||
		vs[1].Key != "webhook_token" || vs[1].Sealed != "sealed-3" || !vs[1].CreatedAt.Equal(base) || !vs[1].UpdatedAt.Equal(later) {
		t.Fatalf("variables: %+v", vs)
	}
	if err := s.DeleteScriptVariable(ctx, "api_key"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if err := s.DeleteScriptVariable(ctx, "api_key"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("delete again: %v", err)
	}
	if vs := list(); len(vs) != 1 || vs[0].Key != "webhook_token" {
		t.Fatalf("after delete: %+v", vs)
	}
}

func deadLetter(collection, rkey string, at time.Time) storage.DeadLetter {
	return storage.DeadLetter{
		Kind: storage.DeadLetterRecord, LexiconID: collection, URI: "at://did:plc:dl/" + collection + "/" + rkey,
		DID: "did:plc:dl", Collection: collection, RKey: rkey, Action: "create", CID: "bafyreidl", Rev: "3kdl",
		Error: "script error: boom", Attempts: 3, Record: json.RawMessage(`{"$type":"` + collection + `","text":"hi"}`),
		CreatedAt: at,
	}
}

func addDeadLetterT(t *testing.T, s storage.Store, d storage.DeadLetter) storage.DeadLetter {
	t.Helper()
	got, err := s.AddDeadLetter(context.Background(), d)
	if err != nil {
		t.Fatalf("AddDeadLetter: %v", err)
	}
	return got
}

func testDeadLetterRoundTrip(t *testing.T, s storage.Store) {
	ctx := context.Background()
	in := deadLetter("app.test.post", "a", base)
	added := addDeadLetterT(t, s, in)
	if added.ID == "" || !added.CreatedAt.Equal(base) {
		t.Fatalf("added: %+v", added)
	}
	got, err := s.GetDeadLetter(ctx, added.ID)
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, got.Record, in.Record)
	if !got.CreatedAt.Equal(in.CreatedAt) || !got.ResolvedAt.IsZero() {
		t.Fatalf("times: %v %v", got.CreatedAt, got.ResolvedAt)
	}
	got.Record, got.CreatedAt, in.Record, in.ID = nil, in.CreatedAt, nil, added.ID
	if !reflect.DeepEqual(got, in) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, in)
	}
	before := time.Now().Add(-time.Minute)
	del := addDeadLetterT(t, s, storage.DeadLetter{Kind: storage.DeadLetterLabel, Action: "delete", Error: "x"})
	if del.CreatedAt.Before(before) {
		t.Fatalf("CreatedAt not assigned: %v", del.CreatedAt)
	}
	got, err = s.GetDeadLetter(ctx, del.ID)
	if err != nil || got.Record != nil || got.Kind != storage.DeadLetterLabel || got.URI != "" || !got.CreatedAt.Equal(del.CreatedAt) {
		t.Fatalf("label without record: %+v %v", got, err)
	}
	if _, err := s.AddDeadLetter(ctx, storage.DeadLetter{ID: added.ID, Kind: storage.DeadLetterRecord}); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("duplicate id: %v", err)
	}
	if _, err := s.GetDeadLetter(ctx, storage.NewID()); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("unknown: %v", err)
	}
}

func testDeadLetterPaging(t *testing.T, s storage.Store) {
	ctx := context.Background()
	var all []storage.DeadLetter
	for i := range 25 {
		coll := "app.test.a"
		if i%2 == 1 {
			coll = "app.test.b"
		}
		d := addDeadLetterT(t, s, deadLetter(coll, fmt.Sprintf("k%02d", i), base.Add(time.Duration(i/3)*time.Second)))
		if i%4 == 0 {
			at := base.Add(time.Hour)
			if err := s.ResolveDeadLetter(ctx, d.ID, at); err != nil {
				t.Fatal(err)
			}
			d.ResolvedAt = at
		}
		all = append(all, d)
	}
	slices.SortFunc(all, func(a, b storage.DeadLetter) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	yes, no := true, false
	for _, q := range []storage.DeadLetterQuery{
		{}, {Collection: "app.test.a"}, {Resolved: &yes}, {Resolved: &no}, {Collection: "app.test.b", Resolved: &no},
		{Collection: "app.test.none"},
	} {
		var want []string
		for _, d := range all {
			if (q.Collection == "" || d.Collection == q.Collection) && (q.Resolved == nil || *q.Resolved == !d.ResolvedAt.IsZero()) {
				want = append(want, d.ID)
			}
		}
		var got []string
		q.Limit = 4
		for pages := 0; ; pages++ {
			page, next, err := s.ListDeadLetters(ctx, q)
			if err != nil || pages > 10 {
				t.Fatalf("list %+v: %v", q, err)
			}
			for _, d := range page {
				if d.Record != nil || d.Error == "" || d.URI == "" {
					t.Fatalf("listed dead letter: %+v", d)
				}
				got = append(got, d.ID)
			}
			if next == nil {
				break
			}
			q.After = next
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%+v:\n got %v\nwant %v", q, got, want)
		}
		if n, err := s.CountDeadLetters(ctx, q); err != nil || n != int64(len(want)) {
			t.Fatalf("count %+v: %d %v, want %d", q, n, err, len(want))
		}
	}
	if page, next, err := s.ListDeadLetters(ctx, storage.DeadLetterQuery{}); err != nil || len(page) != 25 || next != nil {
		t.Fatalf("default limit: %d %v %v", len(page), next, err)
	}
}

func testDeadLetterResolve(t *testing.T, s storage.Store) {
	ctx := context.Background()
	first := addDeadLetterT(t, s, deadLetter("app.test.a", "1", base))
	second := addDeadLetterT(t, s, deadLetter("app.test.b", "2", base.Add(time.Second)))
	third := addDeadLetterT(t, s, deadLetter("app.test.a", "3", base.Add(2*time.Second)))
	if err := s.RecordDeadLetterFailure(ctx, first.ID, "still failing", 4); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetDeadLetter(ctx, first.ID); got.Error != "still failing" || got.Attempts != 4 {
		t.Fatalf("failure not recorded: %+v", got)
	}
	at := base.Add(time.Hour)
	if err := s.ResolveDeadLetter(ctx, first.ID, at); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetDeadLetter(ctx, first.ID); !got.ResolvedAt.Equal(at) {
		t.Fatalf("resolved at %v, want %v", got.ResolvedAt, at)
	}
	if err := s.ResolveDeadLetter(ctx, first.ID, at); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("resolve twice: %v", err)
	}
	if err := s.ResolveDeadLetter(ctx, storage.NewID(), at); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("resolve unknown: %v", err)
	}
	if err := s.RecordDeadLetterFailure(ctx, first.ID, "x", 5); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("failure on a resolved dead letter: %v", err)
	}
	if err := s.RecordDeadLetterFailure(ctx, storage.NewID(), "x", 5); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("failure on an unknown dead letter: %v", err)
	}
	unresolved := false
	page, _, err := s.ListDeadLetters(ctx, storage.DeadLetterQuery{Collection: "app.test.a", Resolved: &unresolved})
	if err != nil || len(page) != 1 || page[0].ID != third.ID {
		t.Fatalf("unresolved of a collection: %+v %v", page, err)
	}
	if n, err := s.CountDeadLetters(ctx, storage.DeadLetterQuery{Resolved: &unresolved}); err != nil || n != 2 {
		t.Fatalf("unresolved: %d %v (second is %s)", n, err, second.ID)
	}
}
