package serviceid

import (
	"net/http"

	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/service/serviceentries"
	"github.com/lexview/lexview/appview/internal/web/adminapi"
	"github.com/lexview/lexview/appview/internal/web/respond"
	"github.com/lexview/lexview/storage"
)

// MountServiceEntries registers the service-entry endpoints: the entries,
// their bound methods, their allowlists, and the entries of a lexicon.
func MountServiceEntries(m *adminapi.Mux, svc *serviceentries.Service) {
	h := entryHandlers{svc}
	m.HandleFunc("GET /admin/service-entries", h.list)
	m.HandleFunc("POST /admin/service-entries", h.create)
	m.HandleFunc("PUT /admin/service-entries/{id}", h.update)
	m.HandleFunc("DELETE /admin/service-entries/{id}", h.delete)
	m.HandleFunc("GET /admin/service-entries/{id}/xrpcs", h.methods)
	m.HandleFunc("POST /admin/service-entries/{id}/xrpcs", h.bind)
	m.HandleFunc("DELETE /admin/service-entries/{id}/xrpcs", h.unbind)
	m.HandleFunc("GET /admin/service-entries/{id}/allowlist", h.allowlist)
	m.HandleFunc("POST /admin/service-entries/{id}/allowlist", h.allow)
	m.HandleFunc("DELETE /admin/service-entries/{id}/allowlist", h.disallow)
	m.HandleFunc("GET /admin/lexicons/{id}/services", h.forLexicon)
}

type entryHandlers struct{ svc *serviceentries.Service }

// entryJSON is the specification's Service entry resource. The fragment
// is answered with its "#", as verification methods answer theirs.
type entryJSON struct {
	ID          int64  `json:"id"`
	FragmentID  string `json:"fragment_id"`
	ServiceType string `json:"service_type"`
	AccessMode  string `json:"access_mode"`
	CreatedAt   string `json:"created_at"`
	UpdatedAt   string `json:"updated_at"`
}

func toEntryJSON(e storage.ServiceEntry) entryJSON {
	return entryJSON{ID: e.ID, FragmentID: "#" + e.Fragment, ServiceType: e.ServiceType, AccessMode: e.AccessMode,
		CreatedAt: adminapi.Timestamp(e.CreatedAt), UpdatedAt: adminapi.Timestamp(e.UpdatedAt)}
}

func writeEntries(w http.ResponseWriter, list []storage.ServiceEntry) {
	out := make([]entryJSON, len(list))
	for i, e := range list {
		out[i] = toEntryJSON(e)
	}
	respond.JSON(w, http.StatusOK, out)
}

// writeNames answers a list of NSIDs or DIDs, [] when empty.
func writeNames(w http.ResponseWriter, list []string) {
	if list == nil {
		list = []string{}
	}
	respond.JSON(w, http.StatusOK, list)
}

func (h entryHandlers) list(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	list, err := h.svc.List(r.Context())
	if err != nil {
		return err
	}
	writeEntries(w, list)
	return nil
}

func (h entryHandlers) create(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	var req struct {
		FragmentID  string `json:"fragment_id"`
		ServiceType string `json:"service_type"`
	}
	if err := adminapi.Read(w, r, &req); err != nil {
		return err
	}
	e, err := h.svc.Create(r.Context(), p.DID(), req.FragmentID, req.ServiceType)
	if err != nil {
		return err
	}
	respond.JSON(w, http.StatusCreated, toEntryJSON(e))
	return nil
}

func (h entryHandlers) update(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	id, err := serviceentries.ParseID(r.PathValue("id"))
	if err != nil {
		return err
	}
	var req struct {
		FragmentID  *string `json:"fragment_id"`
		ServiceType *string `json:"service_type"`
		AccessMode  *string `json:"access_mode"`
	}
	if err := adminapi.Read(w, r, &req); err != nil {
		return err
	}
	if err := h.svc.Update(r.Context(), p.DID(), id, serviceentries.Patch(req)); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h entryHandlers) delete(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	id, err := serviceentries.ParseID(r.PathValue("id"))
	if err != nil {
		return err
	}
	if err := h.svc.Delete(r.Context(), p.DID(), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h entryHandlers) methods(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	id, err := serviceentries.ParseID(r.PathValue("id"))
	if err != nil {
		return err
	}
	list, err := h.svc.Methods(r.Context(), id)
	if err != nil {
		return err
	}
	writeNames(w, list)
	return nil
}

// change reads {field: [...]} for entry {id} and applies do.
func change(w http.ResponseWriter, r *http.Request, p *admins.Principal, field string,
	do func(r *http.Request, actor string, id int64, list []string) error,
) error {
	id, err := serviceentries.ParseID(r.PathValue("id"))
	if err != nil {
		return err
	}
	var req struct {
		LexiconIDs []string `json:"lexicon_ids"`
		DIDs       []string `json:"dids"`
	}
	if err := adminapi.Read(w, r, &req); err != nil {
		return err
	}
	list := req.LexiconIDs
	if field == "dids" {
		list = req.DIDs
	}
	if err := do(r, p.DID(), id, list); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h entryHandlers) bind(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	return change(w, r, p, "lexicon_ids", func(r *http.Request, actor string, id int64, list []string) error {
		return h.svc.Bind(r.Context(), actor, id, list)
	})
}

func (h entryHandlers) unbind(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	return change(w, r, p, "lexicon_ids", func(r *http.Request, actor string, id int64, list []string) error {
		return h.svc.Unbind(r.Context(), actor, id, list)
	})
}

func (h entryHandlers) allowlist(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	id, err := serviceentries.ParseID(r.PathValue("id"))
	if err != nil {
		return err
	}
	list, err := h.svc.Allowlist(r.Context(), id)
	if err != nil {
		return err
	}
	writeNames(w, list)
	return nil
}

func (h entryHandlers) allow(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	return change(w, r, p, "dids", func(r *http.Request, actor string, id int64, list []string) error {
		return h.svc.Allow(r.Context(), actor, id, list)
	})
}

func (h entryHandlers) disallow(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	return change(w, r, p, "dids", func(r *http.Request, actor string, id int64, list []string) error {
		return h.svc.Disallow(r.Context(), actor, id, list)
	})
}

func (h entryHandlers) forLexicon(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	list, err := h.svc.ForLexicon(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeEntries(w, list)
	return nil
}
