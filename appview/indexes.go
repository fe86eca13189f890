package appview

import (
	"context"
	"fmt"
	"time"

	"github.com/lexview/lexview/appview/internal/core/metrics"
	"github.com/lexview/lexview/appview/internal/service/fieldindexes"
	"github.com/lexview/lexview/storage"
)

// Indexes manages the App's declared field indexes (App.Indexes). It is
// the code behind /admin/indexes: a value index on a collection's field
// lets db.query and db.count answer a condition or a sort on that field
// from the index instead of scanning the collection's records. A declared
// index is kept current as records are written, built for the records
// stored before by the leader in the background (without holding up
// ingestion), and used by the query planner once it is ready. Every
// declaration and drop is audited in the event log, with no actor.
// docs/queries.md#declared-field-indexes says how to choose one.
type Indexes struct{ svc *fieldindexes.Service }

// Indexes returns the App's field index manager.
func (a *App) Indexes() *Indexes { return &Indexes{a.fieldIndexes} }

// Declare declares an index on spec.Collection's field spec.Path (in the
// syntax of storage.Filter.Field, such as "subject.uri"), of spec.Kind
// (storage.FieldIndexValue when empty). A new index is returned in state
// storage.FieldIndexBuilding with created true; declaring one that exists
// returns it with created false and changes nothing, except that a failed
// index is built again. A bad collection, path or kind, or a collection
// that has storage.MaxFieldIndexes already, is an ErrInvalid *Error.
func (x *Indexes) Declare(ctx context.Context, spec storage.FieldIndexSpec) (idx storage.FieldIndex, created bool, err error) {
	idx, created, err = x.svc.Declare(ctx, "", spec)
	return idx, created, publicError(err)
}

// List returns the declared indexes of a collection ("" for every
// collection) with their state and the progress of their build, by
// collection, path and kind.
func (x *Indexes) List(ctx context.Context, collection string) ([]storage.FieldIndex, error) {
	list, err := x.svc.List(ctx, collection)
	return list, publicError(err)
}

// Get returns one index; an unknown id is an ErrNotFound *Error.
func (x *Indexes) Get(ctx context.Context, id int64) (storage.FieldIndex, error) {
	f, err := x.svc.Get(ctx, id)
	return f, publicError(err)
}

// Drop drops an index: the planner stops using it at once, and its
// entries are removed in the background. An unknown id is an ErrNotFound
// *Error.
func (x *Indexes) Drop(ctx context.Context, id int64) error {
	return publicError(x.svc.Drop(ctx, "", id))
}

// WaitReady waits until no declared index of collection ("" for every
// collection) is still building, checking every 20 ms, and returns an
// error naming the first index whose build failed. It returns ctx's
// error when ctx ends first: give it a deadline.
func (x *Indexes) WaitReady(ctx context.Context, collection string) error {
	for {
		list, err := x.List(ctx, collection)
		if err != nil {
			return err
		}
		ready := true
		for _, idx := range list {
			switch idx.State {
			case storage.FieldIndexFailed:
				return fmt.Errorf("the index on %s %s failed: %s", idx.Collection, idx.Path, idx.Error)
			case storage.FieldIndexBuilding:
				ready = false
			}
		}
		if ready {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the declared indexes are still building: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// IndexSuggestion is a value index that would have served scripts'
// queries this instance answered by scanning a large collection.
type IndexSuggestion struct {
	Collection string
	Field      string // the field path to index
	Kind       storage.FieldIndexKind
	// Count is the number of such queries seen since the App started.
	Count int64
	// Records is the collection's size when last counted; -1 before.
	Records             int64
	FirstSeen, LastSeen time.Time
}

// Suggestions returns the indexes that would have served scripts'
// db.query and db.count calls answered by scanning a collection of at
// least Config.Scripts.IndexSuggestionMinRecords records, the most
// frequent first; a field with a declared index is not suggested.
func (x *Indexes) Suggestions(ctx context.Context) ([]IndexSuggestion, error) {
	list, err := x.svc.Suggestions(ctx)
	if err != nil {
		return nil, publicError(err)
	}
	out := make([]IndexSuggestion, len(list))
	for i, s := range list {
		out[i] = IndexSuggestion(s)
	}
	return out, nil
}

// newFieldIndexes builds the service of declared field indexes: the
// leader runs its build (leaderComponents), and scripts' queries report
// their scans to its suggestions.
func (a *App) newFieldIndexes() *fieldindexes.Service {
	opt := fieldindexes.Options{Store: a.store, Events: a.events, Logger: a.log, Now: a.cfg.Now,
		Suggest: fieldindexes.SuggestOptions{MinRecords: a.cfg.Scripts.IndexSuggestionMinRecords}}
	if a.metrics != nil {
		opt.Metrics = a.metrics
	}
	return fieldindexes.New(opt)
}

// fieldIndexStates reads the declared field indexes for the metrics,
// within a scrape's patience.
func (a *App) fieldIndexStates() ([]metrics.FieldIndexState, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	list, err := a.store.ListFieldIndexes(ctx, "")
	if err != nil {
		return nil, false
	}
	out := make([]metrics.FieldIndexState, len(list))
	for i, f := range list {
		out[i] = metrics.FieldIndexState{Collection: f.Collection, Path: f.Path, Kind: string(f.Kind),
			Ready: f.State == storage.FieldIndexReady, Done: f.Done, Total: f.Total}
	}
	return out, true
}
