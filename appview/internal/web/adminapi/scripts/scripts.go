// Package scripts serves the admin endpoints of trigger-keyed Lua scripts
// over the scripts service: list (with a trigger-suffix filter), get with
// the source, create or replace by trigger, edit, delete, and the syntax
// check of a source without storing it.
package scripts

import (
	"net/http"

	"github.com/lexview/lexview/appview/internal/service/admins"
	scriptsvc "github.com/lexview/lexview/appview/internal/service/scripts"
	"github.com/lexview/lexview/appview/internal/web/adminapi"
	"github.com/lexview/lexview/appview/internal/web/respond"
	"github.com/lexview/lexview/storage"
)

// Mount registers the script endpoints.
func Mount(m *adminapi.Mux, svc *scriptsvc.Service) {
	h := handlers{svc}
	m.HandleFunc("GET /admin/scripts", h.list)
	m.HandleFunc("GET /admin/scripts/{id}", h.get)
	m.HandleFunc("POST /admin/scripts", h.create)
	m.HandleFunc("POST /admin/scripts/check", h.check)
	m.HandleFunc("PATCH /admin/scripts/{id}", h.update)
	m.HandleFunc("DELETE /admin/scripts/{id}", h.delete)
}

type handlers struct{ svc *scriptsvc.Service }

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
		CreatedAt: adminapi.Timestamp(s.CreatedAt), UpdatedAt: adminapi.Timestamp(s.UpdatedAt),
	}
}

func answerChanged(w http.ResponseWriter, status int, s storage.Script) {
	respond.JSON(w, status, changed{ID: s.ID, Trigger: s.Trigger, Revision: s.Revision})
}

func (h handlers) list(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	all, err := h.svc.List(r.Context(), r.URL.Query().Get("suffix"))
	if err != nil {
		return err
	}
	out := make([]summary, len(all))
	for i, s := range all {
		out[i] = summarize(s)
	}
	respond.JSON(w, http.StatusOK, map[string]any{"scripts": out})
	return nil
}

func (h handlers) get(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	s, err := h.svc.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	respond.JSON(w, http.StatusOK, detail{summary: summarize(s), Source: s.Source})
	return nil
}

func (h handlers) create(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	var req struct {
		Trigger     string  `json:"trigger"`
		Source      *string `json:"source"`
		Description *string `json:"description"`
	}
	if err := adminapi.Read(w, r, &req); err != nil {
		return err
	}
	stored, created, err := h.svc.Put(r.Context(), p.DID(), req.Trigger, req.Source, req.Description)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	answerChanged(w, status, stored)
	return nil
}

func (h handlers) update(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	var req struct {
		Source      *string `json:"source"`
		Description *string `json:"description"`
	}
	if err := adminapi.Read(w, r, &req); err != nil {
		return err
	}
	s, err := h.svc.Update(r.Context(), p.DID(), r.PathValue("id"), req.Source, req.Description)
	if err != nil {
		return err
	}
	answerChanged(w, http.StatusOK, s)
	return nil
}

func (h handlers) delete(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	if err := h.svc.Delete(r.Context(), p.DID(), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
