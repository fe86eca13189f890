package lexicon

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/storage"
)

// Store is the persistence the registry needs.
type Store interface {
	PutLexicon(ctx context.Context, l storage.Lexicon) (storage.Lexicon, bool, error)
	ListLexicons(ctx context.Context) ([]storage.Lexicon, error)
	DeleteLexicon(ctx context.Context, id string) error
}

// Lexicon is one registered lexicon as the rest of Lexview sees it.
type Lexicon struct {
	ID               string
	Revision         int
	Kind             Kind
	Raw              json.RawMessage
	Backfill         bool
	TargetCollection string // "" when the lexicon has none
	Script           string
	IndexHook        string
	// OutputLabels is set for a query whose output schema declares a
	// top-level `labels` property: its default answers carry the labels
	// on the records they return.
	OutputLabels bool
	// RecordURI is set for a record lexicon whose record declares a
	// top-level `uri` property: a default procedure's body may then carry
	// `uri` as a field of the record (see docs/oauth.md).
	RecordURI bool
	// Params checks a call's query-string parameters against a query's or
	// procedure's declared `parameters`, compiled when the lexicon was
	// stored or loaded; nil (which checks nothing) when it declares none.
	Params    *Params
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Upload is a request to add or replace a lexicon.
type Upload struct {
	// Document is the raw lexicon JSON.
	Document json.RawMessage
	// Backfill asks for the collection's history; nil means true.
	Backfill *bool
	// TargetCollection is the collection a query or procedure works on.
	// A record lexicon's collection is always its own id.
	TargetCollection string
	// Script is a Lua handler; IndexHook a Lua record hook.
	Script, IndexHook string
}

// Snapshot is an immutable view of every registered lexicon. Readers hold
// on to one snapshot for the length of a request without locking.
type Snapshot struct {
	byID        map[string]*Lexicon
	ids         []string
	collections []string
	cat         catalog
}

// Get returns the lexicon with the given NSID.
func (s *Snapshot) Get(nsid string) (*Lexicon, bool) {
	l, ok := s.byID[nsid]
	return l, ok
}

// All returns every lexicon ordered by id.
func (s *Snapshot) All() []*Lexicon {
	out := make([]*Lexicon, len(s.ids))
	for i, id := range s.ids {
		out[i] = s.byID[id]
	}
	return out
}

// RecordCollections returns the collections of the record lexicons, sorted.
// These are the collections Lexview indexes.
func (s *Snapshot) RecordCollections() []string { return slices.Clone(s.collections) }

// Len is the number of lexicons.
func (s *Snapshot) Len() int { return len(s.ids) }

func newSnapshot(byID map[string]*Lexicon) *Snapshot {
	s := &Snapshot{byID: byID}
	for id, l := range byID {
		s.ids = append(s.ids, id)
		if l.Kind == KindRecord {
			s.collections = append(s.collections, id)
		}
	}
	slices.Sort(s.ids)
	slices.Sort(s.collections)
	return s
}

// Registry owns the current Snapshot and changes it. Writers are serialised;
// readers call Snapshot, which never blocks.
type Registry struct {
	store   Store
	current atomic.Pointer[Snapshot]

	mu          sync.Mutex // serialises writers and guards subscribers
	subscribers map[chan struct{}]struct{}
}

// NewRegistry returns an empty registry backed by store. Call Load to read
// the stored lexicons.
func NewRegistry(store Store) *Registry {
	r := &Registry{store: store, subscribers: map[chan struct{}]struct{}{}}
	r.current.Store(newSnapshot(map[string]*Lexicon{}))
	return r
}

// Snapshot returns the current snapshot.
func (r *Registry) Snapshot() *Snapshot { return r.current.Load() }

// Load replaces the snapshot with the lexicons in the store. A stored
// document that no longer parses is an error.
func (r *Registry) Load(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	stored, err := r.store.ListLexicons(ctx)
	if err != nil {
		return fmt.Errorf("load lexicons: %w", err)
	}
	byID := make(map[string]*Lexicon, len(stored))
	for _, s := range stored {
		if _, err := Parse(s.JSON); err != nil {
			return fmt.Errorf("stored lexicon %s: %w", s.ID, err)
		}
		byID[s.ID] = fromStorage(s)
	}
	r.swap(byID)
	return nil
}

// Refresh re-reads the stored lexicons and swaps in a new snapshot if they
// differ from the current one (added, removed, or at another revision),
// which is how changes made through another instance sharing the database
// arrive. It reports whether the snapshot changed. Unchanged lexicons keep
// their values, so compiled state that depends on them is rebuilt only for
// a real change.
func (r *Registry) Refresh(ctx context.Context) (bool, error) {
	// Read under the writers' lock: a local Put between the read and the
	// swap would otherwise be undone until the next refresh.
	r.mu.Lock()
	defer r.mu.Unlock()
	stored, err := r.store.ListLexicons(ctx)
	if err != nil {
		return false, fmt.Errorf("refresh lexicons: %w", err)
	}
	cur := r.current.Load()
	byID := make(map[string]*Lexicon, len(stored))
	changed := len(stored) != len(cur.byID)
	for _, s := range stored {
		if l, ok := cur.byID[s.ID]; ok && l.Revision == s.Revision && l.UpdatedAt.Equal(s.UpdatedAt) {
			byID[s.ID] = l
			continue
		}
		if _, err := Parse(s.JSON); err != nil {
			return false, fmt.Errorf("stored lexicon %s: %w", s.ID, err)
		}
		byID[s.ID] = fromStorage(s)
		changed = true
	}
	if changed {
		r.swap(byID)
	}
	return changed, nil
}

// RunRefresh calls Refresh every interval until ctx ends, logging failures
// through logf.
func (r *Registry) RunRefresh(ctx context.Context, interval time.Duration, logf func(err error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := r.Refresh(ctx); err != nil && ctx.Err() == nil {
				logf(err)
			}
		}
	}
}

