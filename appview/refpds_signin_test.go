package appview_test

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/oauth"
)

// This file drives the atproto OAuth authorization-code flow against the
// reference PDS's own authorization server (@atproto/oauth-provider) over
// plain HTTP, doing what a browser and the authorization page's script do:
//
//  1. discovery: the PDS's protected-resource metadata names the issuer,
//     whose metadata gives the PAR, authorization and token endpoints;
//  2. PAR with PKCE (S256) and a DPoP proof (answering the nonce challenge);
//  3. GET /oauth/authorize as a top-level navigation: sets the device
//     cookies (dev-id, ses-id) and the CSRF cookie (csrf-token);
//  4. POST /@atproto/oauth-provider/~api/sign-in and .../consent as the
//     page's same-origin fetches: sec-fetch-* headers, Origin, a Referer
//     on /oauth/authorize?…request_uri=…, the cookies and the CSRF token
//     in x-csrf-token; consent is authenticated with the ephemeral token
//     sign-in returns;
//  5. GET /oauth/authorize/redirect (the URL consent returns) as a
//     same-origin navigation: 303 to redirect_uri?code=…&iss=…&state=…;
//  6. POST /oauth/token (authorization_code, PKCE verifier, DPoP proof).
//
// The request shapes come from @atproto/oauth-provider 0.15
// (src/router/create-api-middleware.ts, create-authorization-page-
// middleware.ts, assets/csrf.ts, device/device-manager.ts).

// apiPrefix is the oauth-provider's API_ENDPOINT_PREFIX.
const apiPrefix = "/@atproto/oauth-provider/~api"

// asMetadata is the part of the authorization-server metadata the flow
// uses.
type asMetadata struct {
	Issuer                string `json:"issuer"`
	AuthorizationEndpoint string `json:"authorization_endpoint"`
	TokenEndpoint         string `json:"token_endpoint"`
	PAREndpoint           string `json:"pushed_authorization_request_endpoint"`
}

// tokenSet is a token endpoint answer.
type tokenSet struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	RefreshToken string `json:"refresh_token"`
	ExpiresIn    int64  `json:"expires_in"`
	Scope        string `json:"scope"`
	Sub          string `json:"sub"`
}

// headlessSignIn is one run of the flow for a loopback ("localhost")
// client, with the DPoP key of signer.
type headlessSignIn struct {
	t           testing.TB
	signer      *oauth.Signer
	clientID    string
	redirectURI string
	scope       string

	http    *http.Client // follows no redirects
	nonce   string       // the authorization server's latest DPoP nonce
	cookies map[string]string
	meta    asMetadata
}

// userAgent is sent on every request: the device manager rotates the
// session cookie when the user agent changes.
const userAgent = "Mozilla/5.0 (X11; Linux x86_64) lexview-headless-signin"

// loopbackClientID is the atproto loopback client id for redirectURI and
// scope: a client with no published metadata, which the reference
// authorization server accepts.
func loopbackClientID(redirectURI, scope string) string {
	esc := func(s string) string { return strings.ReplaceAll(url.QueryEscape(s), "+", "%20") }
	return "http://localhost?redirect_uri=" + esc(redirectURI) + "&scope=" + esc(scope)
}

