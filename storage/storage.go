// Package storage defines what Lexview stores and the interfaces a storage
// backend implements. Two implementations ship with Lexview: storage/sqlite
// (the embedded default) and storage/postgres. Both pass the shared suite in
// storage/storagetest.
package storage

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// ErrNotFound is returned when a requested item does not exist.
var ErrNotFound = errors.New("not found")

// Store is the whole storage surface of a Lexview instance. Consumers should
// depend on the narrower interfaces it embeds, or on their own.
type Store interface {
	RecordStore
	LexiconStore
	CursorStore
	AdminStore
	APIClientStore
	EventStore
	SettingsStore
	OperatorStore
	BackfillStore
	OAuthStore
	ScriptStore
	DeadLetterStore
	ScriptRetryStore
	QueryStore
	IdentityStore
	ServiceEntryStore
	InstanceKeyStore
	OAuthClientStore
	LinkedRepoStore
	LabelStore
	PluginStore
	PluginAccountStore
	NetworkLexiconStore
	ClusterStore
	DPoPReplayStore
	LinkStore
	FieldIndexStore
	SearchStore
	ValidationStore

	// Dialect names the backend ("sqlite" or "postgres").
	Dialect() string
	// Migrate applies pending schema migrations. It is idempotent and safe
	// to call concurrently from several processes.
	Migrate(ctx context.Context) error
	// Close releases the backend's connections.
	Close() error
}

// Record is one indexed atproto record.
type Record struct {
	URI        string          // at://did/collection/rkey
	DID        string          // repository DID
	Collection string          // collection NSID
	RKey       string          // record key
	CID        string          // CID of the record block
	Rev        string          // repository revision (TID) that wrote it; may be empty
	Value      json.RawMessage // the record's JSON; read-only (a store may hand out memory it shares)
	IndexedAt  time.Time       // when Lexview indexed this version
	// CreatedAt is the time listings order the record by:
	// CreationTime(RKey, Value, IndexedAt), computed and stored by the
	// store when the record is written (ApplyBatch ignores the field).
	CreatedAt time.Time
	// Invalid is why the record's lexicon refuses it, when it was stored
	// anyway (the validation modes flag and hide, docs/ingestion.md);
	// "" for a valid record.
	Invalid string
}

// RecordView is the part of a stored record that serving it needs, read
// without copying: its slices point into buffers the store reuses, valid
// only until the callback that receives it returns.
type RecordView struct {
	URI   []byte // at://did/collection/rkey
	CID   []byte // CID of the record block
	Value []byte // the record's JSON
	// Invalid is the record's validation error (Record.Invalid); empty
	// for a valid record. Set by ScanRecord only.
	Invalid []byte
}

// RecordOp is one change to apply to the record index: an upsert of Record,
// or, when Delete is set, the removal of Record.URI. A delete with a Rev
// removes only a stored version at that rev or older, and keeps a tombstone
// so that older writes replayed later do not bring the record back.
type RecordOp struct {
	Delete bool
	Record Record
}

// Batch is a set of record changes applied in one transaction. Operations on
// the same URI take effect in slice order (the last one wins). Cursors are
// stored in the same transaction, so that a crash never separates the
// records from the stream positions that produced them; a batch may carry
// the positions of several streams (one per name; of two with one name, the
// later wins). Repos are the sync states of the repositories whose
// verified commits produced the changes, stored in the same transaction
// too (see RepoState). Accounts are account status changes, applied after
// Ops in slice order (see AccountState).
type Batch struct {
	Ops      []RecordOp
	Cursors  []StreamCursor
	Repos    []RepoState
	Accounts []AccountState
	// Fence, when set, makes the batch conditional on the lease still
	// being held with that token: if another instance acquired it since,
	// nothing is written and ApplyBatch returns ErrFenced. Event sources
	// run by the leader carry it, so that a deposed leader cannot write.
	Fence *Lease
}

// AccountState is an account's status as the network reports it (#account
// events). A batch stores each one it carries, after its Ops; an inactive
// one also removes every record of the account, in the same transaction
// (without tombstones). While an account's stored state is inactive,
// upserts of its records are skipped, in that batch and later ones, from
// whatever source: its records stop being served until it is active again
// and its repository is fetched again.
type AccountState struct {
	DID    string
	Active bool
	// Status is empty for an active account, else for example
	// "deactivated", "takendown", "suspended" or "deleted".
	Status string
}

// RepoState is where a verified event source (the relay firehose) is in
// one repository's history: the revision and the MST root (data CID) of
// the last commit it applied. The next commit's since and prevData must
// match them, else commits were missed. A stored state is replaced only by
// one with a newer revision (revisions are TIDs, which sort as strings).
type RepoState struct {
	DID  string
	Rev  string
	Data string // CID of the repository's MST root after the commit
}

