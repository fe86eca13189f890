package authkeys_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// metadataServer is a stand-in for an app's published client metadata
// document.
type metadataServer struct {
	URL    string
	mu     sync.Mutex
	status int
	body   []byte
}

func newMetadataServer(t *testing.T) *metadataServer {
	m := &metadataServer{status: 200}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		status, body := m.status, m.body
		m.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	m.URL = srv.URL
	return m
}

func (m *metadataServer) serve(status int, body []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.status, m.body = status, body
}

type recheckResult struct {
	ConfidentialReady bool            `json:"confidential_ready"`
	Reason            string          `json:"reason"`
	Checks            map[string]bool `json:"checks"`
	JWKSURI           string          `json:"jwks_uri"`
	KID               string          `json:"kid"`
}

// TestRecheck checks the confidential-readiness report against a ready
// metadata document and against each way a document can fall short.
func TestRecheck(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env, su := newEnv(t, open, appview.Config{})
		md := newMetadataServer(t)
		clientIDURL := md.URL + "/client-metadata.json"
		c := newClient(t, env, clientIDURL)
		jwksURI := env.App.Config().PublicURL + "/oauth/clients/" + c.ID + "/jwks.json"

		recheck := func() recheckResult {
			t.Helper()
			r := su.Do(t, "POST", keysPath(c.ID, "/auth-key/recheck"), nil)
			expect(t, r, 200, "")
			var out recheckResult
			r.JSON(t, &out)
			if out.JWKSURI != jwksURI {
				t.Fatalf("jwks_uri %q, want %q", out.JWKSURI, jwksURI)
			}
			if len(out.Checks) != 6 {
				t.Fatalf("checks: %s", r.Raw)
			}
			return out
		}
		doc := func(edit func(map[string]any)) []byte {
			d := map[string]any{
				"client_id":                       clientIDURL,
				"application_type":                "web",
				"grant_types":                     []string{"authorization_code", "refresh_token"},
				"scope":                           "atproto",
				"response_types":                  []string{"code"},
				"redirect_uris":                   []string{"https://app.test/callback"},
				"dpop_bound_access_tokens":        true,
				"token_endpoint_auth_method":      "private_key_jwt",
				"token_endpoint_auth_signing_alg": "ES256",
				"jwks_uri":                        jwksURI,
			}
			if edit != nil {
				edit(d)
			}
			b, _ := json.Marshal(d)
			return b
		}
		// failsOnly checks a not-ready report whose only failed check is
		// check, with a reason containing reason.
		failsOnly := func(res recheckResult, check, reason string) {
			t.Helper()
			if res.ConfidentialReady || !strings.Contains(res.Reason, reason) {
				t.Fatalf("%s: ready %v, reason %q; want a reason containing %q", check, res.ConfidentialReady, res.Reason, reason)
			}
			for name, ok := range res.Checks {
				if ok == (name == check) {
					t.Fatalf("%s: checks %v", check, res.Checks)
				}
			}
		}

		// Unknown client.
		expect(t, su.Do(t, "POST", keysPath(storage.NewID(), "/auth-key/recheck"), nil), 404, "API client not found")

		// A perfect document, but no key yet.
		md.serve(200, doc(nil))
		failsOnly(recheck(), "auth_key", "the client has no authentication key")

		kid := createKey(t, su, c.ID)
		res := recheck()
		if !res.ConfidentialReady || res.Reason != "" || res.KID != kid {
			t.Fatalf("ready document: %+v", res)
		}
		for name, ok := range res.Checks {
			if !ok {
				t.Fatalf("check %s failed on a ready document", name)
			}
		}

		// Inline jwks holding the current key instead of jwks_uri.
		set := env.Do(t, "GET", "/oauth/clients/"+c.ID+"/jwks.json", nil)
		var inline map[string]any
		set.JSON(t, &inline)
		md.serve(200, doc(func(d map[string]any) { delete(d, "jwks_uri"); d["jwks"] = inline }))
		if res := recheck(); !res.ConfidentialReady {
			t.Fatalf("inline jwks with the current key: %+v", res)
		}
		md.serve(200, doc(func(d map[string]any) {
			delete(d, "jwks_uri")
			d["jwks"] = map[string]any{"keys": []map[string]any{{"kty": "EC", "crv": "P-256", "kid": "other", "x": "AA", "y": "AA"}}}
		}))
		failsOnly(recheck(), "jwks", "the inline jwks does not hold the current key")

		for _, tc := range []struct {
			check, reason string
			edit          func(map[string]any)
		}{
			{"jwks", "jwks_uri is \"https://elsewhere.test/jwks.json\"", func(d map[string]any) { d["jwks_uri"] = "https://elsewhere.test/jwks.json" }},
			{"jwks", "jwks_uri must be", func(d map[string]any) { delete(d, "jwks_uri") }},
			{"token_endpoint_auth_method", "token_endpoint_auth_method is \"none\", must be \"private_key_jwt\"",
				func(d map[string]any) { d["token_endpoint_auth_method"] = "none" }},
			{"token_endpoint_auth_signing_alg", "token_endpoint_auth_signing_alg is \"RS256\", must be \"ES256\"",
				func(d map[string]any) { d["token_endpoint_auth_signing_alg"] = "RS256" }},
			{"token_endpoint_auth_signing_alg", "token_endpoint_auth_signing_alg is \"\"",
				func(d map[string]any) { delete(d, "token_endpoint_auth_signing_alg") }},
			{"client_id", "client_id in the metadata is \"https://impostor.test/client-metadata.json\"",
				func(d map[string]any) { d["client_id"] = "https://impostor.test/client-metadata.json" }},
		} {
			md.serve(200, doc(tc.edit))
			failsOnly(recheck(), tc.check, tc.reason)
		}

		// Documents that cannot be read fail every document check.
		big := doc(func(d map[string]any) { d["padding"] = strings.Repeat("x", 256<<10) })
		for _, tc := range []struct {
			status int
			body   []byte
			reason string
		}{
			{404, []byte(`{"error":"not found"}`), "HTTP status 404"},
			{200, []byte(`<html>not json</html>`), "not a valid JSON client metadata document"},
			{200, []byte(`{"client_id": 12}`), "not a valid JSON client metadata document"},
			{200, big, "exceeds 256 KiB"},
		} {
			md.serve(tc.status, tc.body)
			res := recheck()
			if res.ConfidentialReady || !strings.Contains(res.Reason, tc.reason) {
				t.Fatalf("status %d: %+v, want reason %q", tc.status, res, tc.reason)
			}
			for name, ok := range res.Checks {
				if ok != (name == "auth_key") {
					t.Fatalf("status %d: checks %v", tc.status, res.Checks)
				}
			}
		}
	})
}
