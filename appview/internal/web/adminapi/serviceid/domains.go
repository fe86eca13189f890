// Package serviceid serves the admin endpoints of the instance's service
// identity: its domains, its identity mode and its DID verification
// methods.
package serviceid

import (
	"net/http"

	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/service/domains"
	"github.com/lexview/lexview/appview/internal/web/adminapi"
	"github.com/lexview/lexview/appview/internal/web/respond"
	"github.com/lexview/lexview/storage"
)

// MountDomains registers the domain endpoints.
func MountDomains(m *adminapi.Mux, svc *domains.Service) {
	h := domainHandlers{svc}
	m.HandleFunc("GET /admin/domains", h.list)
	m.HandleFunc("POST /admin/domains", h.create)
	m.HandleFunc("DELETE /admin/domains/{id}", h.delete)
	m.HandleFunc("POST /admin/domains/{id}/primary", h.setPrimary)
}

type domainHandlers struct{ svc *domains.Service }

// domainJSON is the specification's Domain resource.
type domainJSON struct {
	ID        string `json:"id"`
	URL       string `json:"url"`
	IsPrimary bool   `json:"is_primary"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
	// ClientID is the domain's OAuth client_id: the URL of the client
	// metadata document it serves.
	ClientID string `json:"client_id"`
}

func toDomainJSON(d storage.Domain) domainJSON {
	return domainJSON{ID: d.ID, URL: d.URL, IsPrimary: d.IsPrimary, CreatedAt: adminapi.Timestamp(d.CreatedAt), UpdatedAt: adminapi.Timestamp(d.UpdatedAt),
		ClientID: domains.ClientID(d.URL)}
}

func (h domainHandlers) list(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	list, err := h.svc.List(r.Context())
	if err != nil {
		return err
	}
	out := make([]domainJSON, len(list))
	for i, d := range list {
		out[i] = toDomainJSON(d)
	}
	respond.JSON(w, http.StatusOK, out)
	return nil
}

func (h domainHandlers) create(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	var req struct {
		URL string `json:"url"`
	}
	if err := adminapi.Read(w, r, &req); err != nil {
		return err
	}
	d, err := h.svc.Create(r.Context(), p.DID(), req.URL)
	if err != nil {
		return err
	}
	respond.JSON(w, http.StatusCreated, toDomainJSON(d))
	return nil
}

func (h domainHandlers) delete(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	if err := h.svc.Delete(r.Context(), p.DID(), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h domainHandlers) setPrimary(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	if _, err := h.svc.SetPrimary(r.Context(), p.DID(), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
