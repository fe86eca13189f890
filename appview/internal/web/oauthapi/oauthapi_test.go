package oauthapi_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/oauth"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

const issuer = "https://bsky.social"

type fixture struct {
	env    *testenv.Env
	su     *testenv.Admin
	client storage.APIClient
	secret string
}

func setup(t *testing.T, open func(testing.TB) storage.Store) *fixture {
	t.Helper()
	env := testenv.New(t, open(t), appview.Config{})
	su := env.Bootstrap(t)
	c, secret := env.NewClient(t, apiclients.NewClient{})
	return &fixture{env: env, su: su, client: c, secret: secret}
}

// admin calls a key endpoint of the fixture's client and returns the body.
func (f *fixture) admin(t *testing.T, method, suffix string) map[string]any {
	t.Helper()
	r := f.su.Do(t, method, "/admin/api-clients/"+f.client.ID+suffix, nil)
	if r.Status != 200 {
		t.Fatalf("%s %s: %d %s", method, suffix, r.Status, r.Raw)
	}
	return r.Object(t)
}

// assertion asks for a client assertion with the fixture's credentials.
func (f *fixture) assertion(t *testing.T, body any) testenv.Response {
	t.Helper()
	return f.env.Do(t, "POST", "/oauth/client-assertion", body, "X-Client-Key", f.client.Key, "X-Client-Secret", f.secret)
}

// jwks fetches the client's published key set.
func (f *fixture) jwks(t *testing.T) oauth.JWKS {
	t.Helper()
	r := f.env.Do(t, "GET", "/oauth/clients/"+f.client.ID+"/jwks.json", nil)
	if r.Status != 200 {
		t.Fatalf("jwks: %d %s", r.Status, r.Raw)
	}
	var set oauth.JWKS
	r.JSON(t, &set)
	return set
}

func expectError(t *testing.T, r testenv.Response, status int, msg string) {
	t.Helper()
	if r.Status != status || r.Error(t) != msg {
		t.Fatalf("got %d %s, want %d %q", r.Status, r.Raw, status, msg)
	}
}

// TestJWKS checks the shape of the published key set.
func TestJWKS(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		f := setup(t, open)
		for _, id := range []string{f.client.ID, storage.NewID(), "not-a-client", "%00", strings.Repeat("a", 100)} {
			r := f.env.Do(t, "GET", "/oauth/clients/"+id+"/jwks.json", nil)
			if r.Status != 200 || string(r.Raw) != `{"keys":[]}` {
				t.Fatalf("id %q without keys: %d %s", id, r.Status, r.Raw)
			}
		}
		kid := f.admin(t, "POST", "/auth-key")["kid"].(string)
		r := f.env.Do(t, "GET", "/oauth/clients/"+f.client.ID+"/jwks.json", nil)
		if r.Status != 200 || r.Header.Get("Cache-Control") != "public, max-age=60" {
			t.Fatalf("jwks: %d %v %s", r.Status, r.Header, r.Raw)
		}
		var raw struct {
			Keys []map[string]string `json:"keys"`
		}
		r.JSON(t, &raw)
		if len(raw.Keys) != 1 {
			t.Fatalf("keys: %s", r.Raw)
		}
		k := raw.Keys[0]
		if len(k) != 7 || k["kty"] != "EC" || k["crv"] != "P-256" || k["kid"] != kid || k["alg"] != "ES256" ||
			k["use"] != "sig" || len(k["x"]) != 43 || len(k["y"]) != 43 {
			t.Fatalf("published key: %v", k)
		}
		var jwk jose.JSONWebKey
		b, _ := json.Marshal(k)
		if err := jwk.UnmarshalJSON(b); err != nil || !jwk.IsPublic() || !jwk.Valid() {
			t.Fatalf("go-jose rejects the published key: %v", err)
		}
	})
}

