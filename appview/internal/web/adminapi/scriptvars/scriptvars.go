// Package scriptvars serves the admin endpoints of script variables over
// the scripts service: list (never a value), set and delete.
package scriptvars

import (
	"net/http"

	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/service/scripts"
	"github.com/lexview/lexview/appview/internal/web/adminapi"
	"github.com/lexview/lexview/appview/internal/web/respond"
)

// Mount registers the script-variable endpoints.
func Mount(m *adminapi.Mux, svc *scripts.Variables) {
	h := handlers{svc}
	m.HandleFunc("GET /admin/script-variables", h.list)
	m.HandleFunc("POST /admin/script-variables", h.set)
	m.HandleFunc("DELETE /admin/script-variables/{key}", h.delete)
}

type handlers struct{ svc *scripts.Variables }

// variable is the list shape of a variable: never its value.
type variable struct {
	Key       string `json:"key"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

func (h handlers) list(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	list, err := h.svc.List(r.Context())
	if err != nil {
		return err
	}
	out := make([]variable, len(list))
	for i, v := range list {
		out[i] = variable{Key: v.Key, CreatedAt: adminapi.Timestamp(v.CreatedAt), UpdatedAt: adminapi.Timestamp(v.UpdatedAt)}
	}
	respond.JSON(w, http.StatusOK, map[string]any{"variables": out})
	return nil
}

func (h handlers) set(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	var req struct {
		Key   string  `json:"key"`
		Value *string `json:"value"`
	}
	if err := adminapi.Read(w, r, &req); err != nil {
		return err
	}
	if err := h.svc.Set(r.Context(), p.DID(), req.Key, req.Value); err != nil {
		return err
	}
	respond.JSON(w, http.StatusOK, map[string]string{"key": req.Key})
	return nil
}

func (h handlers) delete(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	if err := h.svc.Delete(r.Context(), p.DID(), r.PathValue("key")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
