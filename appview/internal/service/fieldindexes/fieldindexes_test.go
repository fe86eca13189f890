package fieldindexes_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/service/fieldindexes"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

const (
	likes = "app.test.like"
	actor = "did:plc:operator"
)

// newService returns a service over store, recording events, logging to
// log (nil: nowhere).
func newService(store storage.Store, log io.Writer, opt fieldindexes.Options) *fieldindexes.Service {
	if log == nil {
		log = io.Discard
	}
	logger := slog.New(slog.NewTextHandler(log, nil))
	opt.Store = store
	opt.Logger = logger
	opt.Events = eventlog.New(eventlog.Options{Store: store, Logger: logger})
	return fieldindexes.New(opt)
}

// seedLikes stores n like records whose subject.uri is one of three posts.
func seedLikes(t testing.TB, s storage.Store, n int) {
	t.Helper()
	var ops []storage.RecordOp
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	for i := range n {
		ops = append(ops, storage.RecordOp{Record: storagetest.Rec(fmt.Sprintf("did:plc:u%d", i), likes, "l1", at.Add(time.Duration(i)*time.Second),
			map[string]any{"subject": map[string]any{"uri": fmt.Sprintf("at://did:plc:author/app.test.post/p%d", i%3)}})})
	}
	if err := s.ApplyBatch(context.Background(), storage.Batch{Ops: ops}); err != nil {
		t.Fatal(err)
	}
}

// events lists the field_index.* entries as "type actor", sorted.
func events(t *testing.T, s storage.Store) []string {
	t.Helper()
	list, _, err := s.ListEvents(context.Background(), storage.EventFilter{Category: "field_index", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list {
		out = append(out, strings.TrimSpace(e.Type+" "+e.ActorDID))
	}
	slices.Sort(out)
	return out
}

// syncBuffer is a buffer several goroutines write.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// wantFail checks that err is a fail error of kind with message msg.
func wantFail(t *testing.T, err error, kind fail.Kind, msg string) {
	t.Helper()
	var fe *fail.Error
	if !errors.As(err, &fe) || fe.Kind != kind || fe.Message != msg {
		t.Fatalf("error %v, want %v %q", err, kind, msg)
	}
}

// waitFor waits for cond, a minute at most.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		spec storage.FieldIndexSpec
		err  string
	}{
		{storage.FieldIndexSpec{Path: "a"}, "collection is required"},
		{storage.FieldIndexSpec{Collection: "not an nsid", Path: "a"}, "collection must be an NSID"},
		{storage.FieldIndexSpec{Collection: likes}, "path is required"},
		{storage.FieldIndexSpec{Collection: likes, Path: "a..b"}, `path "a..b" is not a field path: expected a name at offset 2 (names hold letters, digits, '_', '$' and '-')`},
		{storage.FieldIndexSpec{Collection: likes, Path: "a[01]"}, `path "a[01]" is not a field path: array index 01 out of range`},
		{storage.FieldIndexSpec{Collection: likes, Path: "a.", Kind: "value"}, `path "a." is not a field path: ends with a dot`},
		{storage.FieldIndexSpec{Collection: likes, Path: "a", Kind: "btree"}, "kind must be value or text"},
	}
	for _, c := range cases {
		_, err := fieldindexes.Validate(c.spec)
		wantFail(t, err, fail.Invalid, c.err)
	}
	got, err := fieldindexes.Validate(storage.FieldIndexSpec{Collection: likes, Path: "subject.uri"})
	if err != nil || got.Kind != storage.FieldIndexValue {
		t.Fatalf("Validate without a kind: %+v %v", got, err)
	}
}

