// Package apiclients serves the admin API client endpoints: create, list,
// get, update and delete the API clients that call XRPC. Every change goes
// through clients.Manager, so it applies to the next XRPC request.
package apiclients

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"

	"github.com/lexview/lexview/appview/internal/admin"
	"github.com/lexview/lexview/appview/internal/admins"
	"github.com/lexview/lexview/appview/internal/clients"
	"github.com/lexview/lexview/appview/internal/respond"
	"github.com/lexview/lexview/storage"
)

// Mount registers the API client endpoints.
func Mount(m *admin.Mux, d admin.Deps) {
	h := handlers{d}
	m.Handle("GET /admin/api-clients", h.list)
	m.Handle("POST /admin/api-clients", h.create)
	m.Handle("GET /admin/api-clients/{id}", h.get)
	m.Handle("PUT /admin/api-clients/{id}", h.update)
	m.Handle("DELETE /admin/api-clients/{id}", h.delete)
}

// Error strings.
const (
	msgBadBody         = "invalid request body"
	msgNotFound        = "API client not found"
	msgConflict        = "client_id_url already registered"
	msgIDURLImmutable  = "client_id_url cannot be changed"
	msgTypeImmutable   = "client_type cannot be changed"
	eventClientCreated = "api_client.created"
	eventClientUpdated = "api_client.updated"
	eventClientDeleted = "api_client.deleted"
)

type handlers struct{ admin.Deps }

