// Package authkeys serves the admin endpoints of client authentication
// keys: the ES256 keys with which Lexview signs client assertions for an
// API client, so that it can act as the app's confidential OAuth client
// toward its users' authorization servers.
//
// A client has at most one current key. Rotating makes the current key
// retiring (still published, still signing refreshes of the sessions it
// established) and a new key current; revoking a retiring key removes it
// from the key set at once and destroys its sessions; the current key
// cannot be revoked (rotate first). Retiring keys without sessions are
// removed by Sweep. Private keys are sealed at rest and never returned.
//
// The key set is published at JWKSURI: PUBLIC_URL +
// /oauth/clients/<id>/jwks.json, where <id> is the API client's id (the
// UUID of the admin API, not its client key or client_id_url).
package authkeys

import (
	"errors"
	"net/http"
	"slices"

	"github.com/lexview/lexview/appview/internal/admin"
	"github.com/lexview/lexview/appview/internal/admins"
	"github.com/lexview/lexview/appview/internal/respond"
	"github.com/lexview/lexview/storage"
)

// Mount registers the client authentication key endpoints.
func Mount(m *admin.Mux, d admin.Deps) {
	h := handlers{d}
	m.Handle("POST /admin/api-clients/{id}/auth-key", h.create)
	m.Handle("GET /admin/api-clients/{id}/auth-key", h.current)
	m.Handle("GET /admin/api-clients/{id}/auth-keys", h.list)
	m.Handle("POST /admin/api-clients/{id}/auth-key/rotate", h.rotate)
	m.Handle("POST /admin/api-clients/{id}/auth-key/recheck", h.recheck)
	m.Handle("DELETE /admin/api-clients/{id}/auth-key/{kid}", h.revoke)
	m.Handle("DELETE /admin/api-clients/{id}/auth-keys", h.revokeAll)
}

// Error strings.
const (
	msgClientNotFound = "API client not found"
	msgKeyNotFound    = "authentication key not found"
	msgNoKey          = "the client has no authentication key"
	msgNoKeyHeld      = "the client holds no authentication key"
	msgRevokeCurrent  = "cannot revoke the current key; rotate first"
	msgNoSealer       = "token encryption is not configured"
)

type handlers struct{ admin.Deps }

// keyView is one key in responses; the private key is never part of it.
type keyView struct {
	KID          string `json:"kid"`
	Status       string `json:"status"`
	CreatedAt    string `json:"created_at"`
	SessionCount int64  `json:"session_count"`
}

func toView(k storage.ClientAuthKey) keyView {
	return keyView{KID: k.KID, Status: k.Status, CreatedAt: admin.Timestamp(k.CreatedAt), SessionCount: k.SessionCount}
}

// loadClient reads the client named by the path, answering 404 or 500 and
// returning false when it cannot.
func (h handlers) loadClient(w http.ResponseWriter, r *http.Request) (storage.APIClient, bool) {
	c, err := h.Store.GetAPIClient(r.Context(), r.PathValue("id"))
	if errors.Is(err, storage.ErrNotFound) {
		respond.Error(w, http.StatusNotFound, msgClientNotFound)
		return c, false
	}
	if err != nil {
		respond.Internal(w, r, h.Log, err)
		return c, false
	}
	return c, true
}

func (h handlers) jwksURI(clientID string) string { return JWKSURI(h.PublicURL, clientID) }

// newKey generates a key for c, answering 503 or 500 on failure.
func (h handlers) newKey(w http.ResponseWriter, r *http.Request, c storage.APIClient) (storage.ClientAuthKey, bool) {
	if h.Sealer == nil {
		respond.Error(w, http.StatusServiceUnavailable, msgNoSealer)
		return storage.ClientAuthKey{}, false
	}
	k, err := NewKey(h.Sealer, c.ID, h.Now())
	if err != nil {
		respond.Internal(w, r, h.Log, err)
		return k, false
	}
	return k, true
}

type createResponse struct {
	KID     string `json:"kid"`
	JWKSURI string `json:"jwks_uri"`
}

// create gives the client a current key unless it has one: idempotent,
// it returns the existing current key then.
func (h handlers) create(w http.ResponseWriter, r *http.Request, p *admins.Principal) {
	c, ok := h.loadClient(w, r)
	if !ok {
		return
	}
	if cur, err := h.Store.GetCurrentClientAuthKey(r.Context(), c.ID); err == nil {
		respond.JSON(w, http.StatusOK, createResponse{KID: cur.KID, JWKSURI: h.jwksURI(c.ID)})
		return
	} else if !errors.Is(err, storage.ErrNotFound) {
		respond.Internal(w, r, h.Log, err)
		return
	}
	k, ok := h.newKey(w, r, c)
	if !ok {
		return
	}
	stored, created, err := h.Store.CreateClientAuthKey(r.Context(), k)
	if err != nil {
		respond.Internal(w, r, h.Log, err)
		return
	}
	if created {
		h.Audit(r.Context(), p, EventCreated, c.ID, map[string]any{"kid": stored.KID})
	}
	respond.JSON(w, http.StatusOK, createResponse{KID: stored.KID, JWKSURI: h.jwksURI(c.ID)})
}

type currentResponse struct {
	keyView
	JWKSURI string `json:"jwks_uri"`
}

