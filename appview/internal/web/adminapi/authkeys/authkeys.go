// Package authkeys serves the admin endpoints of client authentication
// keys over the clientkeys service: create, read and list, rotate, revoke
// one or all, and the confidential-readiness recheck.
package authkeys

import (
	"net/http"

	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/service/clientkeys"
	"github.com/lexview/lexview/appview/internal/web/adminapi"
	"github.com/lexview/lexview/appview/internal/web/respond"
	"github.com/lexview/lexview/storage"
)

// Mount registers the client authentication key endpoints.
func Mount(m *adminapi.Mux, svc *clientkeys.Service) {
	h := handlers{svc}
	m.HandleFunc("POST /admin/api-clients/{id}/auth-key", h.create)
	m.HandleFunc("GET /admin/api-clients/{id}/auth-key", h.current)
	m.HandleFunc("GET /admin/api-clients/{id}/auth-keys", h.list)
	m.HandleFunc("POST /admin/api-clients/{id}/auth-key/rotate", h.rotate)
	m.HandleFunc("POST /admin/api-clients/{id}/auth-key/recheck", h.recheck)
	m.HandleFunc("DELETE /admin/api-clients/{id}/auth-key/{kid}", h.revoke)
	m.HandleFunc("DELETE /admin/api-clients/{id}/auth-keys", h.revokeAll)
}

type handlers struct{ svc *clientkeys.Service }

// keyView is one key in responses; the private key is never part of it.
type keyView struct {
	KID          string `json:"kid"`
	Status       string `json:"status"`
	CreatedAt    string `json:"created_at"`
	SessionCount int64  `json:"session_count"`
}

func toView(k storage.ClientAuthKey) keyView {
	return keyView{KID: k.KID, Status: k.Status, CreatedAt: adminapi.Timestamp(k.CreatedAt), SessionCount: k.SessionCount}
}

func (h handlers) create(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	id := r.PathValue("id")
	k, err := h.svc.Create(r.Context(), p.DID(), id)
	if err != nil {
		return err
	}
	respond.JSON(w, http.StatusOK, struct {
		KID     string `json:"kid"`
		JWKSURI string `json:"jwks_uri"`
	}{k.KID, h.svc.JWKSURI(id)})
	return nil
}

func (h handlers) current(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	id := r.PathValue("id")
	k, err := h.svc.Current(r.Context(), id)
	if err != nil {
		return err
	}
	respond.JSON(w, http.StatusOK, struct {
		keyView
		JWKSURI string `json:"jwks_uri"`
	}{toView(k), h.svc.JWKSURI(id)})
	return nil
}

func (h handlers) list(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	id := r.PathValue("id")
	keys, err := h.svc.List(r.Context(), id)
	if err != nil {
		return err
	}
	out := make([]keyView, len(keys))
	for i, k := range keys {
		out[i] = toView(k)
	}
	respond.JSON(w, http.StatusOK, struct {
		Keys    []keyView `json:"keys"`
		JWKSURI string    `json:"jwks_uri"`
	}{out, h.svc.JWKSURI(id)})
	return nil
}

func (h handlers) rotate(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	id := r.PathValue("id")
	next, retired, err := h.svc.Rotate(r.Context(), p.DID(), id)
	if err != nil {
		return err
	}
	respond.JSON(w, http.StatusOK, struct {
		KID        string `json:"kid"`
		RetiredKID string `json:"retired_kid"`
		JWKSURI    string `json:"jwks_uri"`
	}{next.KID, retired.KID, h.svc.JWKSURI(id)})
	return nil
}

// recheck answers 200 whether or not the client is ready;
// confidential_ready and the reason say which.
func (h handlers) recheck(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	out, err := h.svc.Recheck(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	respond.JSON(w, http.StatusOK, out)
	return nil
}

func (h handlers) revoke(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	kid := r.PathValue("kid")
	sessions, err := h.svc.Revoke(r.Context(), p.DID(), r.PathValue("id"), kid)
	if err != nil {
		return err
	}
	respond.JSON(w, http.StatusOK, struct {
		KID               string `json:"kid"`
		SessionsDestroyed int64  `json:"sessions_destroyed"`
	}{kid, sessions})
	return nil
}

func (h handlers) revokeAll(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	keys, sessions, err := h.svc.RevokeAll(r.Context(), p.DID(), r.PathValue("id"))
	if err != nil {
		return err
	}
	respond.JSON(w, http.StatusOK, struct {
		Revoked           int64 `json:"revoked"`
		SessionsDestroyed int64 `json:"sessions_destroyed"`
	}{keys, sessions})
	return nil
}