// view is the admin shape of a client. It never carries the secret.
type view struct {
	ID                  string   `json:"id"`
	ClientKey           string   `json:"client_key"`
	Name                string   `json:"name"`
	ClientIDURL         string   `json:"client_id_url"`
	ClientURI           string   `json:"client_uri"`
	RedirectURIs        []string `json:"redirect_uris"`
	Scopes              string   `json:"scopes"`
	ClientType          string   `json:"client_type"`
	AllowedOrigins      []string `json:"allowed_origins"`
	RateLimitCapacity   *int     `json:"rate_limit_capacity"`
	RateLimitRefillRate *float64 `json:"rate_limit_refill_rate"`
	IsActive            bool     `json:"is_active"`
	CreatedBy           string   `json:"created_by"`
	CreatedAt           string   `json:"created_at"`
	UpdatedAt           string   `json:"updated_at"`
	ParentClientID      *string  `json:"parent_client_id"`
	OwnerDID            *string  `json:"owner_did"`
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func toView(c storage.APIClient) view {
	return view{
		ID: c.ID, ClientKey: c.Key, Name: c.Name, ClientIDURL: c.ClientIDURL, ClientURI: c.ClientURI,
		RedirectURIs: nonNil(c.RedirectURIs), Scopes: c.Scopes, ClientType: c.Type, AllowedOrigins: nonNil(c.AllowedOrigins),
		RateLimitCapacity: c.RateLimitCapacity, RateLimitRefillRate: c.RateLimitRefillRate, IsActive: c.IsActive,
		CreatedBy: c.CreatedBy, CreatedAt: admin.Timestamp(c.CreatedAt), UpdatedAt: admin.Timestamp(c.UpdatedAt),
		ParentClientID: optional(c.ParentID), OwnerDID: optional(c.OwnerDID),
	}
}

func (h handlers) list(w http.ResponseWriter, r *http.Request, _ *admins.Principal) {
	all, err := h.ClientManager.List(r.Context(), r.URL.Query().Get("parent_id"))
	if err != nil {
		respond.Internal(w, r, h.Log, err)
		return
	}
	out := make([]view, len(all))
	for i, c := range all {
		out[i] = toView(c)
	}
	respond.JSON(w, http.StatusOK, out)
}

func (h handlers) get(w http.ResponseWriter, r *http.Request, _ *admins.Principal) {
	c, ok := h.load(w, r)
	if ok {
		respond.JSON(w, http.StatusOK, toView(c))
	}
}

// load reads the client named by the path, answering 404 or 500 and
// returning false when it cannot.
func (h handlers) load(w http.ResponseWriter, r *http.Request) (storage.APIClient, bool) {
	c, err := h.ClientManager.Get(r.Context(), r.PathValue("id"))
	if errors.Is(err, storage.ErrNotFound) {
		respond.Error(w, http.StatusNotFound, msgNotFound)
		return c, false
	}
	if err != nil {
		respond.Internal(w, r, h.Log, err)
		return c, false
	}
	return c, true
}

type createRequest struct {
	Name                string   `json:"name"`
	ClientIDURL         string   `json:"client_id_url"`
	ClientURI           string   `json:"client_uri"`
	RedirectURIs        []string `json:"redirect_uris"`
	Scopes              string   `json:"scopes"`
	ClientType          string   `json:"client_type"`
	AllowedOrigins      []string `json:"allowed_origins"`
	RateLimitCapacity   *int     `json:"rate_limit_capacity"`
	RateLimitRefillRate *float64 `json:"rate_limit_refill_rate"`
}

type createResponse struct {
	ID           string `json:"id"`
	ClientKey    string `json:"client_key"`
	ClientSecret string `json:"client_secret"`
	Name         string `json:"name"`
	ClientIDURL  string `json:"client_id_url"`
}

func (h handlers) create(w http.ResponseWriter, r *http.Request, p *admins.Principal) {
	var req createRequest
	if !admin.Decode(w, r, &req) {
		return
	}
	if req.Name == "" || req.ClientIDURL == "" || req.ClientURI == "" || req.RedirectURIs == nil {
		respond.Error(w, http.StatusBadRequest, msgBadBody)
		return
	}
	c, secret, err := h.ClientManager.Create(r.Context(), clients.NewClient{
		Name: req.Name, ClientIDURL: req.ClientIDURL, ClientURI: req.ClientURI, RedirectURIs: req.RedirectURIs,
		Scopes: req.Scopes, Type: req.ClientType, AllowedOrigins: req.AllowedOrigins,
		RateLimitCapacity: req.RateLimitCapacity, RateLimitRefillRate: req.RateLimitRefillRate, CreatedBy: p.DID(),
	})
	switch {
	case clients.IsValidation(err):
		respond.Error(w, http.StatusBadRequest, err.Error())
		return
	case errors.Is(err, storage.ErrConflict):
		respond.Error(w, http.StatusConflict, msgConflict)
		return
	case err != nil:
		respond.Internal(w, r, h.Log, err)
		return
	}
	h.Audit(r.Context(), p, eventClientCreated, c.ID, map[string]any{
		"name": c.Name, "client_id_url": c.ClientIDURL, "client_uri": c.ClientURI, "client_type": c.Type,
		"scopes": c.Scopes, "rate_limit_capacity": c.RateLimitCapacity, "rate_limit_refill_rate": c.RateLimitRefillRate,
	})
	respond.JSON(w, http.StatusCreated, createResponse{
		ID: c.ID, ClientKey: c.Key, ClientSecret: secret, Name: c.Name, ClientIDURL: c.ClientIDURL,
	})
}

// updateRequest holds each field raw, so that an absent field (nil) is told
// apart from JSON null.
type updateRequest struct {
	Name                json.RawMessage `json:"name"`
	ClientURI           json.RawMessage `json:"client_uri"`
	RedirectURIs        json.RawMessage `json:"redirect_uris"`
	Scopes              json.RawMessage `json:"scopes"`
	RateLimitCapacity   json.RawMessage `json:"rate_limit_capacity"`
	RateLimitRefillRate json.RawMessage `json:"rate_limit_refill_rate"`
	IsActive            json.RawMessage `json:"is_active"`
	AllowedOrigins      json.RawMessage `json:"allowed_origins"`
	ClientIDURL         json.RawMessage `json:"client_id_url"`
	ClientType          json.RawMessage `json:"client_type"`
}

func isNull(raw json.RawMessage) bool { return string(raw) == "null" }

// set decodes a present, non-null field into dst and records its name in
// changed. It reports false for a null or mistyped value.
func set[T any](raw json.RawMessage, name string, dst *T, changed *[]string) bool {
	if raw == nil {
		return true
	}
	if isNull(raw) || json.Unmarshal(raw, dst) != nil {
		return false
	}
	*changed = append(*changed, name)
	return true
}

// setNullable is set for a field that JSON null clears to nil.
func setNullable[T any](raw json.RawMessage, name string, dst **T, changed *[]string) bool {
	if raw == nil {
		return true
	}
	*changed = append(*changed, name)
	if isNull(raw) {
		*dst = nil
		return true
	}
	var v T
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	*dst = &v
	return true
}

func (h handlers) update(w http.ResponseWriter, r *http.Request, p *admins.Principal) {
	var req updateRequest
	if !admin.Decode(w, r, &req) {
		return
	}
	if req.ClientIDURL != nil {
		respond.Error(w, http.StatusBadRequest, msgIDURLImmutable)
		return
	}
	c, ok := h.load(w, r)
	if !ok {
		return
	}
	if req.ClientType != nil {
		var typ string
		if json.Unmarshal(req.ClientType, &typ) != nil {
			respond.Error(w, http.StatusBadRequest, msgBadBody)
			return
		}
		if typ != c.Type {
			respond.Error(w, http.StatusBadRequest, msgTypeImmutable)
			return
		}
	}
	var changed []string
	ok = set(req.Name, "name", &c.Name, &changed) &&
		set(req.ClientURI, "client_uri", &c.ClientURI, &changed) &&
		set(req.RedirectURIs, "redirect_uris", &c.RedirectURIs, &changed) &&
		set(req.Scopes, "scopes", &c.Scopes, &changed) &&
		setNullable(req.RateLimitCapacity, "rate_limit_capacity", &c.RateLimitCapacity, &changed) &&
		setNullable(req.RateLimitRefillRate, "rate_limit_refill_rate", &c.RateLimitRefillRate, &changed) &&
		set(req.IsActive, "is_active", &c.IsActive, &changed) &&
		set(req.AllowedOrigins, "allowed_origins", &c.AllowedOrigins, &changed)
	if !ok {
		respond.Error(w, http.StatusBadRequest, msgBadBody)
		return
	}
	c.RedirectURIs, c.AllowedOrigins = nonNil(c.RedirectURIs), nonNil(c.AllowedOrigins)
	err := h.ClientManager.Update(r.Context(), c)
	switch {
	case clients.IsValidation(err):
		respond.Error(w, http.StatusBadRequest, err.Error())
		return
	case errors.Is(err, storage.ErrNotFound): // deleted meanwhile
		respond.Error(w, http.StatusNotFound, msgNotFound)
		return
	case err != nil:
		respond.Internal(w, r, h.Log, err)
		return
	}
	detail := map[string]any{"fields": nonNil(changed)}
	if slices.Contains(changed, "is_active") {
		detail["is_active"] = c.IsActive
	}
	h.Audit(r.Context(), p, eventClientUpdated, c.ID, detail)
	w.WriteHeader(http.StatusNoContent)
}

func (h handlers) delete(w http.ResponseWriter, r *http.Request, p *admins.Principal) {
	c, ok := h.load(w, r)
	if !ok {
		return
	}
	err := h.ClientManager.Delete(r.Context(), c.ID)
	if errors.Is(err, storage.ErrNotFound) { // deleted meanwhile
		respond.Error(w, http.StatusNotFound, msgNotFound)
		return
	}
	if err != nil {
		respond.Internal(w, r, h.Log, err)
		return
	}
	h.Audit(r.Context(), p, eventClientDeleted, c.ID, map[string]any{
		"name": c.Name, "client_id_url": c.ClientIDURL, "parent_client_id": optional(c.ParentID),
	})
	w.WriteHeader(http.StatusNoContent)
}
