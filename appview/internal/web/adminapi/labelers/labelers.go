// Package labelers serves the admin endpoints of labeler subscriptions
// over the labelers service.
package labelers

import (
	"net/http"

	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/service/labelers"
	"github.com/lexview/lexview/appview/internal/web/adminapi"
	"github.com/lexview/lexview/appview/internal/web/respond"
	"github.com/lexview/lexview/storage"
)

// Mount registers the labeler endpoints.
func Mount(m *adminapi.Mux, svc *labelers.Service) {
	h := handlers{svc}
	m.HandleFunc("POST /admin/labelers", h.add)
	m.HandleFunc("GET /admin/labelers", h.list)
	m.HandleFunc("PATCH /admin/labelers/{did}", h.setStatus)
	m.HandleFunc("DELETE /admin/labelers/{did}", h.delete)
}

type handlers struct{ svc *labelers.Service }

// labelerJSON is the specification's Labeler resource.
type labelerJSON struct {
	DID       string `json:"did"`
	Status    string `json:"status"`
	Cursor    *int64 `json:"cursor"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

func toLabelerJSON(l storage.Labeler) labelerJSON {
	return labelerJSON{DID: l.DID, Status: l.Status, Cursor: l.Cursor,
		CreatedAt: adminapi.Timestamp(l.CreatedAt), UpdatedAt: adminapi.Timestamp(l.UpdatedAt)}
}

func (h handlers) list(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	list, err := h.svc.List(r.Context())
	if err != nil {
		return err
	}
	out := make([]labelerJSON, len(list))
	for i, l := range list {
		out[i] = toLabelerJSON(l)
	}
	respond.JSON(w, http.StatusOK, out)
	return nil
}

// add answers 201 with an empty body, whether the labeler is new or
// re-activated.
func (h handlers) add(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	var req struct {
		DID string `json:"did"`
	}
	if err := adminapi.Read(w, r, &req); err != nil {
		return err
	}
	if _, err := h.svc.Add(r.Context(), p.DID(), req.DID); err != nil {
		return err
	}
	w.WriteHeader(http.StatusCreated)
	return nil
}

// setStatus answers 200 with the labeler as it now is.
func (h handlers) setStatus(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	var req struct {
		Status string `json:"status"`
	}
	if err := adminapi.Read(w, r, &req); err != nil {
		return err
	}
	l, err := h.svc.SetStatus(r.Context(), p.DID(), r.PathValue("did"), req.Status)
	if err != nil {
		return err
	}
	respond.JSON(w, http.StatusOK, toLabelerJSON(l))
	return nil
}

func (h handlers) delete(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	if err := h.svc.Delete(r.Context(), p.DID(), r.PathValue("did")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