// StreamCursor is the position reached in a named event stream. Event
// sources keep theirs under "source:" followed by the source's name
// (ingest.CursorKey).
type StreamCursor struct {
	Name  string
	Value int64
}

// Position is a keyset position in a listing ordered by a time, ties
// broken by a unique key. In record listings Time is the record's
// CreatedAt and URI its AT URI.
type Position struct {
	Time time.Time
	URI  string
}

// ListQuery selects a page of records, newest created first: of one
// collection, or of every collection when Collection is empty.
type ListQuery struct {
	Collection string    // optional: "" lists every collection
	DID        string    // optional: only this repository's records
	Limit      int       // page size, at least 1
	After      *Position // optional: continue after this position
	// ExcludeInvalid leaves out the records stored with a validation
	// error (Record.Invalid): what the validation mode hide serves. The
	// listing of every collection (no Collection, no DID: an operator's)
	// ignores it.
	ExcludeInvalid bool
}

// Page is one page of a listing. Next is set only when more records exist.
type Page struct {
	Records []Record
	Next    *Position
}

// RecordStore reads and writes indexed records.
type RecordStore interface {
	// ApplyBatch applies record changes (and an optional stream cursor) in
	// one transaction. Upserts are idempotent: writing the same record twice
	// leaves one row. A write carrying an older Rev than the stored row does
	// not overwrite it. A write with the stored CID keeps the stored
	// IndexedAt and CreatedAt: a record's place in listings moves only when
	// the record changes.
	ApplyBatch(ctx context.Context, b Batch) error
	// GetRecord returns the record at uri or ErrNotFound.
	GetRecord(ctx context.Context, uri string) (Record, error)
	// ListRecords returns a page of a collection, or of every collection
	// when q.Collection is empty, newest created first (CreatedAt, then
	// URI, descending). With a DID it returns that repository's records by
	// URI descending instead: record-key order within a collection, and
	// collection then record key without one.
	ListRecords(ctx context.Context, q ListQuery) (Page, error)
	// ScanRecords is ListRecords for serving a page: it calls fn with each
	// record of the page in order, reading only what serving needs and
	// copying nothing, and returns the position after the page (nil on the
	// last). An error from fn stops the scan and is returned.
	ScanRecords(ctx context.Context, q ListQuery, fn func(RecordView) error) (*Position, error)
	// ScanRecord calls fn with the record at uri, or returns ErrNotFound.
	ScanRecord(ctx context.Context, uri string, fn func(RecordView) error) error
	// CountRecords counts the records of a collection ("" counts all).
	CountRecords(ctx context.Context, collection string) (int64, error)
	// DeleteRecordsByDID removes every record of one repository.
	DeleteRecordsByDID(ctx context.Context, did string) (int64, error)
	// PurgeTombstones forgets deletes older than before. Tombstones only
	// need to outlive the longest replay (stream rewind or backfill).
	PurgeTombstones(ctx context.Context, before time.Time) (int64, error)
}

// Lexicon is a stored lexicon document with its Lexview settings.
type Lexicon struct {
	ID               string          // NSID
	Revision         int             // 1 on first upload, +1 on each re-upload
	Type             string          // record, query, procedure or other
	JSON             json.RawMessage // the raw lexicon document
	Backfill         bool            // index history when added
	TargetCollection string          // collection a query or procedure works on; "" for none
	Script           string          // Lua handler source; "" for the default behaviour
	IndexHook        string          // Lua hook run on record events; "" for none
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// LexiconStore persists lexicons.
type LexiconStore interface {
	// PutLexicon inserts or replaces a lexicon. The store assigns Revision
	// (1 when new, previous+1 otherwise), CreatedAt and UpdatedAt, and
	// reports whether the lexicon was new.
	PutLexicon(ctx context.Context, l Lexicon) (stored Lexicon, created bool, err error)
	// GetLexicon returns one lexicon or ErrNotFound.
	GetLexicon(ctx context.Context, id string) (Lexicon, error)
	// ListLexicons returns every lexicon ordered by id.
	ListLexicons(ctx context.Context) ([]Lexicon, error)
	// DeleteLexicon removes a lexicon or returns ErrNotFound.
	DeleteLexicon(ctx context.Context, id string) error
}

// CursorStore keeps event-stream positions.
type CursorStore interface {
	// GetStreamCursor returns the stored position of a stream, or
	// ErrNotFound when none was stored yet.
	GetStreamCursor(ctx context.Context, name string) (int64, error)
	// GetRepoState returns the sync state stored for a repository (by
	// ApplyBatch, Batch.Repos), or ErrNotFound.
	GetRepoState(ctx context.Context, did string) (RepoState, error)
	// GetAccountState returns the account status stored for a DID (by
	// ApplyBatch, Batch.Accounts), or ErrNotFound.
	GetAccountState(ctx context.Context, did string) (AccountState, error)
}
