package oauthclient

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bluesky-social/indigo/atproto/identity"
	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/oauth"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

const (
	testDID    = "did:plc:alicealicealicealice00"
	testOrigin = "https://a.example"
)

// fakeKey is the instance OAuth key of the tests.
type fakeKey struct{ priv *ecdsa.PrivateKey }

func (k fakeKey) Ensure(context.Context) (storage.ClientAuthKey, error) {
	return storage.ClientAuthKey{KID: "kid-1", Status: storage.AuthKeyCurrent}, nil
}

// fakeAS is a PDS that is its own authorization server: it checks what a
// confidential client must send (DPoP with the nonce, PKCE, a client
// assertion signed by the instance key for the domain's client_id).
type fakeAS struct {
	t    *testing.T
	srv  *httptest.Server
	pub  *ecdsa.PublicKey
	mu   sync.Mutex
	pars map[string]url.Values // request_uri → PAR form
	code map[string]url.Values // code → PAR form
}

func newFakeAS(t *testing.T, pub *ecdsa.PublicKey) *fakeAS {
	as := &fakeAS{t: t, pub: pub, pars: map[string]url.Values{}, code: map[string]url.Values{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-protected-resource", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"resource": as.srv.URL, "authorization_servers": []string{as.srv.URL}})
	})
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{
			"issuer": as.srv.URL, "authorization_endpoint": as.srv.URL + "/authorize", "token_endpoint": as.srv.URL + "/token",
			"pushed_authorization_request_endpoint": as.srv.URL + "/par", "response_types_supported": []string{"code"},
			"grant_types_supported": []string{"authorization_code", "refresh_token"}, "code_challenge_methods_supported": []string{"S256"},
			"token_endpoint_auth_methods_supported": []string{"none", "private_key_jwt"}, "scopes_supported": []string{"atproto"},
			"dpop_signing_alg_values_supported": []string{"ES256"}, "require_pushed_authorization_requests": true,
			"authorization_response_iss_parameter_supported": true, "client_id_metadata_document_supported": true,
		})
	})
	mux.HandleFunc("POST /par", func(w http.ResponseWriter, r *http.Request) {
		if !as.dpop(w, r) {
			return
		}
		form := as.checkClient(r)
		if form.Get("code_challenge_method") != "S256" || form.Get("code_challenge") == "" || form.Get("state") == "" ||
			form.Get("login_hint") != testDID {
			as.t.Errorf("PAR form: %v", form)
		}
		uri := "urn:ietf:params:oauth:request_uri:" + rand.Text()
		as.mu.Lock()
		as.pars[uri] = form
		as.mu.Unlock()
		writeJSON(w, 201, map[string]any{"request_uri": uri, "expires_in": 300})
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		if !as.dpop(w, r) {
			return
		}
		form := as.checkClient(r)
		as.mu.Lock()
		par, ok := as.code[form.Get("code")]
		delete(as.code, form.Get("code"))
		as.mu.Unlock()
		if !ok {
			writeJSON(w, 400, map[string]any{"error": "invalid_grant"})
			return
		}
		sum := sha256.Sum256([]byte(form.Get("code_verifier")))
		if base64.RawURLEncoding.EncodeToString(sum[:]) != par.Get("code_challenge") || form.Get("redirect_uri") != par.Get("redirect_uri") {
			as.t.Errorf("token request: PKCE or redirect_uri mismatch: %v", form)
		}
		writeJSON(w, 200, map[string]any{
			"access_token": "secret-access-token", "refresh_token": "secret-refresh-token", "token_type": "DPoP",
			"scope": "atproto", "sub": testDID, "expires_in": 3600,
		})
	})
	as.srv = httptest.NewServer(mux)
	t.Cleanup(as.srv.Close)
	return as
}

// approve plays the user: it approves the request at authorizeURL and
// returns the callback parameters.
func (as *fakeAS) approve(authorizeURL string) url.Values {
	u, _ := url.Parse(authorizeURL)
	as.mu.Lock()
	defer as.mu.Unlock()
	par, ok := as.pars[u.Query().Get("request_uri")]
	if !ok || u.Query().Get("client_id") != par.Get("client_id") {
		as.t.Fatalf("authorize URL %s matches no pushed request", authorizeURL)
	}
	code := rand.Text()
	as.code[code] = par
	return url.Values{"code": {code}, "state": {par.Get("state")}, "iss": {as.srv.URL}}
}

