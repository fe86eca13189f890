package storage

import (
	"context"
	"errors"
	"time"
)

// Declared field indexes let QueryRecords and CountMatching answer from an
// index instead of scanning a collection's stored JSON. An operator
// declares, per collection, a field path (in the syntax of Filter.Field)
// and a kind; the store keeps every declared index current in the same
// transaction as the records, on every write path, from the moment it is
// declared, and fills it for the records stored before by a resumable
// background build (BuildFieldIndexes) that never holds a long lock. The
// query planner uses an index once it is ready, invisibly: answers are the
// same with and without it.

// FieldIndexKind is what a field index serves.
type FieldIndexKind string

// The kinds of field index.
const (
	// FieldIndexValue serves equality and range conditions (=, <, <=, >,
	// >=) on the field and sorts by it.
	FieldIndexValue FieldIndexKind = "value"
	// FieldIndexText serves full-text search on the field.
	FieldIndexText FieldIndexKind = "text"
)

// FieldIndexState is where a field index is in its life.
type FieldIndexState string

// The states of a field index.
const (
	// FieldIndexBuilding: declared and kept current for records written
	// since, while the build fills it for the records stored before. The
	// planner does not use it yet.
	FieldIndexBuilding FieldIndexState = "building"
	// FieldIndexReady: complete; the planner uses it.
	FieldIndexReady FieldIndexState = "ready"
	// FieldIndexFailed: the build stopped on an error (FieldIndex.Error).
	// Declaring the index again restarts it.
	FieldIndexFailed FieldIndexState = "failed"
)

// MaxFieldIndexes bounds the field indexes declared on one collection:
// each costs every write of the collection's records some work.
const MaxFieldIndexes = 16

// ErrInvalidFieldIndex wraps every refusal of a field index declaration
// (a bad collection, path or kind, or too many indexes).
var ErrInvalidFieldIndex = errors.New("invalid field index")

// FieldIndexSpec names a field index: the collection, the field path in
// the syntax of Filter.Field (for example "subject.uri" or
// "embed.images[0].alt") and the kind.
type FieldIndexSpec struct {
	Collection string
	Path       string
	Kind       FieldIndexKind
}

// FieldIndex is a declared field index and the progress of its build.
type FieldIndex struct {
	ID         int64 // assigned by the store, never reused
	Collection string
	Path       string
	Kind       FieldIndexKind
	State      FieldIndexState
	// Done is the number of records the build has processed, of Total,
	// the records the collection held when the build started (an
	// estimate: records written since are indexed as they are written).
	Done, Total int64
	Error       string // why the build failed; "" unless State is failed
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Spec returns the index's name.
func (f FieldIndex) Spec() FieldIndexSpec {
	return FieldIndexSpec{Collection: f.Collection, Path: f.Path, Kind: f.Kind}
}

// FieldIndexProgress is what one BuildFieldIndexes step did.
type FieldIndexProgress struct {
	// Processed is the number of records (or, for dropped indexes,
	// index entries removed) the step went through.
	Processed int
	// Finished are the indexes that became ready or failed in the step.
	Finished []FieldIndex
	// Pending reports whether work remains: indexes still building (of
	// a kind the store builds) or dropped indexes still being removed.
	Pending bool
}

// FieldIndexStore declares, lists and builds field indexes.
type FieldIndexStore interface {
	// DeclareFieldIndex declares an index, in state building. Declaring
	// one that exists (same collection, path and kind) returns it with
	// created false and changes nothing, except that a failed index is
	// restarted. The store keeps the index current for every record
	// written after the declaration returns; BuildFieldIndexes fills it
	// for the others. Refusals wrap ErrInvalidFieldIndex.
	DeclareFieldIndex(ctx context.Context, spec FieldIndexSpec) (idx FieldIndex, created bool, err error)
	// ListFieldIndexes returns the indexes of a collection ("" for
	// every collection), by collection, path and kind.
	ListFieldIndexes(ctx context.Context, collection string) ([]FieldIndex, error)
	// GetFieldIndex returns one index or ErrNotFound.
	GetFieldIndex(ctx context.Context, id int64) (FieldIndex, error)
	// DropFieldIndex removes an index at once from the planner's view and
	// from listings; BuildFieldIndexes deletes its entries in the
	// background. ErrNotFound when absent.
	DropFieldIndex(ctx context.Context, id int64) error
	// BuildFieldIndexes advances the work of building indexes by up to n
	// records (entries of dropped indexes), in one short transaction, so
	// that a caller can run it in a loop beside live ingestion until
	// Pending is false. The position reached is stored with the work: a
	// build resumes where it stopped, after a restart too. An index
	// whose build hits an error it cannot retry is marked failed (and
	// listed in Finished); the returned error is for the step itself (a
	// cancelled context, a lost connection).
	BuildFieldIndexes(ctx context.Context, n int) (FieldIndexProgress, error)
}
