package deadletters

import (
	"context"
	"errors"
	"net/http"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/admin"
	"github.com/lexview/lexview/appview/internal/admins"
	"github.com/lexview/lexview/appview/internal/respond"
	"github.com/lexview/lexview/storage"
)

// Bulk limits.
const (
	// MaxBulkIDs bounds `ids` of a bulk request.
	MaxBulkIDs = 1000
	// walkPage is the page size of the walk over every unresolved dead
	// letter (`all: true`).
	walkPage = 100
)

const msgNotFound = "dead letter not found"

// statusError is a refusal of an action on one dead letter, with its HTTP
// answer.
type statusError struct {
	status int
	msg    string
}

func (e *statusError) Error() string { return e.msg }

var (
	errNotFound   = &statusError{http.StatusNotFound, msgNotFound}
	errLabel      = &statusError{http.StatusBadRequest, "label-arrival dead letters cannot be retried"}
	errNoScript   = &statusError{http.StatusNotFound, "no script is bound to this dead letter"}
	errNoReindex  = &statusError{http.StatusServiceUnavailable, "reindexing is not available on this instance"}
	errLabelReidx = &statusError{http.StatusBadRequest, "label-arrival dead letters cannot be reindexed"}
)

// action is one thing done to an unresolved dead letter.
type action struct {
	name      string // the path segment: dismiss, retry, reindex
	event     string // the audit event type of a single action
	bulkEvent string // the audit event type of a bulk action
	// run carries the action out through the script machinery; nil
	// resolves at once (dismiss). Its error is the action's failure.
	run func(ctx context.Context, rt admin.ScriptRuntime, d storage.DeadLetter) error
	// label refuses label-arrival dead letters; noRuntime answers when
	// the instance runs no script machinery.
	label, noRuntime *statusError
}

// actions are the dead-letter actions, each served singly and in bulk.
var actions = []action{
	{name: "dismiss", event: "dead_letter.dismissed", bulkEvent: "dead_letter.bulk_dismissed"},
	{name: "retry", event: "dead_letter.retried", bulkEvent: "dead_letter.bulk_retried", label: errLabel, noRuntime: errNoScript,
		run: func(ctx context.Context, rt admin.ScriptRuntime, d storage.DeadLetter) error {
			return rt.RetryDeadLetter(ctx, d)
		}},
	{name: "reindex", event: "dead_letter.reindexed", bulkEvent: "dead_letter.bulk_reindexed", label: errLabelReidx, noRuntime: errNoReindex,
		run: func(ctx context.Context, rt admin.ScriptRuntime, d storage.DeadLetter) error {
			return rt.ReindexDeadLetter(ctx, d)
		}},
}

// outcome is what an action did to a dead letter: resolved it, or failed
// with Error (stored on the dead letter with one more attempt).
type outcome struct {
	OK       bool   `json:"ok"`
	Resolved bool   `json:"resolved"`
	Error    string `json:"error,omitempty"`
}

// apply carries action a out on the dead letter id. A *statusError refuses it
// (absent, already resolved, wrong kind, no script); other errors are
// server failures or the end of the request. A failure of the action
// itself is an outcome, not an error.
func (h handlers) apply(ctx context.Context, a action, id string) (storage.DeadLetter, outcome, error) {
	d, err := h.Store.GetDeadLetter(ctx, id)
	if errors.Is(err, storage.ErrNotFound) || (err == nil && !d.ResolvedAt.IsZero()) {
		return d, outcome{}, errNotFound
	}
	if err != nil {
		return d, outcome{}, err
	}
	if a.run != nil {
		if d.Kind == storage.DeadLetterLabel {
			return d, outcome{}, a.label
		}
		if h.Scripts == nil {
			return d, outcome{}, a.noRuntime
		}
		runErr := a.run(ctx, h.Scripts, d)
		switch {
		case errors.Is(runErr, admin.ErrNoScript):
			return d, outcome{}, errNoScript
		case runErr != nil && ctx.Err() != nil:
			return d, outcome{}, ctx.Err() // the caller left: not the dead letter's failure
		case runErr != nil:
			msg := runErr.Error()
			err := h.Store.RecordDeadLetterFailure(ctx, id, msg, d.Attempts+1)
			if err != nil && !errors.Is(err, storage.ErrNotFound) { // resolved meanwhile: nothing to record
				return d, outcome{}, err
			}
			return d, outcome{OK: true, Error: msg}, nil
		}
	}
	err = h.Store.ResolveDeadLetter(ctx, id, h.Now())
	if errors.Is(err, storage.ErrNotFound) && a.run == nil { // dismissed meanwhile
		return d, outcome{}, errNotFound
	}
	if errors.Is(err, storage.ErrNotFound) { // resolved meanwhile: the action succeeded all the same
		err = nil
	}
	if err != nil {
		return d, outcome{}, err
	}
	return d, outcome{OK: true, Resolved: true}, nil
}

