// Package plugins serves the admin endpoints of WASM plugins over the
// plugin service: list, preview, install pinned by hash, delete, reload,
// the official registry, update checks and masked secrets.
package plugins

import (
	"net/http"

	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/service/plugins"
	"github.com/lexview/lexview/appview/internal/web/adminapi"
	"github.com/lexview/lexview/appview/internal/web/respond"
)

// Mount registers the plugin endpoints.
func Mount(m *adminapi.Mux, svc *plugins.Manager) {
	h := handlers{svc}
	m.HandleFunc("GET /admin/plugins", h.list)
	m.HandleFunc("POST /admin/plugins/preview", h.preview)
	m.HandleFunc("POST /admin/plugins", h.install)
	m.HandleFunc("GET /admin/plugins/official", h.official)
	m.HandleFunc("DELETE /admin/plugins/{id}", h.delete)
	m.HandleFunc("POST /admin/plugins/{id}/reload", h.reload)
	m.HandleFunc("POST /admin/plugins/{id}/check-update", h.checkUpdate)
	m.HandleFunc("GET /admin/plugins/{id}/secrets", h.secrets)
	m.HandleFunc("PUT /admin/plugins/{id}/secrets", h.putSecrets)
}

type handlers struct{ svc *plugins.Manager }

func (h handlers) list(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	list, err := h.svc.List(r.Context())
	if err != nil {
		return err
	}
	respond.JSON(w, http.StatusOK, map[string]any{"encryption_configured": h.svc.EncryptionConfigured(), "plugins": list})
	return nil
}

func (h handlers) preview(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	var req struct {
		URL string `json:"url"`
	}
	if err := adminapi.Read(w, r, &req); err != nil {
		return err
	}
	p, err := h.svc.Preview(r.Context(), req.URL)
	if err != nil {
		return err
	}
	respond.JSON(w, http.StatusOK, p)
	return nil
}

func (h handlers) install(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	var req struct {
		URL    string `json:"url"`
		SHA256 string `json:"sha256"`
	}
	if err := adminapi.Read(w, r, &req); err != nil {
		return err
	}
	s, err := h.svc.Install(r.Context(), p.DID(), req.URL, req.SHA256)
	if err != nil {
		return err
	}
	respond.JSON(w, http.StatusOK, s)
	return nil
}

func (h handlers) official(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	list, at, err := h.svc.Official(r.Context())
	if err != nil {
		return err
	}
	respond.JSON(w, http.StatusOK, map[string]any{"last_refreshed_at": at, "plugins": list})
	return nil
}

func (h handlers) delete(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	if err := h.svc.Delete(r.Context(), p.DID(), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h handlers) reload(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	var req struct {
		URL string `json:"url"`
	}
	if r.ContentLength != 0 {
		if err := adminapi.Read(w, r, &req); err != nil {
			return err
		}
	}
	s, err := h.svc.Reload(r.Context(), p.DID(), r.PathValue("id"), req.URL)
	if err != nil {
		return err
	}
	respond.JSON(w, http.StatusOK, s)
	return nil
}

func (h handlers) checkUpdate(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	s, err := h.svc.CheckUpdate(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	respond.JSON(w, http.StatusOK, s)
	return nil
}

func (h handlers) secrets(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	id := r.PathValue("id")
	masked, err := h.svc.Secrets(r.Context(), id)
	if err != nil {
		return err
	}
	respond.JSON(w, http.StatusOK, map[string]any{"plugin_id": id, "secrets": masked})
	return nil
}

func (h handlers) putSecrets(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	var req struct {
		Secrets map[string]string `json:"secrets"`
	}
	if err := adminapi.Read(w, r, &req); err != nil {
		return err
	}
	if err := h.svc.PutSecrets(r.Context(), p.DID(), r.PathValue("id"), req.Secrets); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