// Put validates and stores a lexicon, then swaps in a snapshot containing
// it. It reports whether the lexicon is new; a re-upload increments the
// revision. Invalid uploads return a *ParseError.
func (r *Registry) Put(ctx context.Context, u Upload) (*Lexicon, bool, error) {
	doc, err := Parse(u.Document)
	if err != nil {
		return nil, false, err
	}
	target := u.TargetCollection
	switch {
	case doc.Kind == KindRecord:
		target = doc.ID.String()
	case target != "":
		if _, err := syntax.ParseNSID(target); err != nil {
			return nil, false, parseErr("invalid target_collection %q", target)
		}
	}
	backfill := true
	if u.Backfill != nil {
		backfill = *u.Backfill
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	stored, created, err := r.store.PutLexicon(ctx, storage.Lexicon{
		ID: doc.ID.String(), Type: string(doc.Kind), JSON: doc.Raw, Backfill: backfill,
		TargetCollection: target, Script: u.Script, IndexHook: u.IndexHook,
	})
	if err != nil {
		return nil, false, err
	}
	l := fromStorage(stored)
	byID := r.copyCurrent()
	byID[l.ID] = l
	r.swap(byID)
	return l, created, nil
}

// Delete removes a lexicon. It returns storage.ErrNotFound when absent.
func (r *Registry) Delete(ctx context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.store.DeleteLexicon(ctx, id); err != nil {
		return err
	}
	byID := r.copyCurrent()
	delete(byID, id)
	r.swap(byID)
	return nil
}

// Subscribe returns a channel that receives a value after every snapshot
// change (changes in quick succession may coalesce into one), and a function
// that ends the subscription.
func (r *Registry) Subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	r.mu.Lock()
	r.subscribers[ch] = struct{}{}
	r.mu.Unlock()
	return ch, func() {
		r.mu.Lock()
		delete(r.subscribers, ch)
		r.mu.Unlock()
	}
}

// copyCurrent copies the current map; the caller holds mu.
func (r *Registry) copyCurrent() map[string]*Lexicon {
	cur := r.current.Load()
	byID := make(map[string]*Lexicon, len(cur.byID)+1)
	for k, v := range cur.byID {
		byID[k] = v
	}
	return byID
}

// swap publishes a snapshot and notifies subscribers; the caller holds mu.
func (r *Registry) swap(byID map[string]*Lexicon) {
	r.current.Store(newSnapshot(byID))
	for ch := range r.subscribers {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func fromStorage(s storage.Lexicon) *Lexicon {
	return &Lexicon{
		ID: s.ID, Revision: s.Revision, Kind: Kind(s.Type), Raw: s.JSON, Backfill: s.Backfill,
		TargetCollection: s.TargetCollection, Script: s.Script, IndexHook: s.IndexHook,
		OutputLabels: Kind(s.Type) == KindQuery && declaresOutputLabels(s.JSON),
		RecordURI:    Kind(s.Type) == KindRecord && declaresRecordProperty(s.JSON, "uri"),
		Params:       methodParams(Kind(s.Type), s.JSON),
		CreatedAt:    s.CreatedAt, UpdatedAt: s.UpdatedAt,
	}
}

// methodParams compiles the parameters of a query or procedure lexicon.
func methodParams(kind Kind, raw json.RawMessage) *Params {
	if kind != KindQuery && kind != KindProcedure {
		return nil
	}
	return compileParams(raw)
}

// declaresRecordProperty reports whether a record lexicon's record schema
// (an object) declares the top-level property name.
func declaresRecordProperty(raw json.RawMessage, name string) bool {
	var doc struct {
		Defs struct {
			Main struct {
				Record struct {
					Properties map[string]json.RawMessage `json:"properties"`
				} `json:"record"`
			} `json:"main"`
		} `json:"defs"`
	}
	if json.Unmarshal(raw, &doc) != nil {
		return false
	}
	_, ok := doc.Defs.Main.Record.Properties[name]
	return ok
}

// declaresOutputLabels reports whether a lexicon's main definition has an
// output schema that is an object with a `labels` property.
func declaresOutputLabels(raw json.RawMessage) bool {
	var doc struct {
		Defs struct {
			Main struct {
				Output struct {
					Schema struct {
						Type       string                     `json:"type"`
						Properties map[string]json.RawMessage `json:"properties"`
					} `json:"schema"`
				} `json:"output"`
			} `json:"main"`
		} `json:"defs"`
	}
	if json.Unmarshal(raw, &doc) != nil {
		return false
	}
	schema := doc.Defs.Main.Output.Schema
	_, ok := schema.Properties["labels"]
	return schema.Type == "object" && ok
}
