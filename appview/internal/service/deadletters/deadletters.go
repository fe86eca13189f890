// Package deadletters is the service for dead letters: record events whose
// script failed (and, later, labels that could not be stored), kept until
// an operator or an automatic retry resolves them. It lists and counts
// them, and carries out the actions on unresolved ones (dismiss, retry,
// reindex), singly and in bulk, with their audit entries.
//
// Retry and reindex do the bookkeeping here, not in the script runtime:
// the runtime only runs the script (or the fetch and the indexing
// pipeline) and returns its error. Success resolves the dead letter; a
// failure stores the error and one more attempt on it, and is an Outcome,
// not an error.
package deadletters

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/storage"
)

// Runtime runs dead letters again (the script runtime).
type Runtime interface {
	// RetryDeadLetter runs the bound record-event script again on the
	// stored record and indexes the result. It returns
	// scripting.ErrNoScript when no script is bound.
	RetryDeadLetter(ctx context.Context, d storage.DeadLetter) error
	// ReindexDeadLetter fetches the record fresh from its author's PDS
	// and runs it through the full indexing pipeline.
	ReindexDeadLetter(ctx context.Context, d storage.DeadLetter) error
}

// Service manages dead letters.
type Service struct {
	store   storage.DeadLetterStore
	runtime Runtime // nil: the instance runs no script machinery
	events  *eventlog.Log
	now     func() time.Time
	log     *slog.Logger
}

// Options configure a Service.
type Options struct {
	Store storage.DeadLetterStore
	// Runtime runs dead letters again; nil when the instance runs no
	// script machinery.
	Runtime Runtime
	// Events records the service's actions.
	Events *eventlog.Log
	Now    func() time.Time // default time.Now
	Logger *slog.Logger     // default slog.Default()
}

// New returns the service.
func New(opts Options) *Service {
	s := &Service{store: opts.Store, runtime: opts.Runtime, events: opts.Events, now: opts.Now, log: opts.Logger}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	return s
}

var errNotFound = fail.New(fail.NotFound, "dead letter not found")

// Filter selects dead letters. Resolved is "false" (unresolved only),
// "true" (resolved only), or "all" or "" (both).
type Filter struct {
	Collection string
	Resolved   string
}

// query parses f into a storage query and the scope of its cursors.
func (f Filter) query() (storage.DeadLetterQuery, string, error) {
	var q storage.DeadLetterQuery
	q.Collection = f.Collection
	if q.Collection != "" {
		if _, err := syntax.ParseNSID(q.Collection); err != nil {
			return q, "", fail.New(fail.Invalid, "collection must be a valid NSID")
		}
	}
	resolved := f.Resolved
	switch resolved {
	case "true", "false":
		b := resolved == "true"
		q.Resolved = &b
	case "", "all":
		resolved = "all"
	default:
		return q, "", fail.New(fail.Invalid, "resolved must be true, false or all")
	}
	// A cursor continues only the listing it came from.
	return q, "dead-letters\x00" + q.Collection + "\x00" + resolved, nil
}

// List returns a page of dead letters, newest first, and the cursor of
// the next page ("" on the last one). cursor continues a listing with the
// same filter.
func (s *Service) List(ctx context.Context, f Filter, limit int, cursor string) ([]storage.DeadLetter, string, error) {
	q, scope, err := f.query()
	if err != nil {
		return nil, "", err
	}
	q.Limit = limit
	if cursor != "" {
		pos, err := storage.DecodeCursor(scope, cursor)
		if err != nil || pos.URI == "" {
			return nil, "", fail.New(fail.Invalid, "invalid cursor")
		}
		q.After = &storage.DeadLetterPosition{CreatedAt: pos.Time, ID: pos.URI}
	}
	list, next, err := s.store.ListDeadLetters(ctx, q)
	if err != nil || next == nil {
		return list, "", err
	}
	return list, storage.EncodeCursor(scope, storage.Position{Time: next.CreatedAt, URI: next.ID}), nil
}

// Count counts the dead letters of a filter.
func (s *Service) Count(ctx context.Context, f Filter) (int64, error) {
	q, _, err := f.query()
	if err != nil {
		return 0, err
	}
	return s.store.CountDeadLetters(ctx, q)
}

// Get returns one dead letter.
func (s *Service) Get(ctx context.Context, id string) (storage.DeadLetter, error) {
	d, err := s.store.GetDeadLetter(ctx, id)
	if errors.Is(err, storage.ErrNotFound) {
		return d, errNotFound
	}
	return d, err
}
