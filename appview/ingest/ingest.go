// Package ingest consumes the network's live event streams. Source is the
// interface (the design card's "firehose consumption is an interface");
// Jetstream is the default implementation, and Firehose the verified one
// (com.atproto.sync.subscribeRepos, each commit checked with indigo's
// repository code, through a CommitSink that keeps repository states).
//
// Every source has a name. The App gives each source a Sink of its own,
// bound to that name: the source's cursor is stored under CursorKey(name),
// so a source only ever resumes from positions it stored itself (a
// Jetstream microsecond timestamp is never handed to a firehose or a
// labeler subscription); its metrics carry the label source=name; its
// status appears under its name in GET /admin/stats; its connection
// changes are logged as source.connected and source.disconnected with the
// name as subject.
package ingest

import (
	"context"
	"fmt"
	"regexp"

	"github.com/lexview/lexview/storage"
)

// Source reads a live event stream until its context ends.
type Source interface {
	// Name identifies the source among the App's sources; it is fixed for
	// the source's life and across restarts (its stored cursor is found by
	// it). See CheckName for the allowed form. Jetstream's is "jetstream".
	Name() string
	// Run follows the stream, reconnecting as needed, until ctx ends.
	// wanted returns the collections to follow; a value on changed means
	// the set may have changed and should be re-read promptly.
	Run(ctx context.Context, wanted func() []string, changed <-chan struct{}, sink Sink) error
	// Status reports the stream's state for operators.
	Status() Status
}

// CursorKeyPrefix begins the key of every source's stored cursor.
const CursorKeyPrefix = "source:"

// CursorKey is the name under which the cursor of the source called name
// is stored (storage.StreamCursor, storage.CursorStore): "source:" + name.
// The prefix keeps sources' positions apart from any other stream
// position the store keeps; the name keeps them apart from one another.
func CursorKey(name string) string { return CursorKeyPrefix + name }

var namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// CheckName reports whether name is a usable source name: 1 to 64
// characters, lower-case letters, digits, '.', '_' and '-', starting with a
// letter or digit (it becomes a cursor key, a metrics label value and an
// event-log subject).
func CheckName(name string) error {
	if !namePattern.MatchString(name) {
		return fmt.Errorf("ingest: invalid source name %q: use 1-64 lower-case letters, digits, '.', '_' or '-'", name)
	}
	return nil
}

// PositionMarker is implemented by sinks that can store a position and
// wait until it is durable (the App's). A source starting from live marks
// its starting point with it before reading, so that a crash before its
// first commit resumes from there instead of from live again. Sinks
// without it get Records(ctx, nil, position).
type PositionMarker interface {
	MarkPosition(ctx context.Context, position int64) error
}

// markPosition stores position through sink, durably when it can.
func markPosition(ctx context.Context, sink Sink, position int64) error {
	if m, ok := sink.(PositionMarker); ok {
		return m.MarkPosition(ctx, position)
	}
	return sink.Records(ctx, nil, position)
}

// Sink receives what a Source reads, in stream order. Each Sink is bound
// to one source (by its name): positions handed to Records come back from
// Resume, and from no other source's Sink.
type Sink interface {
	// Records hands over record changes and the stream position that
	// follows them. It may block (backpressure) and must not lose changes
	// once it has returned nil; the position is stored with the changes,
	// in the same transaction.
	Records(ctx context.Context, changes []storage.Change, cursor int64) error
	// Identity reports a changed handle or DID document.
	Identity(ctx context.Context, e IdentityEvent)
	// Account reports a changed account status.
	Account(ctx context.Context, e AccountEvent)
	// Resume returns the position this source stored last, if any.
	Resume(ctx context.Context) (cursor int64, ok bool, err error)
	// StateChanged reports connection state changes, for the event log
	// (detail is logged as given) and the connection metrics.
	StateChanged(ctx context.Context, connected bool, detail map[string]any)
	// Skipped reports an event the source could not use and went past
	// (too large, undecodable, invalid), for the event log and the
	// metrics. It stores no position: a source that moves its position
	// past the event stores it with Records (no changes). A report whose
	// Position is not above that of the last reported skip is a replay
	// of an event already reported, and is ignored.
	Skipped(ctx context.Context, e SkippedEvent)
}

// Reasons of a SkippedEvent.
const (
	// SkipTooLarge: the event was larger than the source decodes.
	SkipTooLarge = "too_large"
	// SkipUndecodable: the event was not JSON, or not of the expected
	// shape (a field of the wrong type).
	SkipUndecodable = "undecodable"
	// SkipInvalid: the event decoded but names something invalid (for
	// example an account event whose DID does not parse).
	SkipInvalid = "invalid"
	// SkipInactive: a commit (or #sync event) of an account whose last
	// status is inactive (deactivated, taken down, suspended, deleted):
	// its records are not served, so it is not indexed.
	SkipInactive = "account_inactive"
)

// SkippedEvent is an event a source went past without handing it over.
// The strings are as far as the source could read them from the event,
// untrusted and possibly empty.
type SkippedEvent struct {
	Reason   string // SkipTooLarge, SkipUndecodable, SkipInvalid, or a Refuse reason
	Position int64  // the event's own stream position; 0 when unknown
	Size     int64  // bytes read of the event
	Kind     string // the event's kind, e.g. "commit"
	DID      string
	// Collection and RKey of a commit event.
	Collection string
	RKey       string
	Err        string // why it was skipped
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
