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

	// PutScriptVariable inserts or replaces a variable. Zero CreatedAt and
	// UpdatedAt mean now; replacing keeps the stored CreatedAt.
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
	// Limit is the page size of ListDeadLetters: <= 0 means
	// DefaultDeadLetterPage, and it is capped at MaxDeadLetterPage.
	Limit int
	After *DeadLetterPosition
}

// Page sizes of ListDeadLetters.
const (
	DefaultDeadLetterPage = 50
	MaxDeadLetterPage     = 500
)

// DeadLetterStore keeps dead letters.
type DeadLetterStore interface {
	// AddDeadLetter stores d; the store assigns ID (storage.NewID) and
	// CreatedAt (now) when empty. ErrConflict when the ID exists.
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
}

// ScriptRetry is a record event whose record-event script failed and that
// waits for an automatic retry. It is not a dead letter, and no dead-letter
// call lists it: it is deleted when an attempt succeeds, and becomes a dead
// letter (PromoteScriptRetry) when the last one fails. The embedded
// DeadLetter holds the event, the latest error and the attempts made so
// far; its Kind is always DeadLetterRecord, its CreatedAt the first
// failure, and its ResolvedAt is unused.
type ScriptRetry struct {
	DeadLetter
	DueAt time.Time // when the next attempt may be made
}

// ScriptRetryStore keeps the pending automatic retries of failed
// record-event scripts, so that none is lost when an instance stops.
type ScriptRetryStore interface {
	// AddScriptRetry stores r; the store assigns ID (storage.NewID) and
	// CreatedAt (now) when empty. ErrConflict when the ID exists.
	AddScriptRetry(ctx context.Context, r ScriptRetry) (ScriptRetry, error)
	// ClaimScriptRetries returns up to limit retries (with Record) due at
	// now (DueAt <= now; the earliest due are taken first, limit <= 0
	// means 100) and in the same statement sets their DueAt to until (as
	// returned), so that no other claim takes them before then: a
	// claimant that stops midway leaves them to the next claim after
	// until. Concurrent claims never return the same retry.
	ClaimScriptRetries(ctx context.Context, now, until time.Time, limit int) ([]ScriptRetry, error)
	// NextScriptRetryDue returns the earliest DueAt, or the zero time when
	// no retry waits.
	NextScriptRetryDue(ctx context.Context) (time.Time, error)
	// RescheduleScriptRetry stores the outcome of a failed attempt: its
	// error, the attempts made and when the next may be made. ErrNotFound
	// when absent.
	RescheduleScriptRetry(ctx context.Context, id, errMsg string, attempts int, due time.Time) error
	// DeleteScriptRetry removes a retry (its attempt succeeded).
	// ErrNotFound when absent.
	DeleteScriptRetry(ctx context.Context, id string) error
	// PromoteScriptRetry makes the retry id, whose last attempt failed, an
	// unresolved dead letter with the same ID, error errMsg and attempts,
	// created at `at`: both in one transaction. ErrNotFound when absent.
	PromoteScriptRetry(ctx context.Context, id, errMsg string, attempts int, at time.Time) (DeadLetter, error)
}

// FilterOps returns the filter operators of a RecordQuery leaf condition.
func FilterOps() []string { return []string{"=", "!=", "<", ">", "<=", ">=", "LIKE", "NOT LIKE"} }

// MaxFilterDepth bounds the nesting of filter groups: the root filter is
// at depth 1, the members of a group one deeper than the group, and no
// filter may sit deeper than MaxFilterDepth (a leaf at depth 5 is accepted;
// a group at depth 5, whose members would be at depth 6, is refused).
const MaxFilterDepth = 5

// MaxFilterConditions bounds the number of leaf conditions in one filter.
const MaxFilterConditions = 100

// Page sizes of QueryRecords.
const (
	DefaultQueryLimit = 20
	MaxQueryLimit     = 100
)

// MaxGetRecords bounds the URIs of one GetRecords call; callers batch.
const MaxGetRecords = 1000

// ErrInvalidQuery wraps the reason a RecordQuery or raw statement is
// refused (bad field path, operator, value type, nesting, a relation or
// function outside the raw-SQL allow-list).
var ErrInvalidQuery = errors.New("invalid query")

// ErrRawTooLarge is the error of a raw statement whose result passed the
// byte bound of RawQuery, or that made a string or blob longer than the
// backend allows a raw statement.
var ErrRawTooLarge = errors.New("raw result too large")

// MaxRawValue is the longest string or blob a raw statement may make on
// SQLite, in its result or along the way.
const MaxRawValue = 16 << 20

// Filter is a condition on record fields: a leaf (Field, Op, Value) or a
// group (And or Or, non-empty); exactly one of the three is set. Field is a
// path into the record value: names of letters, digits, '_', '$' and '-'
// separated by dots, with [n] array indices ("embed.images[0].alt"). A
// name steps into an object only and an index into an array only.
//
// Value is a string, float64, bool or nil (nil only with "=" and "!=":
// "=" nil matches a field that is absent or JSON null, "!=" nil one that
// is present and not null). Comparisons are type-strict: a number matches
// only numeric fields, compared numerically; a string only string fields,
// compared bytewise (UTF-8); a bool only booleans, with "=" and "!=". A
// field of another type, or absent, matches no comparison, "!=" and
// "NOT LIKE" included. LIKE and NOT LIKE take a string pattern ('%' any
// run, '_' one character, '\' escapes the next character) and ignore the
// case of ASCII letters only.
//
// Invalid paths, operators, values and nesting are refused with an error
// wrapping ErrInvalidQuery.
type Filter struct {
	Field string
	Op    string
	Value any
	And   []Filter
	Or    []Filter
}

