// Package ingest consumes the network's live event stream. Source is the
// interface (the design card's "firehose consumption is an interface");
// Jetstream is the default implementation.
package ingest

import (
	"context"
	"time"

	"github.com/lexview/lexview/storage"
)

// Source reads a live event stream until its context ends.
type Source interface {
	// Run follows the stream, reconnecting as needed, until ctx ends.
	// wanted returns the collections to follow; a value on changed means
	// the set may have changed and should be re-read promptly.
	Run(ctx context.Context, wanted func() []string, changed <-chan struct{}, sink Sink) error
	// Status reports the stream's state for operators.
	Status() Status
}

// Status is a snapshot of a Source's state.
type Status struct {
	Connected   bool      `json:"connected"`
	Collections []string  `json:"collections"`
	Cursor      int64     `json:"cursor"`                 // last stream position handed over
	LastEventAt time.Time `json:"last_event_at,omitzero"` // arrival of the last event
	Events      int64     `json:"events_received"`        // events read since start
	Connections int64     `json:"connections_made"`       // since start
}

// Sink receives what a Source reads, in stream order.
type Sink interface {
	// Records hands over record changes and the stream position that
	// follows them. It may block (backpressure) and must not lose changes
	// once it has returned nil.
	Records(ctx context.Context, changes []storage.Change, cursor int64) error
	// Identity reports a changed handle or DID document.
	Identity(ctx context.Context, e IdentityEvent)
	// Account reports a changed account status.
	Account(ctx context.Context, e AccountEvent)
	// Resume returns the stored stream position to resume from, if any.
	Resume(ctx context.Context) (cursor int64, ok bool, err error)
	// StateChanged reports connection state changes, for the event log.
	StateChanged(ctx context.Context, connected bool, detail map[string]any)
}

// IdentityEvent is an identity change of an account.
type IdentityEvent struct {
	DID    string
	Handle string
}

// AccountEvent is an account status change. Status is empty for an
// active account, else for example "deactivated", "takendown", "deleted".
type AccountEvent struct {
	DID    string
	Active bool
	Status string
}
