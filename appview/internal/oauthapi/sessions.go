package oauthapi

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/clients"
	"github.com/lexview/lexview/appview/internal/eventlog"
	"github.com/lexview/lexview/appview/internal/respond"
	"github.com/lexview/lexview/appview/internal/userauth"
	"github.com/lexview/lexview/oauth"
	"github.com/lexview/lexview/storage"
)

// ProvisionPrefix starts every provision_id.
const ProvisionPrefix = "hvp_"

// provisionLifetime is how long a provisioned key waits for its session.
const provisionLifetime = 10 * time.Minute

// provisionPurpose seals a provisioned key until a session takes it.
func provisionPurpose(id string) string { return "provision:" + id + ":dpop_key" }

func hashHandle(handle string) string {
	sum := sha256.Sum256([]byte(handle))
	return hex.EncodeToString(sum[:])
}

// caller authenticates the API client of a provisioning or session call:
// confidential clients with key and secret, public clients with key and an
// Origin among their allowed origins.
func (h *Handler) caller(w http.ResponseWriter, r *http.Request) (storage.APIClient, bool) {
	key := r.Header.Get("X-Client-Key")
	if key == "" {
		respond.Error(w, http.StatusUnauthorized, msgNeedsClientKey)
		return storage.APIClient{}, false
	}
	c, err := h.store.GetAPIClientByKey(r.Context(), key)
	if errors.Is(err, storage.ErrNotFound) || err == nil && !c.IsActive {
		respond.Error(w, http.StatusUnauthorized, msgInvalidClient)
		return storage.APIClient{}, false
	}
	if err != nil {
		respond.Internal(w, r, h.log, err)
		return storage.APIClient{}, false
	}
	if c.Type != storage.ClientPublic {
		return h.authenticate(w, r)
	}
	if !h.rateLimit(w, r, key) {
		return storage.APIClient{}, false
	}
	origin := r.Header.Get("Origin")
	if origin == "" || !slices.ContainsFunc(c.AllowedOrigins, func(o string) bool { return strings.EqualFold(strings.TrimRight(o, "/"), origin) }) {
		respond.Error(w, http.StatusUnauthorized, "Origin is not allowed for this client")
		return storage.APIClient{}, false
	}
	return c, true
}

// rateLimit takes a token from the client's bucket, answering 429 when empty.
func (h *Handler) rateLimit(w http.ResponseWriter, r *http.Request, key string) bool {
	id, err := h.clients.Identify(r.Context(), key, nil)
	if err != nil {
		respond.Error(w, http.StatusUnauthorized, msgInvalidClient)
		return false
	}
	if ok, wait := h.clients.Allow(id); !ok {
		clients.RateLimited(w, wait)
		return false
	}
	return true
}

type provisionRequest struct {
	PKCEChallenge string `json:"pkce_challenge"`
}

// provision answers POST /oauth/dpop-keys: a fresh P-256 key for one
// device, and a single-use provision_id to register it with.
func (h *Handler) provision(w http.ResponseWriter, r *http.Request) {
	c, ok := h.caller(w, r)
	if !ok {
		return
	}
	var req provisionRequest
	if r.ContentLength != 0 && !decode(w, r, &req) {
		return
	}
	if c.Type == storage.ClientPublic && !oauth.ValidPKCEChallenge(req.PKCEChallenge) {
		respond.Error(w, http.StatusBadRequest, "public clients must send an S256 pkce_challenge")
		return
	}
	key, err := oauth.GenerateKey()
	if err != nil {
		respond.Internal(w, r, h.log, err)
		return
	}
	jwk, err := oauth.NewPrivateJWK(key)
	if err != nil {
		respond.Internal(w, r, h.log, err)
		return
	}
	jkt, err := oauth.JWKThumbprint(&key.PublicKey)
	if err != nil {
		respond.Internal(w, r, h.log, err)
		return
	}
	raw, err := oauth.MarshalPrivateKey(key)
	if err != nil {
		respond.Internal(w, r, h.log, err)
		return
	}
	id := storage.NewID()
	sealed, err := h.sealer.Seal(provisionPurpose(id), raw)
	if err != nil {
		respond.Internal(w, r, h.log, err)
		return
	}
	handle := ProvisionPrefix + randomToken()
	now := h.now()
	p := storage.DPoPProvision{ID: id, HandleHash: hashHandle(handle), ClientID: c.ID, SealedKey: sealed, JKT: jkt,
		CreatedAt: now, ExpiresAt: now.Add(provisionLifetime)}
	if c.Type == storage.ClientPublic {
		p.PKCEChallenge = req.PKCEChallenge
	}
	if err := h.store.CreateDPoPProvision(r.Context(), p); err != nil {
		respond.Internal(w, r, h.log, err)
		return
	}
	h.record(r, "oauth.dpop_key_provisioned", c.ID, map[string]any{"dpop_key_id": id, "client_type": c.Type})
	w.Header().Set("Cache-Control", "no-store")
	respond.JSON(w, http.StatusOK, map[string]any{"provision_id": handle, "dpop_key": jwk})
}