// RecordQuery is a scripted listing: a collection (required), optionally
// one repository, a filter and an order.
type RecordQuery struct {
	Collection string
	DID        string
	Filter     *Filter
	// Sort is "" to order by creation time (Record.CreatedAt, newest first
	// by default), then URI, with keyset pagination. Otherwise it is a field path (as in
	// Filter) and records are ordered by that field: numbers first
	// (numerically), then strings (bytewise), then booleans (false first);
	// records where the field is absent, null, an object or an array come
	// last. Ties are broken by URI. Descending order reverses the values
	// and URIs within each group, never the groups. Field-sorted pages
	// have keyset cursors too (the position of the last record: its
	// group, value and URI), so records written between pages are neither
	// skipped nor repeated.
	Sort string
	// Ascending reverses the default descending order.
	Ascending bool
	// Limit is the page size: <= 0 means DefaultQueryLimit, and it is
	// capped at MaxQueryLimit.
	Limit int
	// Cursor continues a previous page: an opaque value from
	// RecordQueryPage.Cursor of the same query (same collection, DID,
	// filter, labels and order); any other cursor is refused.
	Cursor string
	// Labels keeps only the records for which every condition holds; at
	// most MaxLabelConditions.
	Labels []LabelCondition
	// LabelsAt is when label expiry is judged; zero means now.
	LabelsAt time.Time
	// ExcludeInvalid leaves out the records stored with a validation
	// error (Record.Invalid): what the validation mode hide serves.
	ExcludeInvalid bool
	// OnScan, when set, is called when the query is answered by scanning
	// the collection while a value index (see FieldIndexStore) would have
	// served it. The store does not know how large the collection is, nor
	// rate-limits the calls: the caller does.
	OnScan func(ScanHint)
}

// ScanHint describes a query answered by scanning a collection: a value
// index on one of Fields (the filter's indexable fields, then the sort
// field, in order) would have served it.
type ScanHint struct {
	Collection string
	Fields     []string
}

// LabelCondition selects records by the labels that apply to them
// (Label.AppliesAt): a record matches when it has at least one such label,
// or, with Absent, none.
type LabelCondition struct {
	// Values are the label values; empty matches any value.
	Values []string
	// Sources are the labelers' DIDs; empty matches any labeler.
	Sources []string
	// Account looks at the labels on the record's author (its DID)
	// instead of those on the record (its AT URI).
	Account bool
	// Absent inverts the condition: the record has no such label.
	Absent bool
}

// Bounds of label conditions.
const (
	MaxLabelConditions = 8
	MaxLabelValues     = 50 // values, and sources, per condition
)

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
	// QueryRecords runs a filtered, sorted listing. Its records are read
	// for serving: each has its URI (and the DID, collection and record
	// key it names), CID, Value and CreatedAt, not its Rev or IndexedAt.
	// Invalid filters and cursors return an error wrapping
	// ErrInvalidQuery.
	QueryRecords(ctx context.Context, q RecordQuery) (RecordQueryPage, error)
	// CountMatching counts the records a query selects (Limit, Sort and
	// Cursor are ignored).
	CountMatching(ctx context.Context, q RecordQuery) (int64, error)
	// GetRecords returns the records at uris, keyed by URI; absent ones
	// are missing from the map. More than MaxGetRecords URIs are refused
	// with an error wrapping ErrInvalidQuery.
	GetRecords(ctx context.Context, uris []string) (map[string]Record, error)
	// RawQuery runs one parameterised SQL statement for a script, in the
	// backend's own SQL and placeholder syntax ("?" or "?NNN" on SQLite,
	// "$1" on PostgreSQL). What a statement may read is an allow-list:
	// the records table, the record tombstones and the lexicon_info view
	// (the lexicons without their scripts, index hooks and documents),
	// named unqualified, plus its own common table expressions and a few
	// JSON and array table functions. Reads (SELECT, WITH) run in a
	// read-only transaction; writes (INSERT, UPDATE, DELETE) may change
	// only the records table. Anything else (other tables and views,
	// system catalogs, file, network, server-state or configuration
	// functions, other statements, several statements) is refused with an
	// error wrapping ErrInvalidQuery that says why. The database enforces
	// the allow-list too while the statement runs (an authorizer on
	// SQLite; on PostgreSQL a restricted role, where the migration could
	// create it). The statement runs under ctx's deadline. At most maxRows
	// rows are returned (<= 0 means 1000); the rest are dropped.
	//
	// Values come back as string, int64, float64, bool, []byte (binary
	// columns) or nil: times become RFC 3339 strings, PostgreSQL numerics
	// int64 or float64, and other PostgreSQL types (json, uuid, ...) their
	// text.
	//
	// maxBytes bounds the size of the rows read, counted as the length of
	// each string and []byte value and 8 bytes for any other (nil counts
	// 0): once the rows read pass it, checked after each row, the call
	// fails with an error wrapping ErrRawTooLarge; <= 0 means no bound. On
	// SQLite a statement that makes a string or blob longer than
	// MaxRawValue, in its result or along the way, fails inside SQLite
	// with ErrRawTooLarge too. A row is read whole before it is counted.
	RawQuery(ctx context.Context, sql string, args []any, maxRows int, maxBytes int64) (RawResult, error)
}
