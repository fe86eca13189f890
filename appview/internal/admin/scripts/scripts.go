// Package scripts serves the admin endpoints of trigger-keyed Lua scripts:
// list (with a trigger-suffix filter), get with the source, create or
// replace by trigger, edit, and delete. Every change is checked by the
// script machinery first (syntax), made live at once (Reload) and audited
// without the source.
package scripts

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/admin"
	"github.com/lexview/lexview/appview/internal/admins"
	"github.com/lexview/lexview/appview/internal/respond"
	"github.com/lexview/lexview/storage"
)

// MaxSourceSize bounds a script's source in bytes (256 KiB).
const MaxSourceSize = 256 << 10

// triggerKinds are the trigger prefixes; a trigger is "<kind>:<nsid>".
var triggerKinds = []string{
	"xrpc.query", "xrpc.procedure",
	"record.index", "record.create", "record.update", "record.delete",
}

// ValidateTrigger checks that trigger is a kind (xrpc.query,
// xrpc.procedure, record.index, record.create, record.update or
// record.delete), a colon and a valid NSID, and returns the reason when it is not.
func ValidateTrigger(trigger string) error {
	kind, nsid, ok := strings.Cut(trigger, ":")
	if !ok || !isKind(kind) {
		return fmt.Errorf("trigger must be one of %s followed by :<nsid>", strings.Join(triggerKinds, ", "))
	}
	if _, err := syntax.ParseNSID(nsid); err != nil {
		return errors.New("trigger has an invalid NSID")
	}
	return nil
}

func isKind(kind string) bool {
	return slices.Contains(triggerKinds, kind)
}

const msgNotFound = "script not found"

// Mount registers the script endpoints.
func Mount(m *admin.Mux, d admin.Deps) {
	h := handlers{d}
	m.Handle("GET /admin/scripts", h.list)
	m.Handle("GET /admin/scripts/{id}", h.get)
	m.Handle("POST /admin/scripts", h.create)
	m.Handle("PATCH /admin/scripts/{id}", h.update)
	m.Handle("DELETE /admin/scripts/{id}", h.delete)
}

type handlers struct{ admin.Deps }

// summary is the list shape of a script.
type summary struct {
	ID          string `json:"id"`
	Trigger     string `json:"trigger"`
	Description string `json:"description"`
	Revision    int    `json:"revision"`
	CreatedAt   string `json:"created_at"`
	UpdatedAt   string `json:"updated_at"`
}

// detail adds the source.
type detail struct {
	summary
	Source string `json:"source"`
}

// changed is the answer to a create, replace or edit.
type changed struct {
	ID       string `json:"id"`
	Trigger  string `json:"trigger"`
	Revision int    `json:"revision"`
}

func summarize(s storage.Script) summary {
	return summary{
		ID: s.ID, Trigger: s.Trigger, Description: s.Description, Revision: s.Revision,
		CreatedAt: admin.Timestamp(s.CreatedAt), UpdatedAt: admin.Timestamp(s.UpdatedAt),
	}
}

// checkSource validates a source and runs the syntax check, answering 400
// and returning false when it is refused.
func (h handlers) checkSource(w http.ResponseWriter, source string) bool {
	switch {
	case strings.TrimSpace(source) == "":
		respond.Error(w, http.StatusBadRequest, "source must not be empty")
		return false
	case len(source) > MaxSourceSize:
		respond.Errorf(w, http.StatusBadRequest, "source must be at most %d bytes", MaxSourceSize)
		return false
	}
	if h.Scripts != nil {
		if err := h.Scripts.Check(source); err != nil {
			respond.Error(w, http.StatusBadRequest, "script has a syntax error: "+err.Error())
			return false
		}
	}
	return true
}

// changedScript makes a stored change take effect, audits it and answers.
func (h handlers) changedScript(ctx context.Context, w http.ResponseWriter, p *admins.Principal, event string, status int, s storage.Script) {
	h.reload(ctx)
	h.Audit(ctx, p, event, s.Trigger, map[string]any{"id": s.ID, "revision": s.Revision})
	respond.JSON(w, status, changed{ID: s.ID, Trigger: s.Trigger, Revision: s.Revision})
}