func (h handlers) current(w http.ResponseWriter, r *http.Request, _ *admins.Principal) {
	c, ok := h.loadClient(w, r)
	if !ok {
		return
	}
	k, err := h.Store.GetCurrentClientAuthKey(r.Context(), c.ID)
	if h.Failed(w, r, err, msgKeyNotFound) {
		return
	}
	respond.JSON(w, http.StatusOK, currentResponse{keyView: toView(k), JWKSURI: h.jwksURI(c.ID)})
}

type listResponse struct {
	Keys    []keyView `json:"keys"`
	JWKSURI string    `json:"jwks_uri"`
}

// list answers every key of the client, current first, then retiring,
// then revoked, newest first within a status.
func (h handlers) list(w http.ResponseWriter, r *http.Request, _ *admins.Principal) {
	c, ok := h.loadClient(w, r)
	if !ok {
		return
	}
	keys, err := h.Store.ListClientAuthKeys(r.Context(), c.ID)
	if err != nil {
		respond.Internal(w, r, h.Log, err)
		return
	}
	slices.SortStableFunc(keys, func(a, b storage.ClientAuthKey) int {
		return statusRank(a.Status) - statusRank(b.Status)
	})
	out := make([]keyView, len(keys))
	for i, k := range keys {
		out[i] = toView(k)
	}
	respond.JSON(w, http.StatusOK, listResponse{Keys: out, JWKSURI: h.jwksURI(c.ID)})
}

type rotateResponse struct {
	KID        string `json:"kid"`
	RetiredKID string `json:"retired_kid"`
	JWKSURI    string `json:"jwks_uri"`
}

// rotate makes the current key retiring and a new key current.
func (h handlers) rotate(w http.ResponseWriter, r *http.Request, p *admins.Principal) {
	c, ok := h.loadClient(w, r)
	if !ok {
		return
	}
	next, ok := h.newKey(w, r, c)
	if !ok {
		return
	}
	retired, err := h.Store.RotateClientAuthKey(r.Context(), c.ID, next, h.Now())
	if errors.Is(err, storage.ErrNotFound) {
		respond.Error(w, http.StatusBadRequest, msgNoKey)
		return
	}
	if err != nil {
		respond.Internal(w, r, h.Log, err)
		return
	}
	h.Audit(r.Context(), p, EventRotated, c.ID, map[string]any{
		"kid": next.KID, "retired_kid": retired.KID, "retiring_sessions": retired.SessionCount,
	})
	respond.JSON(w, http.StatusOK, rotateResponse{KID: next.KID, RetiredKID: retired.KID, JWKSURI: h.jwksURI(c.ID)})
}

type revokeResponse struct {
	KID               string `json:"kid"`
	SessionsDestroyed int64  `json:"sessions_destroyed"`
}

// revoke revokes a retiring key and destroys its sessions. Revoking a key
// already revoked is a no-op answered the same way.
func (h handlers) revoke(w http.ResponseWriter, r *http.Request, p *admins.Principal) {
	c, ok := h.loadClient(w, r)
	if !ok {
		return
	}
	kid := r.PathValue("kid")
	k, err := h.Store.GetClientAuthKey(r.Context(), c.ID, kid)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		respond.Error(w, http.StatusNotFound, msgKeyNotFound)
		return
	case err != nil:
		respond.Internal(w, r, h.Log, err)
		return
	case k.Status == storage.AuthKeyCurrent:
		respond.Error(w, http.StatusBadRequest, msgRevokeCurrent)
		return
	case k.Status == storage.AuthKeyRevoked:
		respond.JSON(w, http.StatusOK, revokeResponse{KID: kid})
		return
	}
	sessions, err := h.Store.RevokeClientAuthKey(r.Context(), c.ID, kid, h.Now())
	switch {
	case errors.Is(err, storage.ErrNotFound): // swept meanwhile
		respond.Error(w, http.StatusNotFound, msgKeyNotFound)
		return
	case errors.Is(err, storage.ErrCurrentKey):
		respond.Error(w, http.StatusBadRequest, msgRevokeCurrent)
		return
	case err != nil:
		respond.Internal(w, r, h.Log, err)
		return
	}
	h.Audit(r.Context(), p, EventRevoked, c.ID, map[string]any{"kid": kid, "sessions_destroyed": sessions})
	respond.JSON(w, http.StatusOK, revokeResponse{KID: kid, SessionsDestroyed: sessions})
}

type revokeAllResponse struct {
	Revoked           int64 `json:"revoked"`
	SessionsDestroyed int64 `json:"sessions_destroyed"`
}

// revokeAll revokes every key of the client, emptying its key set, and
// destroys every session pinned to one of them. A client that holds no
// current or retiring key (none yet, or only revoked ones) gets 400.
func (h handlers) revokeAll(w http.ResponseWriter, r *http.Request, p *admins.Principal) {
	c, ok := h.loadClient(w, r)
	if !ok {
		return
	}
	keys, sessions, err := h.Store.RevokeAllClientAuthKeys(r.Context(), c.ID, h.Now())
	if errors.Is(err, storage.ErrNotFound) {
		respond.Error(w, http.StatusBadRequest, msgNoKeyHeld)
		return
	}
	if err != nil {
		respond.Internal(w, r, h.Log, err)
		return
	}
	h.Audit(r.Context(), p, EventRevokedAll, c.ID, map[string]any{"revoked": keys, "sessions_destroyed": sessions})
	respond.JSON(w, http.StatusOK, revokeAllResponse{Revoked: keys, SessionsDestroyed: sessions})
}