type sessionRequest struct {
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

// validate checks a registration against the client; it returns the
// parsed expiry.
func (req sessionRequest) validate(c storage.APIClient) (time.Time, error) {
	if req.ProvisionID == "" || req.DID == "" || req.AccessToken == "" || req.RefreshToken == "" ||
		req.ExpiresAt == "" || req.Scopes == "" || req.PDSURL == "" || req.Issuer == "" {
		return time.Time{}, errors.New(msgBadBody)
	}
	if _, err := syntax.ParseDID(req.DID); err != nil {
		return time.Time{}, errors.New("did is not a valid DID")
	}
	expires, err := time.Parse(time.RFC3339, req.ExpiresAt)
	if err != nil {
		return time.Time{}, errors.New("expires_at must be an RFC 3339 timestamp")
	}
	scopes := strings.Fields(req.Scopes)
	if !slices.Contains(scopes, "atproto") {
		return time.Time{}, errors.New("scopes must include atproto")
	}
	allowed := strings.Fields(c.Scopes)
	for _, s := range scopes {
		if !slices.Contains(allowed, s) {
			return time.Time{}, errors.New("scope " + s + " is not granted to this client")
		}
	}
	for name, u := range map[string]string{"pds_url": req.PDSURL, "issuer": req.Issuer} {
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" {
			return time.Time{}, errors.New(name + " must be an http(s) URL")
		}
	}
	return expires, nil
}