// single serves POST /admin/dead-letters/{id}/<action>.
func (h handlers) single(a action) admin.Handler {
	return func(w http.ResponseWriter, r *http.Request, p *admins.Principal) {
		d, out, err := h.apply(r.Context(), a, r.PathValue("id"))
		var se *statusError
		if errors.As(err, &se) {
			respond.Error(w, se.status, se.msg)
			return
		}
		if err != nil {
			respond.Internal(w, r, h.Log, err)
			return
		}
		h.Audit(r.Context(), p, a.event, d.ID, map[string]any{
			"uri": d.URI, "collection": d.Collection, "kind": d.Kind, "resolved": out.Resolved, "error": out.Error,
		})
		respond.JSON(w, http.StatusOK, out)
	}
}

// bulkRequest selects dead letters: ids, or every unresolved one (of
// collection, when given).
type bulkRequest struct {
	IDs        []string `json:"ids"`
	All        bool     `json:"all"`
	Collection string   `json:"collection"`
}

// validate returns the reason the request is refused, or "".
func (req bulkRequest) validate() string {
	switch {
	case len(req.IDs) == 0 && !req.All:
		return "ids or all is required"
	case len(req.IDs) > 0 && req.All:
		return "ids and all cannot be combined"
	case len(req.IDs) > MaxBulkIDs:
		return "ids must hold at most 1000 dead letter ids"
	case req.Collection != "" && !req.All:
		return "collection applies only with all"
	}
	if req.Collection != "" {
		if _, err := syntax.ParseNSID(req.Collection); err != nil {
			return "collection must be a valid NSID"
		}
	}
	return ""
}

// bulkResult is the answer of a bulk action.
type bulkResult struct {
	OK        bool `json:"ok"`
	Processed int  `json:"processed"`
	Resolved  int  `json:"resolved"`
	Failed    int  `json:"failed"`
}

// bulk serves POST /admin/dead-letters/bulk/<action>. A dead letter that
// is refused or fails counts as failed and the batch goes on.
func (h handlers) bulk(a action) admin.Handler {
	return func(w http.ResponseWriter, r *http.Request, p *admins.Principal) {
		var req bulkRequest
		if !admin.Decode(w, r, &req) {
			return
		}
		if msg := req.validate(); msg != "" {
			respond.Error(w, http.StatusBadRequest, msg)
			return
		}
		ctx := r.Context()
		res := bulkResult{OK: true}
		err := h.each(ctx, req, func(id string) error {
			_, out, err := h.apply(ctx, a, id)
			var se *statusError
			switch {
			case errors.As(err, &se):
			case err != nil && ctx.Err() != nil:
				return err
			case err != nil:
				h.Log.ErrorContext(ctx, "bulk dead-letter action failed", "action", a.name, "id", id, "err", err)
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
			h.Audit(ctx, p, a.bulkEvent, req.Collection, map[string]any{
				"all": req.All, "ids": len(req.IDs), "collection": req.Collection,
				"processed": res.Processed, "resolved": res.Resolved, "failed": res.Failed,
			})
		}
		switch {
		case err != nil && ctx.Err() != nil:
			h.Log.WarnContext(ctx, "bulk dead-letter action stopped: the caller left", "action", a.name,
				"processed", res.Processed)
		case err != nil:
			respond.Internal(w, r, h.Log, err)
		default:
			respond.JSON(w, http.StatusOK, res)
		}
	}
}

// each calls fn with every selected id: the distinct `ids` in order, or
// every unresolved dead letter (of the collection) that exists when the
// walk starts. The walk goes newest first by keyset, so dead letters that
// stay unresolved after fn are passed over, not met again. It stops at
// the first error of fn or of the store.
func (h handlers) each(ctx context.Context, req bulkRequest, fn func(id string) error) error {
	if !req.All {
		seen := make(map[string]bool, len(req.IDs))
		for _, id := range req.IDs {
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
	q := storage.DeadLetterQuery{Collection: req.Collection, Resolved: &unresolved, Limit: walkPage}
	for {
		list, next, err := h.Store.ListDeadLetters(ctx, q)
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