// verify checks an assertion's signature with the published key kid and
// returns its claims.
func verify(t *testing.T, set oauth.JWKS, assertion, kid string) oauth.AssertionClaims {
	t.Helper()
	jws, err := jose.ParseSignedCompact(assertion, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		t.Fatalf("parse assertion: %v", err)
	}
	h := jws.Signatures[0].Header
	if h.KeyID != kid || h.Algorithm != "ES256" || h.ExtraHeaders["typ"] != "JWT" {
		t.Fatalf("assertion header: %+v", h)
	}
	var pub *oauth.PublicJWK
	for i := range set.Keys {
		if set.Keys[i].Kid == kid {
			pub = &set.Keys[i]
		}
	}
	if pub == nil {
		t.Fatalf("kid %q is not published", kid)
	}
	var jwk jose.JSONWebKey
	b, _ := json.Marshal(pub)
	if err := jwk.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	payload, err := jws.Verify(jwk)
	if err != nil {
		t.Fatalf("signature does not verify with the published key: %v", err)
	}
	var claims oauth.AssertionClaims
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatal(err)
	}
	return claims
}

// TestClientAssertion checks assertions, their signature against the
// published key set and the kid rules.
func TestClientAssertion(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		f := setup(t, open)
		expectError(t, f.assertion(t, map[string]any{"issuer": issuer}), 400, "the client has no authentication key")
		kid1 := f.admin(t, "POST", "/auth-key")["kid"].(string)

		r := f.assertion(t, map[string]any{"issuer": issuer})
		if r.Status != 200 || r.Header.Get("Cache-Control") != "no-store" {
			t.Fatalf("assertion: %d %s", r.Status, r.Raw)
		}
		var out struct {
			ClientAssertion     string `json:"client_assertion"`
			ClientAssertionType string `json:"client_assertion_type"`
			ExpiresIn           int64  `json:"expires_in"`
			KID                 string `json:"kid"`
		}
		r.JSON(t, &out)
		if out.ClientAssertionType != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" || out.ExpiresIn != 60 ||
			out.KID != kid1 || len(r.Object(t)) != 4 {
			t.Fatalf("assertion response: %s", r.Raw)
		}
		claims := verify(t, f.jwks(t), out.ClientAssertion, kid1)
		if claims.Issuer != f.client.ClientIDURL || claims.Subject != f.client.ClientIDURL || claims.Audience != issuer ||
			claims.Expiry-claims.IssuedAt != 60 || claims.JTI == "" {
			t.Fatalf("claims: %+v", claims)
		}
		if d := time.Since(time.Unix(claims.IssuedAt, 0)); d < -time.Minute || d > time.Minute {
			t.Fatalf("iat is %v from now", d)
		}
		// Every assertion has its own jti.
		r = f.assertion(t, map[string]any{"issuer": "http://127.0.0.1:2583"})
		r.JSON(t, &out)
		second := verify(t, f.jwks(t), out.ClientAssertion, kid1)
		if second.JTI == claims.JTI || second.Audience != "http://127.0.0.1:2583" {
			t.Fatalf("second assertion: %+v after %+v", second, claims)
		}

		// kid rules: the current key by name, a retiring one, not an
		// unknown or revoked one.
		kid2 := f.admin(t, "POST", "/auth-key/rotate")["kid"].(string)
		for _, tc := range []struct{ ask, want string }{{"", kid2}, {kid2, kid2}, {kid1, kid1}} {
			r := f.assertion(t, map[string]any{"issuer": issuer, "kid": tc.ask})
			if r.Status != 200 {
				t.Fatalf("kid %q: %d %s", tc.ask, r.Status, r.Raw)
			}
			r.JSON(t, &out)
			if out.KID != tc.want {
				t.Fatalf("kid %q signed with %q, want %q", tc.ask, out.KID, tc.want)
			}
			verify(t, f.jwks(t), out.ClientAssertion, tc.want)
		}
		expectError(t, f.assertion(t, map[string]any{"issuer": issuer, "kid": "nosuchkid"}), 400, "unknown kid")
		f.admin(t, "DELETE", "/auth-key/"+kid1)
		expectError(t, f.assertion(t, map[string]any{"issuer": issuer, "kid": kid1}), 400, "kid has been revoked")
		f.admin(t, "DELETE", "/auth-keys")
		expectError(t, f.assertion(t, map[string]any{"issuer": issuer}), 400, "the client has no authentication key")
		expectError(t, f.assertion(t, map[string]any{"issuer": issuer, "kid": kid2}), 400, "kid has been revoked")
	})
}

