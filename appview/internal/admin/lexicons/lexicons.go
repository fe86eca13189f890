// Package lexicons serves the admin lexicon endpoints: upload (create or
// replace), list, get with the raw document, and delete.
package lexicons

import (
	"encoding/json"
	"net/http"

	"github.com/lexview/lexview/appview/internal/admin"
	"github.com/lexview/lexview/appview/internal/admins"
	"github.com/lexview/lexview/appview/internal/respond"
	"github.com/lexview/lexview/lexicon"
)

// Mount registers the lexicon endpoints.
func Mount(m *admin.Mux, d admin.Deps) {
	h := handlers{d}
	m.Handle("POST /admin/lexicons", h.upload)
	m.Handle("GET /admin/lexicons", h.list)
	m.Handle("GET /admin/lexicons/{id}", h.get)
	m.Handle("DELETE /admin/lexicons/{id}", h.delete)
}

type handlers struct{ admin.Deps }

// summary is the list shape of a lexicon.
type summary struct {
	ID               string  `json:"id"`
	Revision         int     `json:"revision"`
	LexiconType      string  `json:"lexicon_type"`
	Backfill         bool    `json:"backfill"`
	TargetCollection *string `json:"target_collection"`
	HasScript        bool    `json:"has_script"`
	HasIndexHook     bool    `json:"has_index_hook"`
	CreatedAt        string  `json:"created_at"`
	UpdatedAt        string  `json:"updated_at"`
}

// detail adds the raw document and the scripts.
type detail struct {
	summary
	LexiconJSON json.RawMessage `json:"lexicon_json"`
	Script      *string         `json:"script"`
	IndexHook   *string         `json:"index_hook"`
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func summarize(l *lexicon.Lexicon) summary {
	return summary{
		ID: l.ID, Revision: l.Revision, LexiconType: string(l.Kind), Backfill: l.Backfill,
		TargetCollection: optional(l.TargetCollection), HasScript: l.Script != "", HasIndexHook: l.IndexHook != "",
		CreatedAt: admin.Timestamp(l.CreatedAt), UpdatedAt: admin.Timestamp(l.UpdatedAt),
	}
}

type uploadRequest struct {
	LexiconJSON      json.RawMessage `json:"lexicon_json"`
	Backfill         *bool           `json:"backfill"`
	TargetCollection *string         `json:"target_collection"`
	Script           *string         `json:"script"`
	IndexHook        *string         `json:"index_hook"`
}

func (h handlers) upload(w http.ResponseWriter, r *http.Request, p *admins.Principal) {
	var req uploadRequest
	if !admin.Decode(w, r, &req) {
		return
	}
	if len(req.LexiconJSON) == 0 || string(req.LexiconJSON) == "null" {
		respond.Error(w, http.StatusBadRequest, "lexicon_json is required")
		return
	}
	doc := req.LexiconJSON
	var quoted string
	if json.Unmarshal(doc, &quoted) == nil { // a document sent as a JSON string
		doc = json.RawMessage(quoted)
	}
	up := lexicon.Upload{Document: doc, Backfill: req.Backfill}
	if req.TargetCollection != nil {
		up.TargetCollection = *req.TargetCollection
	}
	if req.Script != nil {
		up.Script = *req.Script
	}
	if req.IndexHook != nil {
		up.IndexHook = *req.IndexHook
	}
	if h.Scripts != nil {
		for field, src := range map[string]string{"script": up.Script, "index_hook": up.IndexHook} {
			if src == "" {
				continue
			}
			if err := h.Scripts.Check(src); err != nil {
				respond.Error(w, http.StatusBadRequest, field+" has a syntax error: "+err.Error())
				return
			}
		}
	}
	l, created, err := h.Lexicons.Put(r.Context(), up)
	if lexicon.IsParseError(err) {
		respond.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	if err != nil {
		respond.Internal(w, r, h.Log, err)
		return
	}
	status, event := http.StatusOK, "lexicon.updated"
	if created {
		status, event = http.StatusCreated, "lexicon.created"
	}
	h.Audit(r.Context(), p, event, l.ID, map[string]any{
		"revision": l.Revision, "lexicon_type": l.Kind, "backfill": l.Backfill, "target_collection": optional(l.TargetCollection),
	})
	if l.Kind == lexicon.KindRecord && l.Backfill && h.Backfill != nil {
		// The lexicon is stored either way; a job that cannot be created
		// is logged, and an operator can start one with POST /admin/backfill.
		if err := h.Backfill.CreateForCollection(r.Context(), l.ID, p.DID()); err != nil {
			h.Log.ErrorContext(r.Context(), "creating the backfill job of a new record lexicon failed", "collection", l.ID, "err", err)
		}
	}
	respond.JSON(w, status, map[string]any{"id": l.ID, "revision": l.Revision})
}

func (h handlers) list(w http.ResponseWriter, r *http.Request, _ *admins.Principal) {
	all := h.Lexicons.Snapshot().All()
	out := make([]summary, len(all))
	for i, l := range all {
		out[i] = summarize(l)
	}
	respond.JSON(w, http.StatusOK, out)
}

func (h handlers) get(w http.ResponseWriter, r *http.Request, _ *admins.Principal) {
	l, ok := h.Lexicons.Snapshot().Get(r.PathValue("id"))
	if !ok {
		respond.Error(w, http.StatusNotFound, "lexicon not found")
		return
	}
	respond.JSON(w, http.StatusOK, detail{
		summary: summarize(l), LexiconJSON: l.Raw, Script: optional(l.Script), IndexHook: optional(l.IndexHook),
	})
}

func (h handlers) delete(w http.ResponseWriter, r *http.Request, p *admins.Principal) {
	id := r.PathValue("id")
	err := h.Lexicons.Delete(r.Context(), id)
	if h.Failed(w, r, err, "lexicon not found") {
		return
	}
	h.Audit(r.Context(), p, "lexicon.deleted", id, nil)
	w.WriteHeader(http.StatusNoContent)
}
