// Package oauthapi serves Lexview's public OAuth helper endpoints under
// /oauth/: the key sets of API clients that delegate their client
// authentication to Lexview, client assertions signed with those keys,
// and (later) DPoP key provisioning and device sessions.
package oauthapi

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/service/clientkeys"
	"github.com/lexview/lexview/appview/internal/service/devicesessions"
	"github.com/lexview/lexview/appview/internal/web/respond"
	"github.com/lexview/lexview/appview/internal/web/userauth"
	"github.com/lexview/lexview/storage"
)

// Options configure a Handler.
type Options struct {
	// Clients authenticates API clients and takes their rate-limit tokens.
	Clients *apiclients.Manager
	// Users checks DPoP authentication of device sessions.
	Users *userauth.Authenticator
	// Sessions provisions DPoP keys and manages device sessions.
	Sessions *devicesessions.Service
	// Keys publishes client key sets and signs client assertions.
	Keys   *clientkeys.Service
	Logger *slog.Logger
}

// Handler serves the /oauth/* endpoints.
type Handler struct {
	manager  *apiclients.Manager
	users    *userauth.Authenticator
	sessions *devicesessions.Service
	keys     *clientkeys.Service
	log      *slog.Logger
}

// New returns a Handler; an unset Logger defaults to slog.Default().
func New(opts Options) *Handler {
	h := &Handler{manager: opts.Clients, users: opts.Users, sessions: opts.Sessions, keys: opts.Keys, log: opts.Logger}
	if h.log == nil {
		h.log = slog.Default()
	}
	return h
}

// Mount registers the endpoints on mux.
func (h *Handler) Mount(mux *http.ServeMux) {
	mux.HandleFunc("GET /oauth/clients/{id}/jwks.json", h.jwks)
	mux.HandleFunc("POST /oauth/client-assertion", h.clientAssertion)
	mux.HandleFunc("POST /oauth/dpop-keys", h.provision)
	mux.HandleFunc("POST /oauth/sessions", h.register)
	mux.HandleFunc("DELETE /oauth/sessions/{did}", h.revokeUser)
	mux.HandleFunc("GET /oauth/sessions/{did}/devices", h.devices)
	mux.HandleFunc("DELETE /oauth/sessions/{did}/devices/{session_id}", h.revokeDevice)
}

// Error strings.
const (
	msgBadBody      = "invalid request body"
	msgBodyTooLarge = "request body too large"
)

// maxBodySize bounds /oauth/* JSON bodies.
const maxBodySize = 64 << 10

// credentials reads the client credentials a request presents.
func credentials(r *http.Request) apiclients.Credentials {
	return apiclients.Credentials{Key: r.Header.Get("X-Client-Key"), Secret: r.Header.Get("X-Client-Secret"), Origin: r.Header.Get("Origin")}
}

// authenticate identifies the confidential API client of an /oauth/*
// request by key and secret (apiclients.Manager.AuthenticateSecret). On
// failure it has answered (401, 429 or 500) and returns false.
func (h *Handler) authenticate(w http.ResponseWriter, r *http.Request) (storage.APIClient, bool) {
	c, err := h.manager.AuthenticateSecret(r.Context(), credentials(r))
	if err != nil {
		respond.Fail(w, r, h.log, err)
		return c, false
	}
	return c, true
}

// decode reads a JSON body into dst, answering 400 `invalid request body`
// (413 when oversized) and returning false on failure.
func decode(w http.ResponseWriter, r *http.Request, dst any) bool {
	err := respond.DecodeJSON(w, r, maxBodySize, dst)
	switch {
	case err == nil:
		return true
	case errors.Is(err, respond.ErrBodyTooLarge):
		respond.Error(w, http.StatusRequestEntityTooLarge, msgBodyTooLarge)
	default:
		respond.Error(w, http.StatusBadRequest, msgBadBody)
	}
	return false
}