// dpop demands a DPoP proof and, once, a nonce.
func (as *fakeAS) dpop(w http.ResponseWriter, r *http.Request) bool {
	proof := r.Header.Get("DPoP")
	if proof == "" {
		as.t.Errorf("%s without DPoP", r.URL.Path)
	}
	claims := jwtPart(as.t, proof, 1)
	w.Header().Set("DPoP-Nonce", "nonce-1")
	if claims["nonce"] != "nonce-1" {
		writeJSON(w, 400, map[string]any{"error": "use_dpop_nonce"})
		return false
	}
	return true
}

// checkClient checks the confidential client's identity and assertion.
func (as *fakeAS) checkClient(r *http.Request) url.Values {
	if err := r.ParseForm(); err != nil {
		as.t.Fatal(err)
	}
	f := r.PostForm
	if f.Get("client_id") != testOrigin+"/oauth-client-metadata.json" || f.Get("redirect_uri") != testOrigin+"/oauth/callback" {
		as.t.Errorf("%s: client_id %q redirect_uri %q", r.URL.Path, f.Get("client_id"), f.Get("redirect_uri"))
	}
	if f.Get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" {
		as.t.Errorf("%s: client_assertion_type %q", r.URL.Path, f.Get("client_assertion_type"))
	}
	jwt := f.Get("client_assertion")
	head, claims := jwtPart(as.t, jwt, 0), jwtPart(as.t, jwt, 1)
	if head["alg"] != "ES256" || head["kid"] != "kid-1" || claims["iss"] != f.Get("client_id") || claims["sub"] != f.Get("client_id") ||
		claims["aud"] != as.srv.URL && !contains(claims["aud"], as.srv.URL) {
		as.t.Errorf("%s: client assertion header %v claims %v", r.URL.Path, head, claims)
	}
	parts := strings.Split(jwt, ".")
	sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if len(sig) != 64 || !ecdsa.Verify(as.pub, sum[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		as.t.Errorf("%s: the client assertion is not signed by the instance key", r.URL.Path)
	}
	return f
}

func contains(v any, s string) bool {
	list, _ := v.([]any)
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func jwtPart(t *testing.T, jwt string, i int) map[string]any {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", jwt)
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[i])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func newTestClient(t *testing.T, store storage.Store) (*Client, *fakeAS, storage.Store) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	as := newFakeAS(t, &priv.PublicKey)
	dir := identity.NewMockDirectory()
	dir.Insert(identity.Identity{
		DID: syntax.DID(testDID), Handle: syntax.Handle("alice.test"),
		Services: map[string]identity.ServiceEndpoint{"atproto_pds": {Type: "AtprotoPersonalDataServer", URL: as.srv.URL}},
	})
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	sealer, err := oauth.NewSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	c := New(Options{
		Store: store, Sealer: sealer, Key: fakeKey{priv},
		PrivateKey: func(storage.ClientAuthKey) (*ecdsa.PrivateKey, error) { return priv, nil },
		HTTPClient: as.srv.Client(), Directory: dir, AllowHTTP: true,
	})
	return c, as, store
}

// TestConfidentialFlow: on an https domain the instance is a confidential
// client of that domain (client_id, redirect URI, assertions signed with
// the instance key); the request and the session are sealed at rest; the
// callback is single use and only on the flow's domain.
func TestConfidentialFlow(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) { testConfidentialFlow(t, open(t)) })
}

