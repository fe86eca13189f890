package fieldindexes_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lexview/lexview/appview/internal/service/fieldindexes"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// countingStore counts CountRecords calls by collection.
type countingStore struct {
	storage.Store
	mu     sync.Mutex
	counts map[string]int
}

func (s *countingStore) CountRecords(ctx context.Context, collection string) (int64, error) {
	s.mu.Lock()
	s.counts[collection]++
	s.mu.Unlock()
	return s.Store.CountRecords(ctx, collection)
}

func (s *countingStore) calls(collection string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[collection]
}

// clock is a settable clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// scans counts IndexableScan calls.
type scans struct {
	mu sync.Mutex
	n  map[string]int
}

func (s *scans) IndexableScan(collection string) {
	s.mu.Lock()
	s.n[collection]++
	s.mu.Unlock()
}

func find(list []fieldindexes.Suggestion, collection, field string) (fieldindexes.Suggestion, bool) {
	for _, e := range list {
		if e.Collection == collection && e.Field == field {
			return e, true
		}
	}
	return fieldindexes.Suggestion{}, false
}

const logLine = "a script's query scanned a collection: a value index would serve it"

// TestSuggestions: scans of a large collection become a suggestion (its
// size counted once in the background), logged once per collection and
// field per LogEvery; small collections are not suggested; declaring the
// index removes the suggestion.
func TestSuggestions(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		store := &countingStore{Store: open(t), counts: map[string]int{}}
		seedLikes(t, store, 120)
		ctx := context.Background()
		clk := &clock{now: time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)}
		var logs syncBuffer
		metrics := &scans{n: map[string]int{}}
		svc := newService(store, &logs, fieldindexes.Options{Now: clk.Now, Metrics: metrics,
			Suggest: fieldindexes.SuggestOptions{MinRecords: 100}})
		svc.ObserveScan(storage.ScanHint{Collection: likes}) // no field: nothing to suggest
		hint := storage.ScanHint{Collection: likes, Fields: []string{"subject.uri", "createdAt"}}
		for range 3 {
			svc.ObserveScan(hint)
		}

		var got fieldindexes.Suggestion
		waitFor(t, "the suggestion", func() bool {
			list, err := svc.Suggestions(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var ok bool
			got, ok = find(list, likes, "subject.uri")
			return ok
		})
		if got.Count != 3 || got.Records != 120 || got.Kind != storage.FieldIndexValue || !got.LastSeen.Equal(clk.Now()) {
			t.Errorf("suggestion %+v", got)
		}
		waitFor(t, "the log line", func() bool { return strings.Count(logs.String(), logLine) == 1 })
		if !strings.Contains(logs.String(), `declare="POST /admin/indexes {\"collection\": \"app.test.like\", \"path\": \"subject.uri\", \"kind\": \"value\"}"`) {
			t.Errorf("the log line does not say how to declare the index: %s", logs.String())
		}
		for range 5 {
			svc.ObserveScan(hint)
		}
		if n := strings.Count(logs.String(), logLine); n != 1 {
			t.Errorf("%d log lines within LogEvery, want 1", n)
		}
		if n := store.calls(likes); n != 1 {
			t.Errorf("the collection was counted %d times within SizeRecheck", n)
		}
		metrics.mu.Lock()
		if n := metrics.n[likes]; n != 8 {
			t.Errorf("IndexableScan counted %d scans, want 8", n)
		}
		metrics.mu.Unlock()

		clk.add(fieldindexes.DefaultSuggestLogEvery)
		svc.ObserveScan(hint)
		if n := strings.Count(logs.String(), logLine); n != 2 {
			t.Errorf("%d log lines after LogEvery, want 2", n)
		}
		waitFor(t, "the collection counted again", func() bool { return store.calls(likes) == 2 })
		// A small collection is not suggested, counted or not.
		svc.ObserveScan(storage.ScanHint{Collection: "app.test.small", Fields: []string{"x"}})

		list, err := svc.Suggestions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := find(list, "app.test.small", "x"); ok || len(list) != 1 {
			t.Errorf("suggestions %+v, want the like's only", list)
		}
		if _, _, err := svc.Declare(ctx, actor, storage.FieldIndexSpec{Collection: likes, Path: "subject.uri"}); err != nil {
			t.Fatal(err)
		}
		svc.ObserveScan(hint) // the index is building: the scan is seen again
		if list, err := svc.Suggestions(ctx); err != nil || len(list) != 0 {
			t.Errorf("suggestions after the declaration: %+v %v", list, err)
		}
	})
}

// TestSuggestionsBounded: with no size threshold every scan is suggested
// at once, and the least recently seen suggestion makes room for a new
// one.
func TestSuggestionsBounded(t *testing.T) {
	t.Parallel()
	store := storagetest.SQLite(t)
	clk := &clock{now: time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)}
	svc := newService(store, nil, fieldindexes.Options{Now: clk.Now,
		Suggest: fieldindexes.SuggestOptions{MinRecords: -1, MaxEntries: 2}})
	for _, f := range []string{"a", "b", "a", "c"} {
		clk.add(time.Second)
		svc.ObserveScan(storage.ScanHint{Collection: likes, Fields: []string{f}})
	}
	list, err := svc.Suggestions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Field != "a" || list[0].Count != 2 || list[1].Field != "c" {
		t.Errorf("suggestions %+v, want a (2 scans) then c", list)
	}
}
