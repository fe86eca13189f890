package storage

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// Script is Lua source bound to a trigger. Triggers name what runs the
// script: "xrpc.query:<nsid>", "xrpc.procedure:<nsid>", "record.index:<nsid>",
// "record.create:<nsid>", "record.update:<nsid>" or "record.delete:<nsid>".
// At most one script is stored per trigger.
type Script struct {
	ID          string
	Trigger     string
	Source      string
	Description string
	Revision    int // 1 when created, +1 on each change of Source
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// ScriptVariable is a named secret scripts read through `vars`. Value is
// sealed by the caller (AES-256-GCM); the store never sees plaintext.
type ScriptVariable struct {
	Key       string
	Sealed    string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ScriptStore keeps trigger-keyed scripts and script variables.
type ScriptStore interface {
	// PutScript creates the script of s.Trigger or replaces its source and
	// description. The store assigns ID (on create), Revision, CreatedAt
	// and UpdatedAt, and reports whether the script was new.
	PutScript(ctx context.Context, s Script) (stored Script, created bool, err error)
	// UpdateScript changes the source and/or description of the script
	// id (nil leaves a field as it is); the revision grows when the source
	// changes. ErrNotFound when absent.
	UpdateScript(ctx context.Context, id string, source, description *string) (Script, error)
	// GetScript returns one script or ErrNotFound.
	GetScript(ctx context.Context, id string) (Script, error)
	// ListScripts returns every script ordered by trigger.
	ListScripts(ctx context.Context) ([]Script, error)
	// DeleteScript removes a script or returns ErrNotFound.
	DeleteScript(ctx context.Context, id string) error

	// PutScriptVariable inserts or replaces a variable.
	PutScriptVariable(ctx context.Context, v ScriptVariable) error
	// ListScriptVariables returns every variable ordered by key.
	ListScriptVariables(ctx context.Context) ([]ScriptVariable, error)
	// DeleteScriptVariable removes a variable or returns ErrNotFound.
	DeleteScriptVariable(ctx context.Context, key string) error
}

// Dead letter kinds.
const (
	// DeadLetterRecord is a record event whose script failed every retry.
	DeadLetterRecord = "record"
	// DeadLetterLabel is a label arrival whose script failed; it can be
	// neither retried nor reindexed.
	DeadLetterLabel = "label"
)

// DeadLetter is an event whose handling failed every retry.
type DeadLetter struct {
	ID         string
	Kind       string // DeadLetterRecord or DeadLetterLabel
	LexiconID  string
	URI        string
	DID        string
	Collection string
	RKey       string
	Action     string // create, update, delete
	// CID and Rev identify the record version, when known.
	CID        string
	Rev        string
	Error      string
	Attempts   int
	Record     json.RawMessage // the original record; nil for deletes
	CreatedAt  time.Time
	ResolvedAt time.Time // zero while unresolved
}

// DeadLetterPosition is a keyset position in the newest-first listing.
type DeadLetterPosition struct {
	CreatedAt time.Time
	ID        string
}

// DeadLetterQuery selects dead letters.
type DeadLetterQuery struct {
	Collection string // "" for all
	Resolved   *bool  // nil for both
	Limit      int    // page size (ListDeadLetters only)
	After      *DeadLetterPosition
}

// DeadLetterStore keeps dead letters.
type DeadLetterStore interface {
	// AddDeadLetter stores d; the store assigns ID and CreatedAt when
	// empty.
	AddDeadLetter(ctx context.Context, d DeadLetter) (DeadLetter, error)
	// GetDeadLetter returns one dead letter (with Record) or ErrNotFound.
	GetDeadLetter(ctx context.Context, id string) (DeadLetter, error)
	// ListDeadLetters returns a page newest first (CreatedAt, then ID,
	// descending) without Record; next is set only when more exist.
	ListDeadLetters(ctx context.Context, q DeadLetterQuery) (page []DeadLetter, next *DeadLetterPosition, err error)
	// CountDeadLetters counts the dead letters q selects (Limit and After
	// are ignored).
	CountDeadLetters(ctx context.Context, q DeadLetterQuery) (int64, error)
	// ResolveDeadLetter marks an unresolved dead letter resolved at `at`.
	// ErrNotFound when absent or already resolved.
	ResolveDeadLetter(ctx context.Context, id string, at time.Time) error
	// RecordDeadLetterFailure stores the latest error and attempt count of
	// an unresolved dead letter. ErrNotFound when absent or resolved.
	RecordDeadLetterFailure(ctx context.Context, id, errMsg string, attempts int) error
	// UnresolvedDeadLetterIDs lists the IDs of unresolved dead letters
	// (of one collection when collection is not ""), oldest first, at most
	// limit.
	UnresolvedDeadLetterIDs(ctx context.Context, collection string, limit int) ([]string, error)
}

// Filter operators of a RecordQuery leaf condition.
var FilterOps = []string{"=", "!=", "<", ">", "<=", ">=", "LIKE", "NOT LIKE"}

// MaxFilterDepth bounds the nesting of filter groups.
const MaxFilterDepth = 5

// ErrInvalidQuery wraps the reason a RecordQuery or raw statement is
// refused (bad field path, operator, value type, nesting, sensitive table).
var ErrInvalidQuery = errors.New("invalid query")

// Filter is a condition on record fields: a leaf (Field, Op, Value) or a
// group (And or Or, non-empty). Field is a path into the record value:
// names separated by dots, with [n] array indices ("embed.images[0].alt").
// Value is a string, float64, bool or nil (nil only with "=" and "!=",
// meaning absent or null). Comparisons are type-strict: a number matches
// only numeric fields, a string only string fields; strings compare
// bytewise, and LIKE is case-insensitive for ASCII letters.
type Filter struct {
	Field string
	Op    string
	Value any
	And   []Filter
	Or    []Filter
}

// RecordQuery is a scripted listing: a collection, optionally one
// repository, a filter and an order.
type RecordQuery struct {
	Collection string
	DID        string
	Filter     *Filter
	// Sort is a field path into the record; "" orders by indexing time
	// (newest first by default) with keyset pagination.
	Sort string
	// Ascending reverses the default descending order.
	Ascending bool
	Limit     int
	// Cursor continues a previous page: an opaque value from
	// RecordQueryPage.Cursor of the same query.
	Cursor string
}

// RecordQueryPage is one page of a RecordQuery; Cursor is "" at the end.
type RecordQueryPage struct {
	Records []Record
	Cursor  string
}

// RawResult is the outcome of a raw statement: rows for reads, the
// affected-row count for writes.
type RawResult struct {
	Columns  []string
	Rows     [][]any // string, int64, float64, bool, []byte or nil
	Affected int64
}

// QueryStore serves the record queries of scripts.
type QueryStore interface {
	// QueryRecords runs a filtered, sorted listing. Invalid filters and
	// cursors return an error wrapping ErrInvalidQuery.
	QueryRecords(ctx context.Context, q RecordQuery) (RecordQueryPage, error)
	// CountMatching counts the records a query selects (Limit, Sort and
	// Cursor are ignored).
	CountMatching(ctx context.Context, q RecordQuery) (int64, error)
	// GetRecords returns the records at uris, keyed by URI; absent ones
	// are missing from the map.
	GetRecords(ctx context.Context, uris []string) (map[string]Record, error)
	// RawQuery runs one parameterised SQL statement for a script. Reads
	// (SELECT, WITH) may use any table but the sensitive ones (users,
	// keys, sessions, secrets, clients, variables, settings); writes
	// (INSERT, UPDATE, DELETE) may target only the records table. Other
	// statements, several statements, and catalog or file functions are
	// refused with an error wrapping ErrInvalidQuery. At most maxRows rows
	// are returned.
	RawQuery(ctx context.Context, sql string, args []any, maxRows int) (RawResult, error)
}