// TestPathCheckMatchesStore: the service's check of a path accepts what
// the store accepts and refuses what it refuses.
func TestPathCheckMatchesStore(t *testing.T) {
	t.Parallel()
	paths := []string{"a", "subject.uri", "embed.images[0].alt", "a[1][2]", "$type", "a-b_c", "0",
		"a..b", ".a", "a.", "a[", "a[]", "a[01]", "a[1234567]", "a[123456]", "a b", "a.[0]", "[0]", "a]", "é",
		strings.Repeat("a", 256), strings.Repeat("a", 257), strings.Repeat("a.", 31) + "a", strings.Repeat("a.", 32) + "a",
		strings.Repeat("a", 10) + strings.Repeat("[1]", 31), strings.Repeat("a", 10) + strings.Repeat("[1]", 32)}
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		store := open(t)
		ctx := context.Background()
		for i, p := range paths {
			// One collection per path: a collection holds few indexes.
			spec := storage.FieldIndexSpec{Collection: fmt.Sprintf("app.test.c%d", i), Path: p, Kind: storage.FieldIndexValue}
			_, mine := fieldindexes.Validate(spec)
			_, _, theirs := store.DeclareFieldIndex(ctx, spec)
			if (mine == nil) != (theirs == nil) {
				t.Errorf("path %q: the service says %v, the store %v", p, mine, theirs)
			}
		}
	})
}

func TestDeclareListGetDrop(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		store := open(t)
		ctx := context.Background()
		svc := newService(store, nil, fieldindexes.Options{})
		spec := storage.FieldIndexSpec{Collection: likes, Path: "subject.uri"}
		idx, created, err := svc.Declare(ctx, actor, spec)
		if err != nil || !created || idx.Kind != storage.FieldIndexValue || idx.State != storage.FieldIndexBuilding {
			t.Fatalf("declare: %+v %v %v", idx, created, err)
		}
		again, created, err := svc.Declare(ctx, "did:plc:other", storage.FieldIndexSpec{Collection: likes, Path: "subject.uri", Kind: "value"})
		if err != nil || created || again.ID != idx.ID {
			t.Fatalf("declare again: %+v %v %v", again, created, err)
		}
		if _, _, err := svc.Declare(ctx, actor, storage.FieldIndexSpec{Collection: likes, Path: "a..b"}); err == nil {
			t.Fatal("an invalid path was declared")
		}
		list, err := svc.List(ctx, likes)
		if err != nil || len(list) != 1 || list[0].ID != idx.ID {
			t.Fatalf("list: %+v %v", list, err)
		}
		if list, err := svc.List(ctx, "app.test.other"); err != nil || len(list) != 0 {
			t.Fatalf("list of another collection: %+v %v", list, err)
		}
		_, err = svc.List(ctx, "no nsid")
		wantFail(t, err, fail.Invalid, "collection must be an NSID")
		if got, err := svc.Get(ctx, idx.ID); err != nil || got.Path != "subject.uri" {
			t.Fatalf("get: %+v %v", got, err)
		}
		if err := svc.Drop(ctx, actor, idx.ID); err != nil {
			t.Fatal(err)
		}
		_, err = svc.Get(ctx, idx.ID)
		wantFail(t, err, fail.NotFound, "field index not found")
		wantFail(t, svc.Drop(ctx, actor, idx.ID), fail.NotFound, "field index not found")
		for _, raw := range []string{"x", "0", "-3", ""} {
			_, err := fieldindexes.ParseID(raw)
			wantFail(t, err, fail.NotFound, "field index not found")
		}
		if id, err := fieldindexes.ParseID("42"); err != nil || id != 42 {
			t.Fatalf("ParseID(42): %d %v", id, err)
		}
		want := []string{"field_index.declared " + actor, "field_index.dropped " + actor}
		if got := events(t, store); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("events %q, want %q", got, want)
		}
	})
}

