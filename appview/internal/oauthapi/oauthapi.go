// Package oauthapi serves Lexview's public OAuth helper endpoints under
// /oauth/: the key sets of API clients that delegate their client
// authentication to Lexview, client assertions signed with those keys,
// and (later) DPoP key provisioning and device sessions.
package oauthapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/lexview/lexview/appview/internal/clientkeys"
	"github.com/lexview/lexview/appview/internal/clients"
	"github.com/lexview/lexview/appview/internal/respond"
	"github.com/lexview/lexview/appview/internal/sessions"
	"github.com/lexview/lexview/appview/internal/userauth"
	"github.com/lexview/lexview/oauth"
	"github.com/lexview/lexview/storage"
)

// Store is the persistence the handlers need.
type Store interface {
	storage.APIClientStore
	storage.OAuthStore
}

// Options configure a Handler.
type Options struct {
	Store Store
	// Clients identifies client keys (with caching) and holds their
	// rate-limit buckets.
	Clients *clients.Registry
	// Sealer opens the sealed private keys.
	Sealer *oauth.Sealer
	// PublicURL is the instance's public base URL.
	PublicURL string
	// Users checks DPoP authentication of device sessions.
	Users *userauth.Authenticator
	// Sessions provisions DPoP keys and manages device sessions.
	Sessions *sessions.Service
	// Keys publishes client key sets and signs client assertions.
	Keys   *clientkeys.Service
	Now    func() time.Time
	Logger *slog.Logger
}

// Handler serves the /oauth/* endpoints.
type Handler struct {
	store     Store
	clients   *clients.Registry
	sealer    *oauth.Sealer
	publicURL string
	users     *userauth.Authenticator
	sessions  *sessions.Service
	keys      *clientkeys.Service
	now       func() time.Time
	log       *slog.Logger
}

// New returns a Handler; unset Now and Logger default to time.Now and
// slog.Default().
func New(opts Options) *Handler {
	h := &Handler{store: opts.Store, clients: opts.Clients, sealer: opts.Sealer, publicURL: opts.PublicURL,
		users: opts.Users, sessions: opts.Sessions, keys: opts.Keys, now: opts.Now, log: opts.Logger}
	if h.now == nil {
		h.now = time.Now
	}
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
	msgNeedsClientKey = "requires an API client key"
	msgInvalidClient  = "Invalid client"
	msgNeedsDPoP      = "requires DPoP authentication"
	msgBadBody        = "invalid request body"
	msgBodyTooLarge   = "request body too large"
)

// maxBodySize bounds /oauth/* JSON bodies.
const maxBodySize = 64 << 10

// authenticate identifies the confidential API client of an /oauth/*
// request: X-Client-Key and X-Client-Secret, the secret's SHA-256 compared
// with the stored one in constant time. A known client's request takes a
// token from its rate-limit bucket before the secret is checked. On
// failure it has answered (401, 429 or 500) and returns false:
//
//   - no X-Client-Key: 401 `requires an API client key`;
//   - unknown or inactive key, missing or wrong secret: 401 `Invalid client`;
//   - a public client: 401 `requires DPoP authentication` (public clients
//     authenticate with an active DPoP-bound session, which endpoints
//     accepting them check before calling authenticate).
func (h *Handler) authenticate(w http.ResponseWriter, r *http.Request) (storage.APIClient, bool) {
	ctx := r.Context()
	key := r.Header.Get("X-Client-Key")
	if key == "" {
		respond.Error(w, http.StatusUnauthorized, msgNeedsClientKey)
		return storage.APIClient{}, false
	}
	id, err := h.clients.Identify(ctx, key, nil)
	if errors.Is(err, clients.ErrInvalidClient) {
		respond.Error(w, http.StatusUnauthorized, msgInvalidClient)
		return storage.APIClient{}, false
	}
	if err != nil {
		respond.Internal(w, r, h.log, err)
		return storage.APIClient{}, false
	}
	if ok, wait := h.clients.Allow(id); !ok {
		clients.RateLimited(w, wait)
		return storage.APIClient{}, false
	}
	// The registry caches identities; the row is read fresh for the secret.
	c, err := h.store.GetAPIClient(ctx, id.ID)
	if errors.Is(err, storage.ErrNotFound) || err == nil && !c.IsActive {
		respond.Error(w, http.StatusUnauthorized, msgInvalidClient)
		return storage.APIClient{}, false
	}
	if err != nil {
		respond.Internal(w, r, h.log, err)
		return storage.APIClient{}, false
	}
	if c.Type == storage.ClientPublic {
		respond.Error(w, http.StatusUnauthorized, msgNeedsDPoP)
		return storage.APIClient{}, false
	}
	if !secretMatches(r.Header.Get("X-Client-Secret"), c.SecretHash) {
		respond.Error(w, http.StatusUnauthorized, msgInvalidClient)
		return storage.APIClient{}, false
	}
	return c, true
}

// secretMatches compares the SHA-256 of a presented secret with the stored
// hex hash in constant time. An empty secret never matches.
func secretMatches(secret, storedHash string) bool {
	want, err := hex.DecodeString(storedHash)
	if secret == "" || err != nil || len(want) != sha256.Size {
		return false
	}
	sum := sha256.Sum256([]byte(secret))
	return subtle.ConstantTimeCompare(sum[:], want) == 1
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
