package fieldindexes

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/lexview/lexview/storage"
)

// SuggestOptions tune the index suggestions.
type SuggestOptions struct {
	// MinRecords: scans of collections holding fewer records are neither
	// logged nor suggested (scanning them is cheap). 0 means
	// DefaultSuggestMinRecords; a negative value suggests every scan.
	MinRecords int64
	// MaxEntries bounds the suggestions kept; the least recently seen
	// goes first. Default 100.
	MaxEntries int
	// LogEvery is the least time between two log lines about one
	// collection and field; default 5 min.
	LogEvery time.Duration
	// SizeRecheck is how long a collection's record count is trusted
	// before it is counted again; default 5 min.
	SizeRecheck time.Duration
}

// The defaults of SuggestOptions.
const (
	DefaultSuggestMinRecords = 10_000
	DefaultSuggestEntries    = 100
	DefaultSuggestLogEvery   = 5 * time.Minute
	DefaultSizeRecheck       = 5 * time.Minute
	sizeCountTimeout         = 30 * time.Second
	// maxLogLines bounds the log lines of all suggestions within one
	// LogEvery: a script querying ever new fields does not flood the log.
	maxLogLines = 20
	// maxSizes bounds the collection sizes remembered.
	maxSizes = 1000
)

func (o SuggestOptions) withDefaults() SuggestOptions {
	if o.MinRecords == 0 {
		o.MinRecords = DefaultSuggestMinRecords
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultSuggestEntries
	}
	if o.LogEvery <= 0 {
		o.LogEvery = DefaultSuggestLogEvery
	}
	if o.SizeRecheck <= 0 {
		o.SizeRecheck = DefaultSizeRecheck
	}
	return o
}

// Suggestion is a value index that would have served queries answered by
// scanning a collection.
type Suggestion struct {
	Collection string
	Field      string // the field path to index
	Kind       storage.FieldIndexKind
	// Count is the number of such queries seen by this instance since it
	// started (or since the suggestion was last dropped from the list).
	Count int64
	// Records is the collection's size when last counted; -1 before.
	Records             int64
	FirstSeen, LastSeen time.Time
}

type suggestionKey struct{ collection, field string }

// suggestion is a Suggestion with when it was last logged.
type suggestion struct {
	Suggestion
	logged time.Time
}

// collectionSize is a collection's record count, as last counted.
type collectionSize struct {
	n        int64
	at       time.Time
	counting bool
}

// suggestions holds what ObserveScan gathered.
type suggestions struct {
	mu    sync.Mutex
	byKey map[suggestionKey]*suggestion
	sizes map[string]*collectionSize
	// window is when the current LogEvery window of log lines began,
	// lines how many it holds.
	window time.Time
	lines  int
	// counter bounds the record counts running at once to one.
	counter chan struct{}
}

func (g *suggestions) init() {
	g.byKey = map[suggestionKey]*suggestion{}
	g.sizes = map[string]*collectionSize{}
	g.counter = make(chan struct{}, 1)
}

// forget removes the suggestion of a collection and field (an index was
// declared on it).
func (g *suggestions) forget(collection, field string) {
	g.mu.Lock()
	delete(g.byKey, suggestionKey{collection, field})
	g.mu.Unlock()
}

// ObserveScan takes note of a query answered by scanning a collection
// where a value index would have served it (storage.RecordQuery.OnScan):
// the first of the hint's fields is suggested. A scan of a large
// collection (SuggestOptions.MinRecords) is logged at most once per
// collection and field every SuggestOptions.LogEvery. It is cheap and
// never blocks on the database: the collection's size is counted in the
// background, at most every SuggestOptions.SizeRecheck.
func (s *Service) ObserveScan(hint storage.ScanHint) {
	if hint.Collection == "" || len(hint.Fields) == 0 {
		return
	}
	if s.opt.Metrics != nil {
		s.opt.Metrics.IndexableScan(hint.Collection)
	}
	g := &s.sug
	now := s.opt.Now()
	key := suggestionKey{hint.Collection, hint.Fields[0]}
	g.mu.Lock()
	e := g.byKey[key]
	if e == nil {
		g.evictFor(s.opt.Suggest.MaxEntries)
		e = &suggestion{Suggestion: Suggestion{Collection: key.collection, Field: key.field, Kind: storage.FieldIndexValue,
			Records: -1, FirstSeen: now}}
		g.byKey[key] = e
	}
	e.Count++
	e.LastSeen = now
	size := g.sizes[key.collection]
	if size == nil {
		g.trimSizes()
		size = &collectionSize{n: -1}
		g.sizes[key.collection] = size
	}
	e.Records = size.n
	count := !size.counting && (size.n < 0 || now.Sub(size.at) >= s.opt.Suggest.SizeRecheck)
	if count {
		select {
		case g.counter <- struct{}{}:
			size.counting = true
		default: // another count runs: a later scan counts this one
			count = false
		}
	}
	line, logIt := s.logLine(e, now)
	g.mu.Unlock()
	if logIt {
		s.logScan(line)
	}
	if count {
		go s.countSize(key.collection)
	}
}