func TestCheckRoom(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		store := open(t)
		ctx := context.Background()
		svc := newService(store, nil, fieldindexes.Options{})
		for i := range storage.MaxFieldIndexes - 1 {
			if _, _, err := svc.Declare(ctx, actor, storage.FieldIndexSpec{Collection: likes, Path: fmt.Sprintf("f%d", i)}); err != nil {
				t.Fatal(err)
			}
		}
		two := []storage.FieldIndexSpec{{Path: "f0", Kind: "value"}, {Path: "g", Kind: "value"}}
		if err := svc.CheckRoom(ctx, likes, two); err != nil {
			t.Fatalf("room for one new index and an existing one: %v", err)
		}
		two[0].Path = "h"
		wantFail(t, svc.CheckRoom(ctx, likes, two), fail.Invalid,
			fmt.Sprintf("collection %s would have %d field indexes, more than the %d it may have", likes, storage.MaxFieldIndexes+1, storage.MaxFieldIndexes))
		if _, _, err := svc.Declare(ctx, actor, storage.FieldIndexSpec{Collection: likes, Path: "last"}); err != nil {
			t.Fatal(err)
		}
		_, _, err := svc.Declare(ctx, actor, storage.FieldIndexSpec{Collection: likes, Path: "one.more"})
		wantFail(t, err, fail.Invalid,
			fmt.Sprintf("collection %s would have %d field indexes, more than the %d it may have", likes, storage.MaxFieldIndexes+1, storage.MaxFieldIndexes))
		// At most storage.MaxTextIndexes of them are text indexes.
		var texts []storage.FieldIndexSpec
		for i := range storage.MaxTextIndexes + 1 {
			texts = append(texts, storage.FieldIndexSpec{Path: fmt.Sprintf("t%d", i), Kind: storage.FieldIndexText})
		}
		wantFail(t, svc.CheckRoom(ctx, "app.test.post", texts), fail.Invalid,
			fmt.Sprintf("collection app.test.post would have %d text indexes, more than the %d it may have", storage.MaxTextIndexes+1, storage.MaxTextIndexes))
		if err := svc.CheckRoom(ctx, "app.test.post", texts[1:]); err != nil {
			t.Errorf("room for %d text indexes: %v", storage.MaxTextIndexes, err)
		}
	})
}

// TestBuild: the background build makes a declared index ready, woken by
// the declaration, and records it; a failed index declared again is
// restarted and built.
func TestBuild(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		store := open(t)
		seedLikes(t, store, 120)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var logs syncBuffer
		// A long recheck: only the declaration's wake-up starts the build.
		svc := newService(store, &logs, fieldindexes.Options{Build: fieldindexes.BuildPacing{Step: 50, Recheck: time.Hour}})
		done := make(chan struct{})
		go func() { defer close(done); svc.Run(ctx) }()
		defer func() { cancel(); <-done }()

		idx, _, err := svc.Declare(ctx, actor, storage.FieldIndexSpec{Collection: likes, Path: "subject.uri"})
		if err != nil {
			t.Fatal(err)
		}
		ready := func() bool {
			f, err := svc.Get(ctx, idx.ID)
			return err == nil && f.State == storage.FieldIndexReady
		}
		waitFor(t, "the index to be ready", ready)
		if f, _ := svc.Get(ctx, idx.ID); f.Done != 120 {
			t.Errorf("done %d, want 120", f.Done)
		}
		waitFor(t, "the ready event", func() bool { return len(events(t, store)) == 2 })
		if got := events(t, store); !slices.Contains(got, "field_index.ready") {
			t.Errorf("events %q", got)
		}
		for _, want := range []string{"field index build started", "field index ready", "field index build finished"} {
			waitFor(t, "the log line "+want, func() bool { return strings.Contains(logs.String(), want) })
		}

		// As if its build had failed.
		db := store.(interface{ Writer() *sql.DB }).Writer()
		if _, err := db.ExecContext(ctx, `UPDATE field_indexes SET state = 'failed', error = 'boom'`); err != nil {
			t.Fatal(err)
		}
		again, created, err := svc.Declare(ctx, actor, storage.FieldIndexSpec{Collection: likes, Path: "subject.uri"})
		if err != nil || created || again.ID != idx.ID || again.State != storage.FieldIndexBuilding {
			t.Fatalf("declare a failed index: %+v %v %v", again, created, err)
		}
		waitFor(t, "the restarted index to be ready", ready)
		list, _, err := store.ListEvents(ctx, storage.EventFilter{Type: "field_index.restarted", Limit: 5})
		if err != nil || len(list) != 1 {
			t.Fatalf("restarted events: %+v %v", list, err)
		}
		var d struct {
			PreviousError string `json:"previous_error"`
		}
		if err := json.Unmarshal(list[0].Detail, &d); err != nil || d.PreviousError != "boom" {
			t.Errorf("restarted detail %s", list[0].Detail)
		}
	})
}