// register answers POST /oauth/sessions: it consumes a provision and
// stores the device session its key will authenticate.
func (h *Handler) register(w http.ResponseWriter, r *http.Request) {
	c, ok := h.caller(w, r)
	if !ok {
		return
	}
	var req sessionRequest
	if !decode(w, r, &req) {
		return
	}
	expires, err := req.validate(c)
	if err != nil {
		respond.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	ctx := r.Context()
	p, err := h.store.ConsumeDPoPProvision(ctx, c.ID, hashHandle(req.ProvisionID), h.now())
	if errors.Is(err, storage.ErrNotFound) {
		respond.Error(w, http.StatusBadRequest, "unknown, used or expired provision_id")
		return
	}
	if err != nil {
		respond.Internal(w, r, h.log, err)
		return
	}
	if p.PKCEChallenge != "" && oauth.VerifyPKCE(req.PKCEVerifier, p.PKCEChallenge) != nil {
		respond.Error(w, http.StatusBadRequest, "pkce_verifier does not match the pkce_challenge")
		return
	}
	s, err := h.newSession(r, c, p, req, expires)
	if err != nil {
		respond.Internal(w, r, h.log, err)
		return
	}
	h.record(r, "oauth.session_created", req.DID, map[string]any{"client_id": c.ID, "session_id": s.ID, "scopes": req.Scopes})
	respond.JSON(w, http.StatusOK, map[string]any{"session_id": s.ID, "did": s.DID})
}

// newSession re-seals the provisioned key and the tokens for a new session.
func (h *Handler) newSession(r *http.Request, c storage.APIClient, p storage.DPoPProvision, req sessionRequest,
	expires time.Time) (storage.DeviceSession, error) {
	key, err := h.sealer.Open(provisionPurpose(p.ID), p.SealedKey)
	if err != nil {
		return storage.DeviceSession{}, err
	}
	now := h.now()
	s := storage.DeviceSession{ID: storage.NewID(), ClientID: c.ID, DID: req.DID, DPoPKeyID: p.ID, JKT: p.JKT,
		ExpiresAt: expires, Scopes: strings.Join(strings.Fields(req.Scopes), " "), PDSURL: strings.TrimRight(req.PDSURL, "/"),
		Issuer: strings.TrimRight(req.Issuer, "/"), CreatedAt: now, UpdatedAt: now,
		AppTokenHash: userauth.TokenHash(req.AccessToken), AppExpiresAt: expires}
	if k, err := h.store.GetCurrentClientAuthKey(r.Context(), c.ID); err == nil {
		s.AuthKID = k.KID
	}
	for _, f := range []struct {
		dst     *string
		purpose string
		value   []byte
	}{
		{&s.SealedDPoPKey, userauth.DPoPKeyPurpose(s.ID), key},
		{&s.SealedAccessToken, userauth.AccessTokenPurpose(s.ID), []byte(req.AccessToken)},
		{&s.SealedRefreshToken, userauth.RefreshTokenPurpose(s.ID), []byte(req.RefreshToken)},
	} {
		if *f.dst, err = h.sealer.Seal(f.purpose, f.value); err != nil {
			return storage.DeviceSession{}, err
		}
	}
	return s, h.store.CreateDeviceSession(r.Context(), s)
}

// sessionOwner authenticates a device-management call: confidential
// clients with key and secret (acting for every device), or any client
// with DPoP auth (acting for the proof's device only). It returns the
// client id and, for DPoP, the caller's session.
func (h *Handler) sessionOwner(w http.ResponseWriter, r *http.Request) (string, *storage.DeviceSession, bool) {
	if strings.HasPrefix(strings.ToLower(r.Header.Get("Authorization")), "dpop ") {
		key := r.Header.Get("X-Client-Key")
		if key == "" {
			respond.Error(w, http.StatusUnauthorized, msgNeedsClientKey)
			return "", nil, false
		}
		id, err := h.clients.Identify(r.Context(), key, nil)
		if err != nil {
			respond.Error(w, http.StatusUnauthorized, msgInvalidClient)
			return "", nil, false
		}
		if !h.rateLimit(w, r, key) {
			return "", nil, false
		}
		s, err := h.users.DPoPSession(r, id.ID)
		if err != nil {
			writeAuthError(w, r, h, err)
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

func writeAuthError(w http.ResponseWriter, r *http.Request, h *Handler, err error) {
	var ae *userauth.Error
	if errors.As(err, &ae) {
		respond.Error(w, ae.Status, ae.Msg)
		return
	}
	respond.Internal(w, r, h.log, err)
}

// revokeUser answers DELETE /oauth/sessions/{did}.
func (h *Handler) revokeUser(w http.ResponseWriter, r *http.Request) {
	clientID, own, ok := h.sessionOwner(w, r)
	if !ok {
		return
	}
	did := r.PathValue("did")
	var n int64
	var err error
	if own != nil {
		err, n = h.store.DeleteDeviceSession(r.Context(), clientID, did, own.ID), 1
	} else {
		n, err = h.store.DeleteDeviceSessions(r.Context(), clientID, did)
	}
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		respond.Internal(w, r, h.log, err)
		return
	}
	h.record(r, "oauth.session_deleted", did, map[string]any{"client_id": clientID, "sessions": n})
	w.WriteHeader(http.StatusNoContent)
}

// devices answers GET /oauth/sessions/{did}/devices.
func (h *Handler) devices(w http.ResponseWriter, r *http.Request) {
	clientID, _, ok := h.sessionOwner(w, r)
	if !ok {
		return
	}
	list, err := h.store.ListDeviceSessions(r.Context(), clientID, r.PathValue("did"))
	if err != nil {
		respond.Internal(w, r, h.log, err)
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
	did, id := r.PathValue("did"), r.PathValue("session_id")
	if own != nil && own.ID != id {
		respond.Error(w, http.StatusNotFound, "session not found")
		return
	}
	err := h.store.DeleteDeviceSession(r.Context(), clientID, did, id)
	if errors.Is(err, storage.ErrNotFound) {
		respond.Error(w, http.StatusNotFound, "session not found")
		return
	}
	if err != nil {
		respond.Internal(w, r, h.log, err)
		return
	}
	h.record(r, "oauth.session_deleted", did, map[string]any{"client_id": clientID, "session_id": id})
	w.WriteHeader(http.StatusNoContent)
}

func (h *Handler) record(r *http.Request, eventType, subject string, detail map[string]any) {
	if h.events != nil {
		h.events.Record(r.Context(), eventlog.Entry{Type: eventType, Subject: subject, Detail: detail})
	}
}

func timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
