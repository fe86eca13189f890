// Package fieldindexes serves the admin endpoints of declared field
// indexes over the fieldindexes service: list, declare, get, drop, and
// the index suggestions.
package fieldindexes

import (
	"net/http"

	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/service/fieldindexes"
	"github.com/lexview/lexview/appview/internal/web/adminapi"
	"github.com/lexview/lexview/appview/internal/web/respond"
	"github.com/lexview/lexview/storage"
)

// Mount registers the field index endpoints.
func Mount(m *adminapi.Mux, svc *fieldindexes.Service) {
	h := handlers{svc}
	m.HandleFunc("GET /admin/indexes", h.list)
	m.HandleFunc("POST /admin/indexes", h.declare)
	m.HandleFunc("GET /admin/indexes/suggestions", h.suggestions)
	m.HandleFunc("GET /admin/indexes/{id}", h.get)
	m.HandleFunc("DELETE /admin/indexes/{id}", h.drop)
}

type handlers struct{ svc *fieldindexes.Service }

// Index is the admin API's shape of a declared field index. Progress is
// the share of the build done, from 0 to 1 (1 once ready).
type Index struct {
	ID         int64   `json:"id"`
	Collection string  `json:"collection"`
	Path       string  `json:"path"`
	Kind       string  `json:"kind"`
	State      string  `json:"state"`
	Done       int64   `json:"done"`
	Total      int64   `json:"total"`
	Progress   float64 `json:"progress"`
	Error      *string `json:"error"`
	CreatedAt  string  `json:"created_at"`
	UpdatedAt  string  `json:"updated_at"`
}

// NewIndex renders f.
func NewIndex(f storage.FieldIndex) Index {
	out := Index{ID: f.ID, Collection: f.Collection, Path: f.Path, Kind: string(f.Kind), State: string(f.State),
		Done: f.Done, Total: f.Total, CreatedAt: adminapi.Timestamp(f.CreatedAt), UpdatedAt: adminapi.Timestamp(f.UpdatedAt)}
	switch {
	case f.State == storage.FieldIndexReady:
		out.Progress = 1
	case f.Total > 0:
		out.Progress = min(float64(f.Done)/float64(f.Total), 1)
	}
	if f.Error != "" {
		out.Error = &f.Error
	}
	return out
}

// NewIndexes renders a list.
func NewIndexes(list []storage.FieldIndex) []Index {
	out := make([]Index, len(list))
	for i, f := range list {
		out[i] = NewIndex(f)
	}
	return out
}

func (h handlers) list(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	list, err := h.svc.List(r.Context(), r.URL.Query().Get("collection"))
	if err != nil {
		return err
	}
	respond.JSON(w, http.StatusOK, map[string]any{"indexes": NewIndexes(list)})
	return nil
}

// declare answers 201 with a new index, 200 with one that existed.
func (h handlers) declare(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	var req struct {
		Collection string `json:"collection"`
		Path       string `json:"path"`
		Kind       string `json:"kind"`
	}
	if err := adminapi.Read(w, r, &req); err != nil {
		return err
	}
	f, created, err := h.svc.Declare(r.Context(), p.DID(), storage.FieldIndexSpec{
		Collection: req.Collection, Path: req.Path, Kind: storage.FieldIndexKind(req.Kind)})
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	respond.JSON(w, status, NewIndex(f))
	return nil
}

func (h handlers) get(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	id, err := fieldindexes.ParseID(r.PathValue("id"))
	if err != nil {
		return err
	}
	f, err := h.svc.Get(r.Context(), id)
	if err != nil {
		return err
	}
	respond.JSON(w, http.StatusOK, NewIndex(f))
	return nil
}

func (h handlers) drop(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	id, err := fieldindexes.ParseID(r.PathValue("id"))
	if err != nil {
		return err
	}
	if err := h.svc.Drop(r.Context(), p.DID(), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// suggestion is the admin API's shape of an index suggestion; records is
// null until the collection is counted.
type suggestion struct {
	Collection string `json:"collection"`
	Field      string `json:"field"`
	Kind       string `json:"kind"`
	Count      int64  `json:"count"`
	Records    *int64 `json:"records"`
	FirstSeen  string `json:"first_seen"`
	LastSeen   string `json:"last_seen"`
}

func (h handlers) suggestions(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	list, err := h.svc.Suggestions(r.Context())
	if err != nil {
		return err
	}
	out := make([]suggestion, len(list))
	for i, s := range list {
		out[i] = suggestion{Collection: s.Collection, Field: s.Field, Kind: string(s.Kind), Count: s.Count,
			FirstSeen: adminapi.Timestamp(s.FirstSeen), LastSeen: adminapi.Timestamp(s.LastSeen)}
		if s.Records >= 0 {
			out[i].Records = &s.Records
		}
	}
	respond.JSON(w, http.StatusOK, map[string]any{"suggestions": out})
	return nil
}
