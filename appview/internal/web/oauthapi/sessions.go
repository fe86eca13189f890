package oauthapi

import (
	"net/http"
	"strings"
	"time"

	"github.com/lexview/lexview/appview/internal/service/devicesessions"
	"github.com/lexview/lexview/appview/internal/web/respond"
	"github.com/lexview/lexview/storage"
)

// caller authenticates the API client of a provisioning or session call
// (clients.Manager.AuthenticateApp): confidential clients with key and
// secret, public clients with key and an allowed Origin.
func (h *Handler) caller(w http.ResponseWriter, r *http.Request) (storage.APIClient, bool) {
	c, err := h.manager.AuthenticateApp(r.Context(), credentials(r))
	if err != nil {
		respond.Fail(w, r, h.log, err)
		return c, false
	}
	return c, true
}

// provision answers POST /oauth/dpop-keys: a fresh P-256 key for one
// device, and a single-use provision_id to register it with.
func (h *Handler) provision(w http.ResponseWriter, r *http.Request) {
	c, ok := h.caller(w, r)
	if !ok {
		return
	}
	var req struct {
		PKCEChallenge string `json:"pkce_challenge"`
	}
	if r.ContentLength != 0 && !decode(w, r, &req) {
		return
	}
	handle, jwk, err := h.sessions.Provision(r.Context(), c, req.PKCEChallenge)
	if err != nil {
		respond.Fail(w, r, h.log, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	respond.JSON(w, http.StatusOK, map[string]any{"provision_id": handle, "dpop_key": jwk})
}

// register answers POST /oauth/sessions: it consumes a provision and
// stores the device session its key will authenticate.
func (h *Handler) register(w http.ResponseWriter, r *http.Request) {
	c, ok := h.caller(w, r)
	if !ok {
		return
	}
	var req struct {
		ProvisionID  string `json:"provision_id"`
		PKCEVerifier string `json:"pkce_verifier"`
		DID          string `json:"did"`
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
		ExpiresAt    string `json:"expires_at"`
		Scopes       string `json:"scopes"`
		PDSURL       string `json:"pds_url"`
		Issuer       string `json:"issuer"`
	}
	if !decode(w, r, &req) {
		return
	}
	s, err := h.sessions.Register(r.Context(), c, devicesessions.Registration(req))
	if err != nil {
		respond.Fail(w, r, h.log, err)
		return
	}
	respond.JSON(w, http.StatusOK, map[string]any{"session_id": s.ID, "did": s.DID})
}

// sessionOwner authenticates a device-management call: confidential
// clients with key and secret (acting for every device), or any client
// with DPoP auth (acting for the proof's device only). It returns the
// client id and, for DPoP, the caller's session.
func (h *Handler) sessionOwner(w http.ResponseWriter, r *http.Request) (string, *storage.DeviceSession, bool) {
	if strings.HasPrefix(strings.ToLower(r.Header.Get("Authorization")), "dpop ") {
		id, err := h.manager.TakeToken(r.Context(), r.Header.Get("X-Client-Key"))
		if err != nil {
			respond.Fail(w, r, h.log, err)
			return "", nil, false
		}
		s, err := h.users.DPoPSession(r, id.ID)
		if err != nil {
			respond.Fail(w, r, h.log, err)
			return "", nil, false
		}
		if s.DID != r.PathValue("did") {
			respond.Error(w, http.StatusNotFound, "session not found")
			return "", nil, false
		}
		return id.ID, s, true
	}
	c, ok := h.authenticate(w, r)
	return c.ID, nil, ok
}

// revokeUser answers DELETE /oauth/sessions/{did}.
func (h *Handler) revokeUser(w http.ResponseWriter, r *http.Request) {
	clientID, own, ok := h.sessionOwner(w, r)
	if !ok {
		return
	}
	if _, err := h.sessions.RevokeAccount(r.Context(), clientID, r.PathValue("did"), own); err != nil {
		respond.Fail(w, r, h.log, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// devices answers GET /oauth/sessions/{did}/devices.
func (h *Handler) devices(w http.ResponseWriter, r *http.Request) {
	clientID, _, ok := h.sessionOwner(w, r)
	if !ok {
		return
	}
	list, err := h.sessions.Devices(r.Context(), clientID, r.PathValue("did"))
	if err != nil {
		respond.Fail(w, r, h.log, err)
		return
	}
	out := make([]map[string]any, len(list))
	for i, s := range list {
		out[i] = map[string]any{
			"id": s.ID, "dpop_key_id": s.DPoPKeyID, "scopes": strings.Fields(s.Scopes),
			"created_at": timestamp(s.CreatedAt), "updated_at": timestamp(s.UpdatedAt),
		}
	}
	respond.JSON(w, http.StatusOK, out)
}

// revokeDevice answers DELETE /oauth/sessions/{did}/devices/{session_id}.
func (h *Handler) revokeDevice(w http.ResponseWriter, r *http.Request) {
	clientID, own, ok := h.sessionOwner(w, r)
	if !ok {
		return
	}
	err := h.sessions.RevokeDevice(r.Context(), clientID, r.PathValue("did"), r.PathValue("session_id"), own)
	if err != nil {
		respond.Fail(w, r, h.log, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