func testConfidentialFlow(t *testing.T, s storage.Store) {
	ctx := context.Background()
	c, as, store := newTestClient(t, s)
	start := func() url.Values {
		to, err := c.Authorize(ctx, Request{DomainOrigin: testOrigin, Identifier: testDID, Purpose: "test", Subject: "grant-7"})
		if err != nil {
			t.Fatalf("authorize: %v", err)
		}
		if !strings.HasPrefix(to, as.srv.URL+"/authorize?") {
			t.Fatalf("authorization URL %s", to)
		}
		return as.approve(to)
	}

	params := start()
	if _, err := c.Callback(ctx, "b.example", params); fail.KindOf(err) != fail.Invalid || err != errOtherDomain {
		t.Fatalf("callback on another domain: %v", err)
	}
	if _, err := c.Callback(ctx, "a.example", params); err != errBadState {
		t.Fatalf("the state of a misdirected callback is spent: %v", err)
	}

	params = start()
	res, err := c.Callback(ctx, "A.example:443", params)
	if err != nil {
		t.Fatalf("callback: %v", err)
	}
	if res.Purpose != "test" || res.Subject != "grant-7" || res.DID != testDID || res.DomainOrigin != testOrigin || res.SessionID == "" {
		t.Fatalf("result: %+v", res)
	}
	if _, err := c.Callback(ctx, "a.example", params); err != errBadState {
		t.Fatalf("replayed callback: %v", err)
	}
	row, err := store.GetOAuthClientSession(ctx, testDID, res.SessionID)
	if err != nil || row.Purpose != "test" || row.ClientID != testOrigin+"/oauth-client-metadata.json" {
		t.Fatalf("stored session: %+v %v", row, err)
	}
	for _, secret := range []string{"secret-access-token", "secret-refresh-token", "dpop_privatekey"} {
		if strings.Contains(row.SealedData, secret) {
			t.Fatalf("the stored session shows %q in clear", secret)
		}
	}
	sess, err := c.Session(ctx, syntax.DID(testDID), res.SessionID)
	if err != nil || sess.Data.AccessToken != "secret-access-token" || sess.Data.RefreshToken != "secret-refresh-token" ||
		sess.DPoPPrivateKey == nil {
		t.Fatalf("resumed session: %v", err)
	}
	if err := c.EndSession(ctx, syntax.DID(testDID), res.SessionID); err != nil {
		t.Fatalf("end session: %v", err)
	}
	if _, err := store.GetOAuthClientSession(ctx, testDID, res.SessionID); err == nil {
		t.Fatal("the ended session is still stored")
	}

	if _, err := c.Callback(ctx, "a.example", url.Values{"state": {"forged"}, "code": {"x"}, "iss": {as.srv.URL}}); err != errBadState {
		t.Fatalf("forged state: %v", err)
	}
	if _, err := c.Callback(ctx, "a.example", url.Values{"code": {"x"}}); err != errNoState {
		t.Fatalf("no state: %v", err)
	}
}

// TestPendingRequestSealedAndExpiring: a pending request is stored
// sealed, and refused once expired.
func TestPendingRequestSealedAndExpiring(t *testing.T) {
	ctx := context.Background()
	c, as, store := newTestClient(t, storagetest.SQLite(t))
	now := time.Now().Truncate(time.Second)
	c.opt.Now = func() time.Time { return now }
	to, err := c.Authorize(ctx, Request{DomainOrigin: testOrigin, Identifier: testDID, Purpose: "test"})
	if err != nil {
		t.Fatal(err)
	}
	params := as.approve(to)
	row, err := store.TakeOAuthAuthRequest(ctx, params.Get("state"), now)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(row.SealedData, "pkce_verifier") || strings.Contains(row.SealedData, "dpop_privatekey") || row.AccountDID != testDID ||
		!row.ExpiresAt.Equal(now.Add(DefaultRequestTTL)) || row.DomainOrigin != testOrigin {
		t.Fatalf("stored request: %+v", row)
	}
	if err := store.CreateOAuthAuthRequest(ctx, row); err != nil {
		t.Fatal(err)
	}
	now = now.Add(DefaultRequestTTL)
	if _, err := c.Callback(ctx, "a.example", params); err != errBadState {
		t.Fatalf("expired state: %v", err)
	}
}

// TestLoopbackConfig: a loopback domain is an atproto development client.
func TestLoopbackConfig(t *testing.T) {
	c := New(Options{})
	for origin, callback := range map[string]string{
		"http://127.0.0.1:3000": "http://127.0.0.1:3000/oauth/callback",
		"http://localhost:3000": "http://127.0.0.1:3000/oauth/callback",
		"http://[::1]:8080":     "http://[::1]:8080/oauth/callback",
		"http://app.localhost":  "http://127.0.0.1/oauth/callback",
	} {
		cfg, err := c.config(context.Background(), origin, "", []string{"atproto"})
		if err != nil {
			t.Fatal(err)
		}
		want := "http://localhost?" + url.Values{"redirect_uri": {callback}, "scope": {"atproto"}}.Encode()
		if cfg.CallbackURL != callback || cfg.ClientID != want || cfg.IsConfidential() {
			t.Errorf("%s: callback %q client_id %q confidential %v", origin, cfg.CallbackURL, cfg.ClientID, cfg.IsConfidential())
		}
	}
}

// TestOff: without a sealer no flow starts.
func TestOff(t *testing.T) {
	c := New(Options{})
	if _, err := c.Authorize(context.Background(), Request{DomainOrigin: testOrigin, Identifier: testDID}); err != errOff {
		t.Fatalf("authorize without a sealer: %v", err)
	}
}
