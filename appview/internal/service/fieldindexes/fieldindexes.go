// Package fieldindexes is the service for declared field indexes
// (storage.FieldIndexStore): declaring, listing and dropping them, with
// their event-log entries; the background build the leader runs
// (build.go); and the index suggestions gathered from scripts' queries
// that scanned a collection (suggest.go). POST /admin/indexes, the
// indexes of a record lexicon upload and App.Indexes() are all this code.
package fieldindexes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/storage"
)

// Store is the persistence the service needs.
type Store interface {
	storage.FieldIndexStore
	// CountRecords counts a collection's records (for the suggestions:
	// only scans of large collections are suggested).
	CountRecords(ctx context.Context, collection string) (int64, error)
}

// Metrics receives what the service counts; nil counts nothing.
type Metrics interface {
	// IndexableScan counts a query that scanned collection where a value
	// index would have served it.
	IndexableScan(collection string)
}

// Options configure a Service. Store is required.
type Options struct {
	Store   Store
	Events  *eventlog.Log // nil: nothing is recorded
	Metrics Metrics       // nil: nothing is counted
	Logger  *slog.Logger  // default slog.Default()
	Now     func() time.Time
	// Build paces the background build; zero fields take the defaults.
	Build BuildPacing
	// Suggest tunes the index suggestions; zero fields take the defaults.
	Suggest SuggestOptions
}

// Service declares, lists and drops field indexes, builds them (Run) and
// gathers index suggestions (ObserveScan).
type Service struct {
	opt  Options
	log  *slog.Logger
	wake chan struct{}
	sug  suggestions
	// declaring serialises declarations through this instance, so that
	// the room check (MaxFieldIndexes) and the declaration agree.
	declaring sync.Mutex
}

// New returns a Service.
func New(opt Options) *Service {
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	opt.Build = opt.Build.withDefaults()
	opt.Suggest = opt.Suggest.withDefaults()
	s := &Service{opt: opt, log: opt.Logger, wake: make(chan struct{}, 1)}
	s.sug.init()
	return s
}

// The refusals of the service, worded as the admin API answers them: each
// begins with the field of the request it is about.
var (
	errNotFound      = fail.New(fail.NotFound, "field index not found")
	errNoCollection  = fail.New(fail.Invalid, "collection is required")
	errBadCollection = fail.New(fail.Invalid, "collection must be an NSID")
	errNoPath        = fail.New(fail.Invalid, "path is required")
	errBadKind       = fail.New(fail.Invalid, "kind must be value or text")
)

// Validate checks a declaration's syntax and returns it normalised: an
// empty kind is storage.FieldIndexValue. It reads nothing.
func Validate(spec storage.FieldIndexSpec) (storage.FieldIndexSpec, error) {
	switch {
	case spec.Collection == "":
		return spec, errNoCollection
	case !validNSID(spec.Collection):
		return spec, errBadCollection
	case spec.Path == "":
		return spec, errNoPath
	}
	if why := checkPath(spec.Path); why != "" {
		return spec, fail.Newf(fail.Invalid, "path %q is not a field path: %s", shorten(spec.Path), why)
	}
	switch spec.Kind {
	case "":
		spec.Kind = storage.FieldIndexValue
	case storage.FieldIndexValue, storage.FieldIndexText:
	default:
		return spec, errBadKind
	}
	return spec, nil
}

func validNSID(s string) bool {
	_, err := syntax.ParseNSID(s)
	return err == nil
}

