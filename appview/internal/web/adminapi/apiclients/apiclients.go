// Package apiclients serves the admin API client endpoints: create, list,
// get, update and delete the API clients that call XRPC, over the API
// client service (apiclients.Manager), so every change applies to the next
// XRPC request.
package apiclients

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/web/adminapi"
	"github.com/lexview/lexview/appview/internal/web/respond"
	"github.com/lexview/lexview/storage"
)

// Mount registers the API client endpoints.
func Mount(m *adminapi.Mux, svc *apiclients.Manager) {
	h := handlers{svc}
	m.HandleFunc("GET /admin/api-clients", h.list)
	m.HandleFunc("POST /admin/api-clients", h.create)
	m.HandleFunc("GET /admin/api-clients/{id}", h.get)
	m.HandleFunc("PUT /admin/api-clients/{id}", h.update)
	m.HandleFunc("DELETE /admin/api-clients/{id}", h.delete)
}

var (
	errBadBody        = fail.New(fail.Invalid, "invalid request body")
	errIDURLImmutable = fail.New(fail.Invalid, "client_id_url cannot be changed")
)

type handlers struct{ svc *apiclients.Manager }

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
		CreatedBy: c.CreatedBy, CreatedAt: adminapi.Timestamp(c.CreatedAt), UpdatedAt: adminapi.Timestamp(c.UpdatedAt),
		ParentClientID: optional(c.ParentID), OwnerDID: optional(c.OwnerDID),
	}
}

func (h handlers) list(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	all, err := h.svc.List(r.Context(), r.URL.Query().Get("parent_id"))
	if err != nil {
		return err
	}
	out := make([]view, len(all))
	for i, c := range all {
		out[i] = toView(c)
	}
	respond.JSON(w, http.StatusOK, out)
	return nil
}

func (h handlers) get(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	c, err := h.svc.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	respond.JSON(w, http.StatusOK, toView(c))
	return nil
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

func (h handlers) create(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	var req createRequest
	if err := adminapi.Read(w, r, &req); err != nil {
		return err
	}
	if req.Name == "" || req.ClientIDURL == "" || req.ClientURI == "" || req.RedirectURIs == nil {
		return errBadBody
	}
	c, secret, err := h.svc.Create(r.Context(), apiclients.NewClient{
		Name: req.Name, ClientIDURL: req.ClientIDURL, ClientURI: req.ClientURI, RedirectURIs: req.RedirectURIs,
		Scopes: req.Scopes, Type: req.ClientType, AllowedOrigins: req.AllowedOrigins,
		RateLimitCapacity: req.RateLimitCapacity, RateLimitRefillRate: req.RateLimitRefillRate, CreatedBy: p.DID(),
	})
	if err != nil {
		return err
	}
	respond.JSON(w, http.StatusCreated, createResponse{
		ID: c.ID, ClientKey: c.Key, ClientSecret: secret, Name: c.Name, ClientIDURL: c.ClientIDURL,
	})
	return nil
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

// value decodes a present field into *dst (a fresh value); a null or
// mistyped value is refused.
func value[T any](raw json.RawMessage, dst **T) error {
	if raw == nil {
		return nil
	}
	var v T
	if string(raw) == "null" || json.Unmarshal(raw, &v) != nil {
		return errBadBody
	}
	*dst = &v
	return nil
}

// nullable decodes a present field that JSON null clears.
func nullable[T any](raw json.RawMessage, dst *apiclients.Field[T]) error {
	if raw == nil {
		return nil
	}
	dst.Set = true
	if string(raw) == "null" {
		return nil
	}
	return value(raw, &dst.Value)
}

// patch parses the request into a Patch.
func (req updateRequest) patch() (apiclients.Patch, error) {
	var p apiclients.Patch
	if req.ClientIDURL != nil {
		return p, errIDURLImmutable
	}
	err := errors.Join(
		value(req.ClientType, &p.ClientType), value(req.Name, &p.Name), value(req.ClientURI, &p.ClientURI),
		value(req.RedirectURIs, &p.RedirectURIs), value(req.Scopes, &p.Scopes),
		nullable(req.RateLimitCapacity, &p.RateLimitCapacity), nullable(req.RateLimitRefillRate, &p.RateLimitRefillRate),
		value(req.IsActive, &p.IsActive), value(req.AllowedOrigins, &p.AllowedOrigins),
	)
	if err != nil {
		return p, errBadBody
	}
	return p, nil
}

func (h handlers) update(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	var req updateRequest
	if err := adminapi.Read(w, r, &req); err != nil {
		return err
	}
	patch, err := req.patch()
	if err != nil {
		return err
	}
	if _, err := h.svc.Update(r.Context(), p.DID(), r.PathValue("id"), patch); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h handlers) delete(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	if _, err := h.svc.Delete(r.Context(), p.DID(), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
