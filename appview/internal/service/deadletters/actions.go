package deadletters

import (
	"context"
	"errors"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/core/scripthost"
	"github.com/lexview/lexview/storage"
)

// Bulk limits.
const (
	// MaxBulkIDs bounds the IDs of a bulk request.
	MaxBulkIDs = 1000
	// walkPage is the page size of the walk over every unresolved dead
	// letter (All).
	walkPage = 100
)

var (
	errLabel      = fail.New(fail.Invalid, "label-arrival dead letters cannot be retried")
	errNoScript   = fail.New(fail.NotFound, "no script is bound to this dead letter")
	errNoReindex  = fail.New(fail.Unavailable, "reindexing is not available on this instance")
	errLabelReidx = fail.New(fail.Invalid, "label-arrival dead letters cannot be reindexed")
)

// Action is one thing done to an unresolved dead letter.
type Action struct {
	Name      string // the path segment: dismiss, retry, reindex
	event     string // the audit event type of a single action
	bulkEvent string // the audit event type of a bulk action
	// run carries the action out through the runtime; nil resolves at
	// once (dismiss). Its error is the action's failure.
	run func(ctx context.Context, rt Runtime, d storage.DeadLetter) error
	// label refuses label-arrival dead letters; noRuntime answers when
	// the instance runs no script machinery.
	label, noRuntime error
}

// Actions are the dead-letter actions, each offered singly and in bulk.
var Actions = []Action{
	{Name: "dismiss", event: "dead_letter.dismissed", bulkEvent: "dead_letter.bulk_dismissed"},
	{Name: "retry", event: "dead_letter.retried", bulkEvent: "dead_letter.bulk_retried", label: errLabel, noRuntime: errNoScript,
		run: func(ctx context.Context, rt Runtime, d storage.DeadLetter) error { return rt.RetryDeadLetter(ctx, d) }},
	{Name: "reindex", event: "dead_letter.reindexed", bulkEvent: "dead_letter.bulk_reindexed", label: errLabelReidx, noRuntime: errNoReindex,
		run: func(ctx context.Context, rt Runtime, d storage.DeadLetter) error { return rt.ReindexDeadLetter(ctx, d) }},
}

// Outcome is what an action did to a dead letter: resolved it, or failed
// with Error (stored on the dead letter with one more attempt).
type Outcome struct {
	OK       bool   `json:"ok"`
	Resolved bool   `json:"resolved"`
	Error    string `json:"error,omitempty"`
}

// Apply carries action a out on the dead letter id on behalf of actor and
// audits it. A refusal (absent or already resolved, wrong kind, no script)
// is an error with a kind; a failure of the action itself is an Outcome.
func (s *Service) Apply(ctx context.Context, actor string, a Action, id string) (Outcome, error) {
	d, out, err := s.apply(ctx, a, id)
	if err != nil {
		return out, err
	}
	s.events.Record(ctx, eventlog.Entry{Type: a.event, ActorDID: actor, Subject: d.ID, Detail: map[string]any{
		"uri": d.URI, "collection": d.Collection, "kind": d.Kind, "resolved": out.Resolved, "error": out.Error,
	}})
	return out, nil
}

func (s *Service) apply(ctx context.Context, a Action, id string) (storage.DeadLetter, Outcome, error) {
	d, err := s.store.GetDeadLetter(ctx, id)
	if errors.Is(err, storage.ErrNotFound) || (err == nil && !d.ResolvedAt.IsZero()) {
		return d, Outcome{}, errNotFound
	}
	if err != nil {
		return d, Outcome{}, err
	}
	if a.run != nil {
		if d.Kind == storage.DeadLetterLabel {
			return d, Outcome{}, a.label
		}
		if s.runtime == nil {
			return d, Outcome{}, a.noRuntime
		}
		runErr := a.run(ctx, s.runtime, d)
		switch {
		case errors.Is(runErr, scripthost.ErrNoScript):
			return d, Outcome{}, errNoScript
		case runErr != nil && ctx.Err() != nil:
			return d, Outcome{}, ctx.Err() // the caller left: not the dead letter's failure
		case runErr != nil:
			msg := runErr.Error()
			err := s.store.RecordDeadLetterFailure(ctx, id, msg, d.Attempts+1)
			if err != nil && !errors.Is(err, storage.ErrNotFound) { // resolved meanwhile: nothing to record
				return d, Outcome{}, err
			}
			return d, Outcome{OK: true, Error: msg}, nil
		}
	}
	err = s.store.ResolveDeadLetter(ctx, id, s.now())
	if errors.Is(err, storage.ErrNotFound) && a.run == nil { // dismissed meanwhile
		return d, Outcome{}, errNotFound
	}
	if errors.Is(err, storage.ErrNotFound) { // resolved meanwhile: the action succeeded all the same
		err = nil
	}
	if err != nil {
		return d, Outcome{}, err
	}
	return d, Outcome{OK: true, Resolved: true}, nil
}

