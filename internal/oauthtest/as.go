package oauthtest

import (
	"net/http"

	"github.com/lexview/lexview/oauth"
)

// serveASMetadata serves the authorization server's metadata (RFC 8414).
func (s *Server) serveASMetadata(w http.ResponseWriter, r *http.Request) {
	s.metadataRequests.Add(1)
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                           s.URL,
		"authorization_endpoint":                           s.URL + "/oauth/authorize",
		"token_endpoint":                                   s.URL + "/oauth/token",
		"pushed_authorization_request_endpoint":            s.URL + "/oauth/par",
		"require_pushed_authorization_requests":            true,
		"response_types_supported":                         []string{"code"},
		"grant_types_supported":                            []string{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported":                 []string{"S256"},
		"scopes_supported":                                 []string{"atproto", "transition:generic"},
		"token_endpoint_auth_methods_supported":            []string{"none", "private_key_jwt"},
		"token_endpoint_auth_signing_alg_values_supported": []string{"ES256"},
		"dpop_signing_alg_values_supported":                []string{"ES256"},
		"client_id_metadata_document_supported":            true,
	})
}

// serveRSMetadata serves the PDS's protected-resource metadata (RFC 9728).
func (s *Server) serveRSMetadata(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"resource":              s.URL,
		"authorization_servers": []string{s.URL},
		"scopes_supported":      []string{},
		"bearer_methods_supported": []string{
			"header",
		},
	})
}

// oauthError writes an OAuth error response (RFC 6749 section 5.2).
func oauthError(w http.ResponseWriter, status int, code, description string) {
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, status, map[string]string{"error": code, "error_description": description})
}

// serveToken is the token endpoint, for refresh_token grants: DPoP-bound
// (the proof's key must be the one the refresh token is bound to),
// demanding the current nonce, rotating refresh tokens and refusing a
// refresh token used before.
func (s *Server) serveToken(w http.ResponseWriter, r *http.Request) {
	s.tokenRequests.Add(1)
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		oauthError(w, http.StatusMethodNotAllowed, "invalid_request", "POST required")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "malformed form body")
		return
	}
	proofs := r.Header.Values("DPoP")
	if len(proofs) != 1 {
		s.proofRejections.Add(1)
		oauthError(w, http.StatusBadRequest, "invalid_dpop_proof", "exactly one DPoP proof is required")
		return
	}
	p, err := s.verifier.Verify(r.Context(), proofs[0], r.Method, s.URL+r.URL.EscapedPath(), "")
	if err != nil {
		s.proofRejections.Add(1)
		oauthError(w, http.StatusBadRequest, "invalid_dpop_proof", err.Error())
		return
	}
	if p.ATH != "" {
		s.proofRejections.Add(1)
		oauthError(w, http.StatusBadRequest, "invalid_dpop_proof", "ath is not allowed at the token endpoint")
		return
	}
	ok, current := s.checkNonce(p.Nonce)
	w.Header().Set("DPoP-Nonce", current)
	if !ok {
		s.nonceChallenges.Add(1)
		oauthError(w, http.StatusBadRequest, "use_dpop_nonce", "Authorization server requires nonce in DPoP proof")
		return
	}
	if s.opts.ClientID != "" && r.PostForm.Get("client_id") != s.opts.ClientID {
		oauthError(w, http.StatusBadRequest, "invalid_client", "unknown client_id")
		return
	}
	if !s.checkClientAssertion(w, r) {
		return
	}
	if gt := r.PostForm.Get("grant_type"); gt != "refresh_token" {
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type", "only refresh_token grants are served")
		return
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	rt, found := s.refresh[r.PostForm.Get("refresh_token")]
	switch {
	case !found:
		oauthError(w, http.StatusBadRequest, "invalid_grant", "unknown refresh token")
		return
	case rt.used:
		oauthError(w, http.StatusBadRequest, "invalid_grant", "refresh token replayed")
		return
	case rt.jkt != p.JKT:
		oauthError(w, http.StatusBadRequest, "invalid_grant", "refresh token is bound to another DPoP key")
		return
	}
	rt.used = true
	access, refresh := s.issueLocked(rt.did, rt.jkt, rt.scope)
	s.refreshes.Add(1)
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token":  access,
		"token_type":    "DPoP",
		"refresh_token": refresh,
		"expires_in":    int64(s.opts.TokenLifetime.Seconds()),
		"scope":         rt.scope,
		"sub":           rt.did,
	})
}

// checkClientAssertion enforces RequireClientAssertion; on failure it has
// written the response.
func (s *Server) checkClientAssertion(w http.ResponseWriter, r *http.Request) bool {
	if !s.opts.RequireClientAssertion {
		return true
	}
	typ, assertion := r.PostForm.Get("client_assertion_type"), r.PostForm.Get("client_assertion")
	if typ != oauth.ClientAssertionType || assertion == "" {
		oauthError(w, http.StatusBadRequest, "invalid_client", "client authentication required")
		return false
	}
	if s.opts.VerifyClientAssertion != nil {
		if err := s.opts.VerifyClientAssertion(assertion); err != nil {
			oauthError(w, http.StatusBadRequest, "invalid_client", "client assertion refused: "+err.Error())
			return false
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.assertions[assertion] {
		oauthError(w, http.StatusBadRequest, "invalid_client", "client assertion replayed")
		return false
	}
	s.assertions[assertion] = true
	return true
}