// reload makes stored changes live; a failure is logged (the change is
// stored and takes effect at the next successful reload).
func (h handlers) reload(ctx context.Context) {
	if h.Scripts == nil {
		return
	}
	if err := h.Scripts.Reload(ctx); err != nil {
		h.Log.ErrorContext(ctx, "reloading scripts after a change failed", "err", err)
	}
}

func (h handlers) list(w http.ResponseWriter, r *http.Request, _ *admins.Principal) {
	all, err := h.Store.ListScripts(r.Context())
	if err != nil {
		respond.Internal(w, r, h.Log, err)
		return
	}
	suffix := r.URL.Query().Get("suffix")
	out := make([]summary, 0, len(all))
	for _, s := range all {
		if strings.HasSuffix(s.Trigger, suffix) {
			out = append(out, summarize(s))
		}
	}
	respond.JSON(w, http.StatusOK, map[string]any{"scripts": out})
}

func (h handlers) get(w http.ResponseWriter, r *http.Request, _ *admins.Principal) {
	s, err := h.Store.GetScript(r.Context(), r.PathValue("id"))
	if h.Failed(w, r, err, msgNotFound) {
		return
	}
	respond.JSON(w, http.StatusOK, detail{summary: summarize(s), Source: s.Source})
}

func (h handlers) create(w http.ResponseWriter, r *http.Request, p *admins.Principal) {
	var req struct {
		Trigger     string  `json:"trigger"`
		Source      *string `json:"source"`
		Description *string `json:"description"`
	}
	if !admin.Decode(w, r, &req) {
		return
	}
	if req.Trigger == "" {
		respond.Error(w, http.StatusBadRequest, "trigger is required")
		return
	}
	if err := ValidateTrigger(req.Trigger); err != nil {
		respond.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	if req.Source == nil {
		respond.Error(w, http.StatusBadRequest, "source is required")
		return
	}
	if !h.checkSource(w, *req.Source) {
		return
	}
	s := storage.Script{Trigger: req.Trigger, Source: *req.Source}
	if req.Description != nil {
		s.Description = *req.Description
	}
	stored, created, err := h.Store.PutScript(r.Context(), s)
	if err != nil {
		respond.Internal(w, r, h.Log, err)
		return
	}
	status, event := http.StatusOK, "script.updated"
	if created {
		status, event = http.StatusCreated, "script.created"
	}
	h.changedScript(r.Context(), w, p, event, status, stored)
}

func (h handlers) update(w http.ResponseWriter, r *http.Request, p *admins.Principal) {
	var req struct {
		Source      *string `json:"source"`
		Description *string `json:"description"`
	}
	if !admin.Decode(w, r, &req) {
		return
	}
	if req.Source == nil && req.Description == nil {
		respond.Error(w, http.StatusBadRequest, "source or description is required")
		return
	}
	if req.Source != nil && !h.checkSource(w, *req.Source) {
		return
	}
	s, err := h.Store.UpdateScript(r.Context(), r.PathValue("id"), req.Source, req.Description)
	if h.Failed(w, r, err, msgNotFound) {
		return
	}
	h.changedScript(r.Context(), w, p, "script.updated", http.StatusOK, s)
}

func (h handlers) delete(w http.ResponseWriter, r *http.Request, p *admins.Principal) {
	id := r.PathValue("id")
	s, err := h.Store.GetScript(r.Context(), id) // for the audit subject
	if err == nil {
		err = h.Store.DeleteScript(r.Context(), id)
	}
	if h.Failed(w, r, err, msgNotFound) {
		return
	}
	h.reload(r.Context())
	h.Audit(r.Context(), p, "script.deleted", s.Trigger, map[string]any{"id": s.ID, "revision": s.Revision})
	w.WriteHeader(http.StatusNoContent)
}