// Selection names dead letters for a bulk action: IDs, or every
// unresolved one (of Collection, when given).
type Selection struct {
	IDs        []string
	All        bool
	Collection string
}

// validate refuses a malformed selection.
func (sel Selection) validate() error {
	switch {
	case len(sel.IDs) == 0 && !sel.All:
		return fail.New(fail.Invalid, "ids or all is required")
	case len(sel.IDs) > 0 && sel.All:
		return fail.New(fail.Invalid, "ids and all cannot be combined")
	case len(sel.IDs) > MaxBulkIDs:
		return fail.New(fail.Invalid, "ids must hold at most 1000 dead letter ids")
	case sel.Collection != "" && !sel.All:
		return fail.New(fail.Invalid, "collection applies only with all")
	}
	if sel.Collection != "" {
		if _, err := syntax.ParseNSID(sel.Collection); err != nil {
			return fail.New(fail.Invalid, "collection must be a valid NSID")
		}
	}
	return nil
}

// BulkResult is what a bulk action did.
type BulkResult struct {
	OK        bool `json:"ok"`
	Processed int  `json:"processed"`
	Resolved  int  `json:"resolved"`
	Failed    int  `json:"failed"`
}

// Bulk carries action a out on every selected dead letter on behalf of
// actor, and audits the batch once. A dead letter that is refused or
// fails counts as failed and the batch goes on. When the caller leaves
// (ctx ends) the batch stops; what was done is audited and ctx's error
// returned.
func (s *Service) Bulk(ctx context.Context, actor string, a Action, sel Selection) (BulkResult, error) {
	if err := sel.validate(); err != nil {
		return BulkResult{}, err
	}
	res := BulkResult{OK: true}
	err := s.each(ctx, sel, func(id string) error {
		_, out, err := s.apply(ctx, a, id)
		switch {
		case fail.KindOf(err) != fail.Internal:
		case err != nil && ctx.Err() != nil:
			return err
		case err != nil:
			s.log.ErrorContext(ctx, "bulk dead-letter action failed", "action", a.Name, "id", id, "err", err)
		}
		res.Processed++
		if out.Resolved {
			res.Resolved++
		} else {
			res.Failed++
		}
		return nil
	})
	if res.Processed > 0 || err == nil {
		s.events.Record(ctx, eventlog.Entry{Type: a.bulkEvent, ActorDID: actor, Subject: sel.Collection, Detail: map[string]any{
			"all": sel.All, "ids": len(sel.IDs), "collection": sel.Collection,
			"processed": res.Processed, "resolved": res.Resolved, "failed": res.Failed,
		}})
	}
	if err != nil && ctx.Err() != nil {
		s.log.WarnContext(ctx, "bulk dead-letter action stopped: the caller left", "action", a.Name, "processed", res.Processed)
	}
	return res, err
}

// each calls fn with every selected id: the distinct IDs in order, or
// every unresolved dead letter (of the collection) that exists when the
// walk starts. The walk goes newest first by keyset, so dead letters that
// stay unresolved after fn are passed over, not met again. It stops at
// the first error of fn or of the store.
func (s *Service) each(ctx context.Context, sel Selection, fn func(id string) error) error {
	if !sel.All {
		seen := make(map[string]bool, len(sel.IDs))
		for _, id := range sel.IDs {
			if seen[id] {
				continue
			}
			seen[id] = true
			if err := fn(id); err != nil {
				return err
			}
		}
		return nil
	}
	unresolved := false
	q := storage.DeadLetterQuery{Collection: sel.Collection, Resolved: &unresolved, Limit: walkPage}
	for {
		list, next, err := s.store.ListDeadLetters(ctx, q)
		if err != nil {
			return err
		}
		for _, d := range list {
			if err := fn(d.ID); err != nil {
				return err
			}
		}
		if next == nil {
			return nil
		}
		q.After = next
	}
}
