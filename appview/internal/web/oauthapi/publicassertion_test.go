package oauthapi_test

import (
	"testing"

	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/internal/oauthtest"
	"github.com/lexview/lexview/oauth"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

const assertionPath = "/oauth/client-assertion"

// TestPublicClientAssertion checks that a public client obtains
// assertions with its key and an active DPoP-bound session whose proof
// covers the request, and is refused otherwise.
func TestPublicClientAssertion(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		f := setup(t, open)
		pds := oauthtest.New(t, oauthtest.Options{})
		const origin = "https://web.app.test"
		pub, _ := f.env.NewClient(t, apiclients.NewClient{Type: storage.ClientPublic, AllowedOrigins: []string{origin}})
		did := f.env.PLC.NewAccount(t, false, pds.URL).DID.String()
		phone := f.env.SignIn(t, pds, testenv.AppClient{Key: pub.Key, Origin: origin}, did)
		body := map[string]any{"issuer": issuer}

		// The assertion rules apply as for confidential clients.
		expectError(t, phone.Call(t, "POST", assertionPath, body), 400, "the client has no authentication key")
		r := f.su.Do(t, "POST", "/admin/api-clients/"+pub.ID+"/auth-key", nil)
		if r.Status != 200 {
			t.Fatalf("auth key: %d %s", r.Status, r.Raw)
		}
		kid := r.Object(t)["kid"].(string)
		r = phone.Call(t, "POST", assertionPath, body)
		if r.Status != 200 {
			t.Fatalf("assertion: %d %s", r.Status, r.Raw)
		}
		var out struct {
			ClientAssertion     string `json:"client_assertion"`
			ClientAssertionType string `json:"client_assertion_type"`
			ExpiresIn           int64  `json:"expires_in"`
			KID                 string `json:"kid"`
		}
		r.JSON(t, &out)
		if out.ClientAssertionType != oauth.ClientAssertionType || out.ExpiresIn != 60 || out.KID != kid {
			t.Fatalf("assertion answer: %s", r.Raw)
		}
		set := oauth.JWKS{}
		jw := f.env.Do(t, "GET", "/oauth/clients/"+pub.ID+"/jwks.json", nil)
		jw.JSON(t, &set)
		claims := verify(t, set, out.ClientAssertion, kid)
		if claims.Issuer != pub.ClientIDURL || claims.Subject != pub.ClientIDURL || claims.Audience != issuer {
			t.Fatalf("claims: %+v", claims)
		}
		if r := phone.Call(t, "POST", assertionPath, map[string]any{"issuer": issuer, "kid": kid}); r.Status != 200 {
			t.Fatalf("assertion with kid: %d %s", r.Status, r.Raw)
		}
		expectError(t, phone.Call(t, "POST", assertionPath, map[string]any{"issuer": issuer, "kid": "nosuchkid"}), 400, "unknown kid")
		expectError(t, phone.Call(t, "POST", assertionPath, map[string]any{}), 400, "invalid request body")

		// Without a DPoP session: refused.
		do := func(headers ...string) testenv.Response {
			return f.env.Do(t, "POST", assertionPath, body, headers...)
		}
		dpop := "DPoP " + phone.AccessToken
		expectError(t, do("X-Client-Key", pub.Key), 401, "requires DPoP authentication")
		expectError(t, do("X-Client-Key", pub.Key, "Origin", origin), 401, "requires DPoP authentication")
		expectError(t, do("Authorization", dpop, "DPoP", phone.Proof(t, "POST", assertionPath)), 401, "requires an API client key")
		expectError(t, do("X-Client-Key", "hvc_unknown", "Authorization", dpop, "DPoP", phone.Proof(t, "POST", assertionPath)), 401, "Invalid client")
		for name, r := range map[string]testenv.Response{
			"no proof":         do("X-Client-Key", pub.Key, "Authorization", dpop),
			"proof for a URL":  do("X-Client-Key", pub.Key, "Authorization", dpop, "DPoP", phone.Proof(t, "POST", "/oauth/dpop-keys")),
			"proof for GET":    do("X-Client-Key", pub.Key, "Authorization", dpop, "DPoP", phone.Proof(t, "GET", assertionPath)),
			"another token":    do("X-Client-Key", pub.Key, "Authorization", "DPoP nope", "DPoP", phone.Proof(t, "POST", assertionPath)),
			"bearer, no DPoP":  do("X-Client-Key", pub.Key, "Authorization", "Bearer "+phone.AccessToken),
			"confidential key": do("X-Client-Key", f.client.Key, "Authorization", dpop, "DPoP", phone.Proof(t, "POST", assertionPath)),
		} {
			if r.Status != 401 {
				t.Fatalf("%s: %d %s", name, r.Status, r.Raw)
			}
		}
		proof := phone.Proof(t, "POST", assertionPath)
		if r := do("X-Client-Key", pub.Key, "Authorization", dpop, "DPoP", proof); r.Status != 200 {
			t.Fatalf("fresh proof: %d %s", r.Status, r.Raw)
		}
		if r := do("X-Client-Key", pub.Key, "Authorization", dpop, "DPoP", proof); r.Status != 401 {
			t.Fatalf("replayed proof: %d %s", r.Status, r.Raw)
		}
		// A session of another client does not count.
		conf := f.env.SignIn(t, pds, testenv.AppClient{Key: f.client.Key, Secret: f.secret}, did)
		if r := conf.Call(t, "POST", assertionPath, body, "X-Client-Key", pub.Key); r.Status != 401 {
			t.Fatalf("session of another client: %d %s", r.Status, r.Raw)
		}
		// Once the device signs out, its session no longer authenticates.
		if r := phone.Call(t, "DELETE", "/oauth/sessions/"+did, nil); r.Status != 204 {
			t.Fatalf("sign out: %d %s", r.Status, r.Raw)
		}
		if r := phone.Call(t, "POST", assertionPath, body); r.Status != 401 {
			t.Fatalf("signed-out device: %d %s", r.Status, r.Raw)
		}

		// A confidential client with DPoP still needs its secret.
		f.admin(t, "POST", "/auth-key")
		expectError(t, conf.Call(t, "POST", assertionPath, body), 401, "Invalid client")
		if r := conf.Call(t, "POST", assertionPath, body, "X-Client-Secret", f.secret); r.Status != 200 {
			t.Fatalf("confidential client with DPoP and secret: %d %s", r.Status, r.Raw)
		}
	})
}