// TestClientAssertionRefusals checks authentication and body validation.
func TestClientAssertionRefusals(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		f := setup(t, open)
		f.admin(t, "POST", "/auth-key")
		body := map[string]any{"issuer": issuer}
		do := func(headers ...string) testenv.Response {
			return f.env.Do(t, "POST", "/oauth/client-assertion", body, headers...)
		}
		expectError(t, do(), 401, "requires an API client key")
		expectError(t, do("X-Client-Secret", f.secret), 401, "requires an API client key")
		expectError(t, do("X-Client-Key", "hvc_unknown", "X-Client-Secret", f.secret), 401, "Invalid client")
		expectError(t, do("X-Client-Key", f.client.Key), 401, "Invalid client")
		expectError(t, do("X-Client-Key", f.client.Key, "X-Client-Secret", f.secret+"x"), 401, "Invalid client")
		expectError(t, do("X-Client-Key", f.client.Key, "X-Client-Secret", "hvs_wrong"), 401, "Invalid client")

		pub, pubSecret := f.env.NewClient(t, apiclients.NewClient{Type: storage.ClientPublic, AllowedOrigins: []string{"https://app.test"}})
		expectError(t, do("X-Client-Key", pub.Key, "X-Client-Secret", pubSecret), 401, "requires DPoP authentication")

		// A deactivated client.
		gone, goneSecret := f.env.NewClient(t, apiclients.NewClient{})
		gone.IsActive = false
		if _, err := f.env.App.Clients().Update(context.Background(), "", gone.ID, appview.FullClientPatch(gone)); err != nil {
			t.Fatal(err)
		}
		expectError(t, do("X-Client-Key", gone.Key, "X-Client-Secret", goneSecret), 401, "Invalid client")

		for _, tc := range []struct {
			body any
			want string
		}{
			{[]byte(`{`), "invalid request body"},
			{[]byte(`[]`), "invalid request body"},
			{map[string]any{}, "invalid request body"},
			{map[string]any{"kid": "x"}, "invalid request body"},
			{map[string]any{"issuer": 5}, "invalid request body"},
			{map[string]any{"issuer": "http://pds.example.com"}, "issuer must be an https URL (or http on a loopback host) without query or fragment"},
			{map[string]any{"issuer": "https://pds.example.com?x=1"}, "issuer must be an https URL (or http on a loopback host) without query or fragment"},
			{map[string]any{"issuer": "https://pds.example.com#f"}, "issuer must be an https URL (or http on a loopback host) without query or fragment"},
			{map[string]any{"issuer": "https://user@pds.example.com"}, "issuer must be an https URL (or http on a loopback host) without query or fragment"},
			{map[string]any{"issuer": "pds.example.com"}, "issuer must be an https URL (or http on a loopback host) without query or fragment"},
		} {
			r := f.env.Do(t, "POST", "/oauth/client-assertion", tc.body, "X-Client-Key", f.client.Key, "X-Client-Secret", f.secret)
			expectError(t, r, 400, tc.want)
		}
		big := []byte(`{"issuer":"` + issuer + `","pad":"` + strings.Repeat("x", 70<<10) + `"}`)
		r := f.env.Do(t, "POST", "/oauth/client-assertion", big, "X-Client-Key", f.client.Key, "X-Client-Secret", f.secret)
		expectError(t, r, 413, "request body too large")
		for _, ok := range []string{"https://pds.example.com", "https://pds.example.com/", "http://localhost:2583", "http://[::1]:2583"} {
			r := f.env.Do(t, "POST", "/oauth/client-assertion", map[string]any{"issuer": ok},
				"X-Client-Key", f.client.Key, "X-Client-Secret", f.secret)
			if r.Status != 200 {
				t.Fatalf("issuer %q: %d %s", ok, r.Status, r.Raw)
			}
		}
		// Wrong methods on the public paths answer JSON 404s.
		if r := f.env.Do(t, "GET", "/oauth/client-assertion", nil); r.Status != 404 && r.Status != 405 {
			t.Fatalf("GET client-assertion: %d %s", r.Status, r.Raw)
		}
	})
}
