package site_test

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	indigooauth "github.com/bluesky-social/indigo/atproto/auth/oauth"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/service/domains"
	"github.com/lexview/lexview/appview/internal/service/instance"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/appview/internal/web/site"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

var pngLogo = append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 32)...)

// get fetches url, sending host as the Host header when set.
func get(t *testing.T, url, host string) testenv.Response {
	t.Helper()
	if host == "" {
		return testenv.Request(t, "GET", url, nil)
	}
	return testenv.Request(t, "GET", url, nil, "Host", host)
}

// metadata fetches and validates origin's client metadata document, with
// indigo's OAuth client code (the checks an atproto authorization server
// makes), and returns it.
func metadata(t *testing.T, origin string) (indigooauth.ClientMetadata, map[string]any) {
	t.Helper()
	r := get(t, origin+"/oauth-client-metadata.json", "")
	if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("client metadata on %s: %d %s", origin, r.Status, r.Raw)
	}
	var m indigooauth.ClientMetadata
	r.JSON(t, &m)
	if err := m.Validate(origin + "/oauth-client-metadata.json"); err != nil {
		t.Fatalf("client metadata on %s does not validate: %v\n%s", origin, err, r.Raw)
	}
	if !m.IsConfidential() {
		t.Fatalf("client metadata on %s is not a confidential client: %s", origin, r.Raw)
	}
	return m, r.Object(t)
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// TestClientMetadataPerDomain: every registered domain serves its own
// client metadata (client_id, redirect URI and key set URL on that
// domain), branded by the settings; an unregistered host is refused on
// the domain-scoped routes while /health answers; GET /config and the
// logo follow the settings.
func TestClientMetadataPerDomain(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env := testenv.New(t, open(t), appview.Config{})
		su := env.Bootstrap(t)

		// The primary domain (PUBLIC_URL), unbranded.
		m, raw := metadata(t, env.URL)
		if m.ClientID != env.URL+"/oauth-client-metadata.json" ||
			!slices.Equal(m.RedirectURIs, []string{env.URL + "/oauth/callback"}) ||
			deref(m.JWKSURI) != env.URL+"/oauth/jwks.json" || deref(m.ClientName) != "Lexview" ||
			deref(m.ApplicationType) != "web" || deref(m.TokenEndpointAuthSigningAlg) != "ES256" ||
			m.TokenEndpointAuthMethod != "private_key_jwt" || !m.DPoPBoundAccessTokens ||
			m.Scope != site.Scope || !slices.Equal(m.GrantTypes, []string{"authorization_code", "refresh_token"}) ||
			!slices.Equal(m.ResponseTypes, []string{"code"}) || deref(m.ClientURI) != env.URL {
			t.Fatalf("primary metadata: %+v", m)
		}
		for _, absent := range []string{"logo_uri", "tos_uri", "policy_uri"} {
			if _, ok := raw[absent]; ok {
				t.Fatalf("unset %s is present: %v", absent, raw)
			}
		}

		// A second domain: another port of this instance, unregistered first.
		second := httptest.NewServer(env.App)
		t.Cleanup(second.Close)
		for _, path := range []string{"/oauth-client-metadata.json", "/oauth/jwks.json", "/config", "/.well-known/did.json"} {
			r := get(t, second.URL+path, "")
			if r.Status != 404 || r.Error(t) != "unknown host" {
				t.Fatalf("%s on an unregistered host: %d %s", path, r.Status, r.Raw)
			}
		}
		if r := get(t, second.URL+"/health", ""); r.Status != 200 {
			t.Fatalf("/health on an unregistered host: %d", r.Status)
		}
		r := su.Do(t, "POST", "/admin/domains", map[string]any{"url": second.URL})
		if r.Status != 201 || r.Object(t)["client_id"] != second.URL+"/oauth-client-metadata.json" {
			t.Fatalf("add domain: %d %s", r.Status, r.Raw)
		}
		m2, _ := metadata(t, second.URL)
		if m2.ClientID != second.URL+"/oauth-client-metadata.json" ||
			!slices.Equal(m2.RedirectURIs, []string{second.URL + "/oauth/callback"}) ||
			deref(m2.JWKSURI) != second.URL+"/oauth/jwks.json" || deref(m2.ClientURI) != second.URL {
			t.Fatalf("second domain's metadata: %+v", m2)
		}
		// The Host header decides, whatever the listener: case and the
		// scheme's default port do not matter.
		host := strings.TrimPrefix(second.URL, "http://")
		if r := get(t, env.URL+"/oauth-client-metadata.json", strings.ToUpper(host)); r.Status != 200 ||
			!strings.Contains(string(r.Raw), `"client_id":"`+second.URL+`/oauth-client-metadata.json"`) {
			t.Fatalf("metadata by Host header: %d %s", r.Status, r.Raw)
		}
		if r := get(t, env.URL+"/config", "nowhere.example:80"); r.Status != 404 || r.Error(t) != "unknown host" {
			t.Fatalf("config for an unknown Host: %d %s", r.Status, r.Raw)
		}
		// Both domains publish the same instance key set.
		k1, k2 := get(t, env.URL+"/oauth/jwks.json", ""), get(t, second.URL+"/oauth/jwks.json", "")
		if k1.Status != 200 || !bytes.Equal(k1.Raw, k2.Raw) || !strings.Contains(string(k1.Raw), `"alg":"ES256"`) ||
			strings.Contains(string(k1.Raw), `"d"`) {
			t.Fatalf("key sets: %s / %s", k1.Raw, k2.Raw)
		}

		// Branding: settings reach the documents; bad values are refused.
		for key, value := range map[string]string{
			"app_name": "My View", "terms_of_service_url": "https://view.example/tos", "privacy_policy_url": "https://view.example/privacy",
		} {
			if r := su.Do(t, "PUT", "/admin/settings/"+key, map[string]any{"value": value}); r.Status != 200 {
				t.Fatalf("put %s: %d %s", key, r.Status, r.Raw)
			}
		}
		for key, value := range map[string]string{
			"terms_of_service_url": "not a url", "privacy_policy_url": "ftp://view.example/p", "app_name": strings.Repeat("x", 201),
		} {
			if r := su.Do(t, "PUT", "/admin/settings/"+key, map[string]any{"value": value}); r.Status != 400 {
				t.Fatalf("put bad %s: %d %s", key, r.Status, r.Raw)
			}
		}
		if r := get(t, env.URL+"/settings/logo", ""); r.Status != 404 {
			t.Fatalf("logo before any: %d %s", r.Status, r.Raw)
		}
		put := func(contentType string, body []byte) int {
			t.Helper()
			r := testenv.Request(t, "PUT", env.URL+"/admin/settings/logo", body, "Content-Type", contentType,
				"Authorization", "Bearer "+su.Account.ServiceAuth(t))
			return r.Status
		}
		if s := put("text/plain", []byte("hello")); s != 400 {
			t.Fatalf("non-image logo: %d", s)
		}
		if s := put("image/png", []byte("not a png at all")); s != 400 {
			t.Fatalf("a body that is not its declared type: %d", s)
		}
		if s := put("image/png", append(bytes.Clone(pngLogo), make([]byte, 1<<20)...)); s != 413 {
			t.Fatalf("oversize logo: %d", s)
		}
		if s := put("image/png", pngLogo); s != 204 {
			t.Fatalf("logo: %d", s)
		}
		m2, _ = metadata(t, second.URL)
		if deref(m2.ClientName) != "My View" || deref(m2.TosURI) != "https://view.example/tos" ||
			deref(m2.PolicyURI) != "https://view.example/privacy" || deref(m2.LogoURI) != second.URL+"/settings/logo" {
			t.Fatalf("branded metadata: %+v", m2)
		}
		logo := get(t, second.URL+"/settings/logo", "")
		if logo.Status != 200 || logo.Header.Get("Content-Type") != "image/png" || !bytes.Equal(logo.Raw, pngLogo) ||
			logo.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Fatalf("logo: %d %v", logo.Status, logo.Header)
		}

		// GET /config names the domain it is asked on.
		r = get(t, second.URL+"/config", "")
		var c site.Config
		r.JSON(t, &c)
		wantDID := domains.DIDWeb(strings.TrimPrefix(env.URL, "http://"))
		if r.Status != 200 || c.AppName != "My View" || deref(c.LogoURL) != second.URL+"/settings/logo" ||
			deref(c.TermsOfServiceURL) != "https://view.example/tos" || deref(c.PrivacyPolicyURL) != "https://view.example/privacy" ||
			deref(c.DID) != wantDID || deref(c.PrimaryDomain) != env.URL || c.Domain != second.URL ||
			c.ClientID != second.URL+"/oauth-client-metadata.json" {
			t.Fatalf("config: %d %s", r.Status, r.Raw)
		}

		// Removing the settings and the logo: defaults again, no logo.
		for _, key := range []string{"app_name", "terms_of_service_url", "privacy_policy_url", "logo"} {
			if r := su.Do(t, "DELETE", "/admin/settings/"+key, nil); r.Status != 204 {
				t.Fatalf("delete %s: %d %s", key, r.Status, r.Raw)
			}
		}
		var cfg map[string]any
		get(t, env.URL+"/config", "").JSON(t, &cfg)
		if cfg["app_name"] != "Lexview" || cfg["logo_url"] != nil || cfg["terms_of_service_url"] != nil ||
			cfg["privacy_policy_url"] != nil || cfg["domain"] != env.URL {
			t.Fatalf("config after deletes: %v", cfg)
		}
		if r := get(t, env.URL+"/settings/logo", ""); r.Status != 404 || r.Error(t) != "no logo" {
			t.Fatalf("deleted logo: %d %s", r.Status, r.Raw)
		}

		// A deleted domain is an unknown host again.
		var list []struct {
			ID, URL string
		}
		su.Do(t, "GET", "/admin/domains", nil).JSON(t, &list)
		for _, d := range list {
			if d.URL == second.URL {
				if r := su.Do(t, "DELETE", "/admin/domains/"+d.ID, nil); r.Status != 204 {
					t.Fatalf("delete domain: %d %s", r.Status, r.Raw)
				}
			}
		}
		if r := get(t, second.URL+"/oauth-client-metadata.json", ""); r.Status != 404 || r.Error(t) != "unknown host" {
			t.Fatalf("metadata on a deleted domain: %d %s", r.Status, r.Raw)
		}
	})
}

