package oauthapi

import (
	"net/http"
	"strings"

	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/web/respond"
	"github.com/lexview/lexview/oauth"
	"github.com/lexview/lexview/storage"
)

// jwksMaxAge is how long key sets may be cached, in seconds.
const jwksMaxAge = "60"

// jwks serves a client's published key set: its current and retiring
// keys, never revoked ones. An id without keys, known or not, gets an
// empty set rather than 404, so the answer says nothing about which ids
// exist.
func (h *Handler) jwks(w http.ResponseWriter, r *http.Request) {
	set, err := h.keys.KeySet(r.Context(), r.PathValue("id"))
	if err != nil {
		respond.Internal(w, r, h.log, err)
		return
	}
	w.Header().Set("Cache-Control", "public, max-age="+jwksMaxAge)
	respond.JSON(w, http.StatusOK, set)
}

type assertionRequest struct {
	Issuer string `json:"issuer"`
	KID    string `json:"kid"`
}

type assertionResponse struct {
	ClientAssertion     string `json:"client_assertion"`
	ClientAssertionType string `json:"client_assertion_type"`
	ExpiresIn           int64  `json:"expires_in"`
	KID                 string `json:"kid"`
}

// clientAssertion signs a JWT-bearer client assertion (RFC 7523) for the
// caller's client toward the authorization server named by issuer: iss
// and sub are the client's client_id_url, aud the issuer, and it expires
// after 60 seconds. Each assertion has a fresh random jti; that an
// assertion is used once is enforced by the authorization server, which
// rejects a replayed jti, so a caller needs a new assertion for every
// token-endpoint request (the pushed authorization request and the code
// exchange each need their own).
//
// Without kid the current key signs (an initial authorization); a session
// refresh passes the kid returned when it was established, which may be
// a retiring key. Unknown and revoked kids are refused with 400.
//
// Confidential clients authenticate with key and secret; public clients
// with their key and an active DPoP-bound session whose proof covers this
// request (see assertionClient).
func (h *Handler) clientAssertion(w http.ResponseWriter, r *http.Request) {
	c, ok := h.assertionClient(w, r)
	if !ok {
		return
	}
	var req assertionRequest
	if !decode(w, r, &req) {
		return
	}
	if req.Issuer == "" {
		respond.Error(w, http.StatusBadRequest, msgBadBody)
		return
	}
	a, err := h.keys.Sign(r.Context(), c, req.Issuer, req.KID)
	if err != nil {
		respond.Fail(w, r, h.log, err)
		return
	}
	h.log.DebugContext(r.Context(), "client assertion issued", "client_id", c.ID, "kid", a.KID, "issuer", req.Issuer)
	w.Header().Set("Cache-Control", "no-store")
	respond.JSON(w, http.StatusOK, assertionResponse{
		ClientAssertion:     a.JWT,
		ClientAssertionType: oauth.ClientAssertionType,
		ExpiresIn:           a.ExpiresAt.Unix() - a.IssuedAt.Unix(),
		KID:                 a.KID,
	})
}

// assertionClient authenticates the caller of POST /oauth/client-assertion.
// Without `Authorization: DPoP` it is authenticate: key and secret of a
// confidential client (a public client gets 401 `requires DPoP
// authentication`). With it, the client is identified by X-Client-Key and
// a token taken from its bucket; a public client must then hold an active
// device session proven by the DPoP proof of this very request (method and
// URL), and a confidential client must still send its secret. On failure
// it has answered and returns false.
func (h *Handler) assertionClient(w http.ResponseWriter, r *http.Request) (storage.APIClient, bool) {
	scheme, _, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "DPoP") {
		return h.authenticate(w, r)
	}
	c, err := h.manager.AuthenticateKey(r.Context(), credentials(r))
	if err != nil {
		respond.Fail(w, r, h.log, err)
		return storage.APIClient{}, false
	}
	if c.Type != storage.ClientPublic {
		return c, true
	}
	if h.users == nil {
		respond.Fail(w, r, h.log, apiclients.ErrNeedsDPoP)
		return storage.APIClient{}, false
	}
	if _, err := h.users.DPoPSession(r, c.ID); err != nil {
		respond.Fail(w, r, h.log, err)
		return storage.APIClient{}, false
	}
	return c, true
}