func newHeadlessSignIn(t testing.TB, signer *oauth.Signer, redirectURI, scope string) *headlessSignIn {
	return &headlessSignIn{
		t: t, signer: signer, clientID: loopbackClientID(redirectURI, scope), redirectURI: redirectURI, scope: scope,
		http: &http.Client{
			Timeout:       30 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		cookies: map[string]string{},
	}
}

// run signs username in at the PDS pdsURL and returns the tokens. Steps
// that fail fail the test, naming the step.
func (s *headlessSignIn) run(pdsURL, username, password string) tokenSet {
	s.t.Helper()
	s.discover(pdsURL)

	verifier := randomString(32)
	state := randomString(16)
	par := s.dpopForm("PAR", s.meta.PAREndpoint, url.Values{
		"client_id": {s.clientID}, "response_type": {"code"}, "redirect_uri": {s.redirectURI}, "scope": {s.scope},
		"code_challenge": {oauth.PKCEChallenge(verifier)}, "code_challenge_method": {"S256"}, "state": {state},
		"login_hint": {username},
	}, http.StatusCreated)
	requestURI, _ := par["request_uri"].(string)
	if requestURI == "" {
		s.t.Fatalf("PAR: no request_uri in %v", par)
	}

	authorizeURL := s.meta.AuthorizationEndpoint + "?" + url.Values{"client_id": {s.clientID}, "request_uri": {requestURI}}.Encode()
	loc := s.authorize(authorizeURL, username, password)
	if !strings.HasPrefix(loc.String(), s.redirectURI+"?") {
		s.t.Fatalf("authorization redirect: Location %q is not on %s", loc, s.redirectURI)
	}
	q := loc.Query()
	if q.Get("error") != "" || q.Get("code") == "" || q.Get("state") != state || q.Get("iss") != s.meta.Issuer {
		s.t.Fatalf("authorization redirect: unexpected parameters %v", q)
	}

	tok := s.dpopForm("token request", s.meta.TokenEndpoint, url.Values{
		"grant_type": {"authorization_code"}, "code": {q.Get("code")}, "redirect_uri": {s.redirectURI},
		"client_id": {s.clientID}, "code_verifier": {verifier},
	}, http.StatusOK)
	raw, _ := json.Marshal(tok)
	var ts tokenSet
	if err := json.Unmarshal(raw, &ts); err != nil || ts.AccessToken == "" || ts.RefreshToken == "" {
		s.t.Fatalf("token request: unusable answer (%v)", keys(tok))
	}
	return ts
}

// authorize does what the browser and the authorization page do at
// authorizeURL (the authorization endpoint with client_id and
// request_uri): it signs username in, consents, and returns where the
// authorization server redirects to (the client's redirect URI with
// code, state and iss). discover must have run.
func (s *headlessSignIn) authorize(authorizeURL, username, password string) *url.URL {
	s.t.Helper()
	resp, body := s.do("authorize page", http.MethodGet, authorizeURL, nil, map[string]string{
		"Accept": "text/html", "Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document",
	})
	if resp.StatusCode != http.StatusOK {
		s.t.Fatalf("authorize page: %d %.300s", resp.StatusCode, body)
	}
	for _, c := range []string{"dev-id", "ses-id", "csrf-token"} {
		if s.cookies[c] == "" {
			s.t.Fatalf("authorize page: cookie %s not set (cookies: %v)", c, keys(s.cookies))
		}
	}

	var signIn struct {
		Account struct {
			Sub string `json:"sub"`
		} `json:"account"`
		EphemeralToken  string `json:"ephemeralToken"`
		ConsentRequired bool   `json:"consentRequired"`
		Error           string `json:"error"`
		Description     string `json:"error_description"`
	}
	s.api("sign-in", authorizeURL, "", map[string]any{"locale": "en", "username": username, "password": password}, &signIn)
	switch {
	case signIn.Error == "second_authentication_factor_required":
		s.t.Skipf("sign-in: the PDS asks for a second factor (an emailed code), which needs a person: %s", signIn.Description)
	case signIn.Account.Sub == "":
		s.t.Fatalf("sign-in: no account in the answer (error %q: %s)", signIn.Error, signIn.Description)
	}

	var consent struct {
		URL         string `json:"url"`
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	s.api("consent", authorizeURL, signIn.EphemeralToken, map[string]any{"sub": signIn.Account.Sub}, &consent)
	if consent.URL == "" {
		s.t.Fatalf("consent: no redirect URL (error %q: %s)", consent.Error, consent.Description)
	}

	resp, body = s.do("authorization redirect", http.MethodGet, consent.URL, nil, map[string]string{
		"Accept": "text/html", "Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document",
		"Referer": authorizeURL,
	})
	loc, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusSeeOther || err != nil {
		s.t.Fatalf("authorization redirect: %d Location %q %.300s", resp.StatusCode, resp.Header.Get("Location"), body)
	}
	return loc
}

// discover reads the PDS's protected-resource metadata and its issuer's
// authorization-server metadata.
func (s *headlessSignIn) discover(pdsURL string) {
	s.t.Helper()
	var rs struct {
		AuthorizationServers []string `json:"authorization_servers"`
	}
	s.getJSON("resource metadata", strings.TrimRight(pdsURL, "/")+"/.well-known/oauth-protected-resource", &rs)
	if len(rs.AuthorizationServers) == 0 {
		s.t.Fatal("resource metadata: no authorization server")
	}
	s.getJSON("authorization server metadata", rs.AuthorizationServers[0]+"/.well-known/oauth-authorization-server", &s.meta)
	if s.meta.Issuer != rs.AuthorizationServers[0] || s.meta.PAREndpoint == "" || s.meta.TokenEndpoint == "" ||
		s.meta.AuthorizationEndpoint == "" {
		s.t.Fatalf("authorization server metadata: %+v", s.meta)
	}
}

func (s *headlessSignIn) getJSON(step, u string, out any) {
	s.t.Helper()
	resp, body := s.do(step, http.MethodGet, u, nil, map[string]string{"Accept": "application/json"})
	if resp.StatusCode != http.StatusOK {
		s.t.Fatalf("%s: GET %s: %d %.300s", step, u, resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, out); err != nil {
		s.t.Fatalf("%s: %v in %.300s", step, err, body)
	}
}

// dpopForm posts a form to an authorization-server endpoint with a DPoP
// proof of the provisioned key, answering one use_dpop_nonce challenge,
// and returns the JSON answer, which must have status want.
func (s *headlessSignIn) dpopForm(step, endpoint string, form url.Values, want int) map[string]any {
	s.t.Helper()
	for attempt := 0; ; attempt++ {
		proof, err := s.signer.NewProof(http.MethodPost, endpoint, "", s.nonce)
		if err != nil {
			s.t.Fatalf("%s: %v", step, err)
		}
		resp, body := s.do(step, http.MethodPost, endpoint, strings.NewReader(form.Encode()), map[string]string{
			"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json", "DPoP": proof,
		})
		if n := resp.Header.Get("DPoP-Nonce"); n != "" {
			s.nonce = n
		}
		var out map[string]any
		_ = json.Unmarshal(body, &out)
		if resp.StatusCode == http.StatusBadRequest && out["error"] == "use_dpop_nonce" && attempt == 0 {
			continue
		}
		if resp.StatusCode != want {
			s.t.Fatalf("%s: POST %s: %d %.500s", step, endpoint, resp.StatusCode, body)
		}
		return out
	}
}

// api calls an endpoint of the authorization page's API as the page's
// script does (a same-origin fetch from /oauth/authorize).
func (s *headlessSignIn) api(step, referer, bearer string, in, out any) {
	s.t.Helper()
	raw, _ := json.Marshal(in)
	origin := s.meta.Issuer
	if u, err := url.Parse(s.meta.Issuer); err == nil {
		origin = u.Scheme + "://" + u.Host
	}
	h := map[string]string{
		"Content-Type": "application/json", "Accept": "application/json", "Origin": origin, "Referer": referer,
		"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "same-origin", "Sec-Fetch-Dest": "empty",
		"X-CSRF-Token": s.cookies["csrf-token"],
	}
	if bearer != "" {
		h["Authorization"] = "Bearer " + bearer
	}
	resp, body := s.do(step, http.MethodPost, origin+apiPrefix+"/"+step, strings.NewReader(string(raw)), h)
	if err := json.Unmarshal(body, out); err != nil {
		s.t.Fatalf("%s: %d, not JSON: %.300s", step, resp.StatusCode, body)
	}
	if resp.StatusCode != http.StatusOK {
		s.t.Logf("%s: status %d: %.300s", step, resp.StatusCode, body)
	}
}

// do sends one request with the cookies collected so far and collects
// the ones it sets.
func (s *headlessSignIn) do(step, method, u string, body io.Reader, headers map[string]string) (*http.Response, []byte) {
	s.t.Helper()
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		s.t.Fatalf("%s: %v", step, err)
	}
	req.Header.Set("User-Agent", userAgent)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	if len(s.cookies) > 0 {
		var parts []string
		for k, v := range s.cookies {
			parts = append(parts, k+"="+v)
		}
		req.Header.Set("Cookie", strings.Join(parts, "; "))
	}
	resp, err := s.http.Do(req)
	if err != nil {
		s.t.Fatalf("%s: %s %s: %v", step, method, u, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		s.t.Fatalf("%s: reading the answer: %v", step, err)
	}
	// The cookies are marked Secure; browsers still send them to
	// http://localhost (a secure context), so they are kept whatever the
	// scheme (net/http/cookiejar would drop them).
	for _, c := range resp.Cookies() {
		if c.Value == "" || c.MaxAge < 0 {
			delete(s.cookies, c.Name)
		} else {
			s.cookies[c.Name] = c.Value
		}
	}
	return resp, raw
}

// randomString returns n random bytes in base64url.
func randomString(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// jwtClaims decodes a JWT's claims without verifying it (for checks on
// tokens the test obtained itself).
func jwtClaims(token string) (map[string]any, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, fmt.Errorf("not a JWT")
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(raw, &m)
}