// TestClientMetadataDocument: the document's JSON field names are the
// atproto OAuth specification's.
func TestClientMetadataDocument(t *testing.T) {
	raw, err := json.Marshal(site.ClientMetadata("https://view.example", fullBranding()))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"client_id": "https://view.example/oauth-client-metadata.json", "application_type": "web",
		"client_name": "View", "client_uri": "https://view.example", "logo_uri": "https://view.example/settings/logo",
		"tos_uri": "https://view.example/tos", "policy_uri": "https://view.example/p",
		"grant_types": []any{"authorization_code", "refresh_token"}, "response_types": []any{"code"},
		"scope": "atproto transition:generic", "redirect_uris": []any{"https://view.example/oauth/callback"},
		"dpop_bound_access_tokens": true, "token_endpoint_auth_method": "private_key_jwt",
		"token_endpoint_auth_signing_alg": "ES256", "jwks_uri": "https://view.example/oauth/jwks.json",
	}
	if len(got) != len(want) {
		t.Fatalf("fields: %v", got)
	}
	for k, v := range want {
		if g, _ := json.Marshal(got[k]); string(g) != mustJSON(t, v) {
			t.Errorf("%s = %s, want %s", k, g, mustJSON(t, v))
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func fullBranding() instance.Branding {
	return instance.Branding{AppName: "View", TermsOfServiceURL: "https://view.example/tos",
		PrivacyPolicyURL: "https://view.example/p", HasLogo: true}
}

// TestClientMetadataScopes: the scopes the instance asks accounts for
// (linked repo grants') join the declared scope, each once.
func TestClientMetadataScopes(t *testing.T) {
	m := site.ClientMetadata("https://view.example", fullBranding(), "atproto", "repo:app.example.post?action=create", "transition:generic")
	if m.Scope != "atproto transition:generic repo:app.example.post?action=create" {
		t.Fatalf("scope %q", m.Scope)
	}
}