// shorten bounds a user's value quoted in a message.
func shorten(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// CheckRoom reports whether collection has room for the indexes of specs
// (already validated, all of collection) that it does not have yet: a
// collection holds at most storage.MaxFieldIndexes, of which at most
// storage.MaxTextIndexes text indexes.
func (s *Service) CheckRoom(ctx context.Context, collection string, specs []storage.FieldIndexSpec) error {
	have, err := s.opt.Store.ListFieldIndexes(ctx, collection)
	if err != nil {
		return err
	}
	declared := map[storage.FieldIndexSpec]bool{}
	for _, f := range have {
		declared[f.Spec()] = true
	}
	n := len(have)
	for _, spec := range specs {
		spec.Collection = collection
		if !declared[spec] {
			declared[spec] = true
			n++
		}
	}
	if n > storage.MaxFieldIndexes {
		return fail.Newf(fail.Invalid, "collection %s would have %d field indexes, more than the %d it may have", collection, n, storage.MaxFieldIndexes)
	}
	texts := 0
	for spec := range declared {
		if spec.Kind == storage.FieldIndexText {
			texts++
		}
	}
	if texts > storage.MaxTextIndexes {
		return fail.Newf(fail.Invalid, "collection %s would have %d text indexes, more than the %d it may have", collection, texts, storage.MaxTextIndexes)
	}
	return nil
}

// Declare declares an index on behalf of actor (a DID; "" for the
// instance itself) and wakes the build. created is true for a new index;
// declaring one that exists returns it unchanged, except that a failed
// index is built again. A new index is recorded as field_index.declared,
// a restarted one as field_index.restarted.
func (s *Service) Declare(ctx context.Context, actor string, spec storage.FieldIndexSpec) (storage.FieldIndex, bool, error) {
	spec, err := Validate(spec)
	if err != nil {
		return storage.FieldIndex{}, false, err
	}
	s.declaring.Lock()
	defer s.declaring.Unlock()
	before, exists, err := s.find(ctx, spec)
	if err != nil {
		return storage.FieldIndex{}, false, err
	}
	if !exists {
		if err := s.CheckRoom(ctx, spec.Collection, []storage.FieldIndexSpec{spec}); err != nil {
			return storage.FieldIndex{}, false, err
		}
	}
	idx, created, err := s.opt.Store.DeclareFieldIndex(ctx, spec)
	if errors.Is(err, storage.ErrInvalidFieldIndex) {
		return storage.FieldIndex{}, false, fail.Wrap(fail.Invalid, err.Error(), err)
	}
	if err != nil {
		return storage.FieldIndex{}, false, fmt.Errorf("declare field index: %w", err)
	}
	switch {
	case created:
		s.record(ctx, eventlog.Entry{Type: "field_index.declared", ActorDID: actor, Subject: idx.Collection, Detail: detail(idx)})
	case exists && before.State == storage.FieldIndexFailed:
		d := detail(idx)
		d["previous_error"] = before.Error
		s.record(ctx, eventlog.Entry{Type: "field_index.restarted", ActorDID: actor, Subject: idx.Collection, Detail: d})
	}
	s.sug.forget(idx.Collection, idx.Path)
	s.Wake()
	return idx, created, nil
}

// find returns the declared index of spec, if there is one.
func (s *Service) find(ctx context.Context, spec storage.FieldIndexSpec) (storage.FieldIndex, bool, error) {
	list, err := s.opt.Store.ListFieldIndexes(ctx, spec.Collection)
	if err != nil {
		return storage.FieldIndex{}, false, err
	}
	for _, f := range list {
		if f.Spec() == spec {
			return f, true, nil
		}
	}
	return storage.FieldIndex{}, false, nil
}

// List returns the indexes of collection ("" for every collection), by
// collection, path and kind. A collection that is not an NSID is refused.
func (s *Service) List(ctx context.Context, collection string) ([]storage.FieldIndex, error) {
	if collection != "" && !validNSID(collection) {
		return nil, errBadCollection
	}
	return s.opt.Store.ListFieldIndexes(ctx, collection)
}

// ParseID reads an index ID as the admin API's paths carry it: an ID
// that is no positive integer names no index (NotFound).
func ParseID(raw string) (int64, error) {
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id <= 0 {
		return 0, errNotFound
	}
	return id, nil
}

// Get returns one index.
func (s *Service) Get(ctx context.Context, id int64) (storage.FieldIndex, error) {
	f, err := s.opt.Store.GetFieldIndex(ctx, id)
	if errors.Is(err, storage.ErrNotFound) {
		return storage.FieldIndex{}, errNotFound
	}
	return f, err
}

// Drop drops an index on behalf of actor (field_index.dropped): the
// planner stops using it at once, and the build deletes its entries in
// the background.
func (s *Service) Drop(ctx context.Context, actor string, id int64) error {
	f, err := s.Get(ctx, id)
	if err != nil {
		return err
	}
	if err := s.opt.Store.DropFieldIndex(ctx, id); errors.Is(err, storage.ErrNotFound) {
		return errNotFound
	} else if err != nil {
		return fmt.Errorf("drop field index: %w", err)
	}
	s.record(ctx, eventlog.Entry{Type: "field_index.dropped", ActorDID: actor, Subject: f.Collection, Detail: detail(f)})
	s.Wake()
	return nil
}

// detail is the event-log detail of an index.
func detail(f storage.FieldIndex) map[string]any {
	return map[string]any{"id": f.ID, "path": f.Path, "kind": string(f.Kind), "state": string(f.State), "total": f.Total}
}

func (s *Service) record(ctx context.Context, e eventlog.Entry) {
	if s.opt.Events != nil {
		s.opt.Events.Record(context.WithoutCancel(ctx), e)
	}
}