// evictFor makes room for one more suggestion, dropping the least
// recently seen. g.mu is held.
func (g *suggestions) evictFor(max int) {
	if len(g.byKey) < max {
		return
	}
	var oldest suggestionKey
	var at time.Time
	for k, e := range g.byKey {
		if at.IsZero() || e.LastSeen.Before(at) {
			oldest, at = k, e.LastSeen
		}
	}
	delete(g.byKey, oldest)
}

// trimSizes forgets the collection sizes not being counted when there
// are too many. g.mu is held.
func (g *suggestions) trimSizes() {
	if len(g.sizes) < maxSizes {
		return
	}
	for c, size := range g.sizes {
		if !size.counting {
			delete(g.sizes, c)
		}
	}
}

// large reports whether a collection of n records (-1: not counted yet)
// is worth a suggestion.
func (s *Service) large(n int64) bool {
	return s.opt.Suggest.MinRecords < 0 || n >= s.opt.Suggest.MinRecords
}

// logLine returns the log line of a suggestion when one is due: its
// collection is large, none was logged for it within LogEvery, and the
// lines of the current window are not spent. g.mu is held.
func (s *Service) logLine(e *suggestion, now time.Time) (Suggestion, bool) {
	g, every := &s.sug, s.opt.Suggest.LogEvery
	if !s.large(e.Records) || !e.logged.IsZero() && now.Sub(e.logged) < every {
		return Suggestion{}, false
	}
	if now.Sub(g.window) >= every {
		g.window, g.lines = now, 0
	}
	if g.lines >= maxLogLines {
		return Suggestion{}, false
	}
	g.lines++
	e.logged = now
	return e.Suggestion, true
}

func (s *Service) logScan(e Suggestion) {
	s.log.Warn("a script's query scanned a collection: a value index would serve it",
		"collection", e.Collection, "field", e.Field, "records", e.Records, "scans", e.Count,
		"declare", fmt.Sprintf(`POST /admin/indexes {"collection": %q, "path": %q, "kind": "value"}`, e.Collection, e.Field))
}

// countSize counts a collection's records for the suggestions, then logs
// the suggestions of the collection that became due.
func (s *Service) countSize(collection string) {
	g := &s.sug
	ctx, cancel := context.WithTimeout(context.Background(), sizeCountTimeout)
	defer cancel()
	n, err := s.opt.Store.CountRecords(ctx, collection)
	now := s.opt.Now()
	g.mu.Lock()
	// The slot is free again as the count is seen to end: a scan that
	// finds the size stale may count it at once.
	<-g.counter
	size := g.sizes[collection]
	size.counting = false
	if err != nil {
		g.mu.Unlock()
		s.log.Debug("counting a collection for the index suggestions failed", "collection", collection, "err", err)
		return
	}
	size.n, size.at = n, now
	var due []Suggestion
	for k, e := range g.byKey {
		if k.collection != collection {
			continue
		}
		e.Records = n
		if line, ok := s.logLine(e, now); ok {
			due = append(due, line)
		}
	}
	g.mu.Unlock()
	for _, line := range due {
		s.logScan(line)
	}
}

// Suggestions returns the suggestions for large collections
// (SuggestOptions.MinRecords) whose field has no declared index, the
// most frequent first.
func (s *Service) Suggestions(ctx context.Context) ([]Suggestion, error) {
	s.sug.mu.Lock()
	var out []Suggestion
	for _, e := range s.sug.byKey {
		if s.large(e.Records) {
			out = append(out, e.Suggestion)
		}
	}
	s.sug.mu.Unlock()
	if len(out) == 0 {
		return []Suggestion{}, nil
	}
	declared, err := s.opt.Store.ListFieldIndexes(ctx, "")
	if err != nil {
		return nil, err
	}
	have := map[suggestionKey]bool{}
	for _, f := range declared {
		if f.Kind == storage.FieldIndexValue {
			have[suggestionKey{f.Collection, f.Path}] = true
		}
	}
	out = slices.DeleteFunc(out, func(e Suggestion) bool { return have[suggestionKey{e.Collection, e.Field}] })
	slices.SortFunc(out, func(a, b Suggestion) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), b.LastSeen.Compare(a.LastSeen),
			cmp.Compare(a.Collection, b.Collection), cmp.Compare(a.Field, b.Field))
	})
	return out, nil
}
