package storage

import (
	"encoding/json"
	"time"
)

// ChangeOp is the kind of a record change.
type ChangeOp string

// Change kinds, named as atproto's repository operations name them.
const (
	OpCreate ChangeOp = "create"
	OpUpdate ChangeOp = "update"
	OpDelete ChangeOp = "delete"
)

// Change is one record change from any source (an event stream, a
// backfill job, a procedure, an embedder), on its way to the batch writer,
// which validates it, runs record-event hooks on it and turns it into a
// RecordOp.
type Change struct {
	Op         ChangeOp
	DID        string
	Collection string
	RKey       string
	CID        string          // empty for deletes
	Rev        string          // repository revision; empty when unknown
	Record     json.RawMessage // nil for deletes
	// Received is when the change reached Lexview (for lag metrics); zero
	// means now.
	Received time.Time
	// Scripted marks a change whose record-event hooks already ran (a
	// retried dead letter, a reindex); the writer does not run them again.
	Scripted bool
	// Invalid is set by the writer, never by a source (whatever a source
	// puts there is replaced): the validation error of a record its
	// lexicon refuses that the collection's validation mode stores
	// anyway (flag, hide), "" for a valid one.
	Invalid string
}

// URI is the change's AT URI.
func (c Change) URI() string { return "at://" + c.DID + "/" + c.Collection + "/" + c.RKey }
