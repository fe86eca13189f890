package appview_test

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bluesky-social/indigo/atproto/atcrypto"
	"github.com/bluesky-social/indigo/atproto/identity"
	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// expect fails unless r has status and, when msg is not "", error msg.
func expect(t *testing.T, r testenv.Response, status int, msg string) {
	t.Helper()
	if r.Status != status || msg != "" && r.Error(t) != msg {
		t.Fatalf("got %d %s, want %d %q", r.Status, r.Raw, status, msg)
	}
}

// didJSON gets /.well-known/did.json from the server at base as host.
func didJSON(t *testing.T, base, host string) testenv.Response {
	t.Helper()
	return testenv.Request(t, "GET", base+"/.well-known/did.json", nil, "Host", host)
}

// TestDIDDocumentResolves: the instance's did:web (its primary domain,
// https://example.com) resolves through indigo's identity code to a
// document listing the verification methods added through the admin API,
// served over TLS by the App; the generated key's private half is never
// returned and is sealed at rest.
func TestDIDDocumentResolves(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env := testenv.New(t, open(t), appview.Config{PublicURL: "https://example.com"})
		admin := env.Bootstrap(t)
		ctx := context.Background()
		if did := env.App.InstanceDID(ctx); did != "did:web:example.com" {
			t.Fatalf("InstanceDID %q", did)
		}
		r := admin.Do(t, "GET", "/admin/service-identity", nil)
		expect(t, r, 200, "")
		if o := r.Object(t); o["mode"] != "did_web" || o["did"] != "did:web:example.com" || o["primary_domain"] != "https://example.com" ||
			o["document_url"] != "https://example.com/.well-known/did.json" {
			t.Fatalf("service identity: %s", r.Raw)
		}

		label, err := atcrypto.GeneratePrivateKeyP256()
		if err != nil {
			t.Fatal(err)
		}
		labelPub, _ := label.PublicKey()
		expect(t, admin.Do(t, "POST", "/admin/verification-methods", map[string]any{"fragment_id": "#atproto", "generate": true, "key_type": "secp256k1"}), 201, "")
		r = admin.Do(t, "POST", "/admin/verification-methods", map[string]any{"fragment_id": "atproto_label", "public_key_multibase": labelPub.Multibase()})
		expect(t, r, 201, "")
		if o := r.Object(t); o["fragment_id"] != "#atproto_label" || o["key_type"] != "p256" || o["generated"] != false || o["type"] != "Multikey" {
			t.Fatalf("added: %s", r.Raw)
		}
		r = admin.Do(t, "GET", "/admin/verification-methods", nil)
		expect(t, r, 200, "")
		if strings.Contains(strings.ToLower(string(r.Raw)), "private") || strings.Contains(string(r.Raw), "sealed") {
			t.Fatalf("a private key shows: %s", r.Raw)
		}
		stored, err := env.Store.ListVerificationMethods(ctx)
		if err != nil || len(stored) != 2 || stored[0].SealedPrivateKey == "" || stored[1].SealedPrivateKey != "" {
			t.Fatalf("stored: %+v %v", stored, err)
		}

		// Serve the App over TLS; the client reaches "example.com" there.
		srv := httptest.NewTLSServer(env.App.Handler())
		t.Cleanup(srv.Close)
		client := srv.Client()
		tr := client.Transport.(*http.Transport).Clone()
		tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, srv.Listener.Addr().String())
		}
		client.Transport = tr
		dir := identity.BaseDirectory{HTTPClient: *client}
		ident, err := dir.LookupDID(ctx, syntax.DID("did:web:example.com"))
		if err != nil {
			t.Fatal(err)
		}
		key, err := ident.PublicKey() // #atproto
		if err != nil || key.Multibase() != stored[0].PublicKeyMultibase {
			t.Fatalf("#atproto: %v %v", key, err)
		}
		if k, err := ident.GetPublicKey("atproto_label"); err != nil || k.Multibase() != labelPub.Multibase() {
			t.Fatalf("#atproto_label: %v %v", k, err)
		}

		// Another registered domain, and an unknown host: 404 JSON.
		expect(t, admin.Do(t, "POST", "/admin/domains", map[string]any{"url": "https://other.example"}), 201, "")
		get := func(host string) testenv.Response { return didJSON(t, env.URL, host) }
		expect(t, get("other.example"), 404, "no DID document on this domain: the instance's DID names its primary domain")
		expect(t, get("nobody.example"), 404, "unknown host")
		r = get("EXAMPLE.com:443")
		expect(t, r, 200, "")
		if o := r.Object(t); o["id"] != "did:web:example.com" || o["@context"] == nil || len(o["service"].([]any)) != 0 || len(o["verificationMethod"].([]any)) != 2 {
			t.Fatalf("document: %s", r.Raw)
		}

		// Deleting a method removes it from the document.
		expect(t, admin.Do(t, "DELETE", "/admin/verification-methods/%23atproto_label", nil), 204, "")
		expect(t, admin.Do(t, "DELETE", "/admin/verification-methods/atproto_label", nil), 404, "verification method not found")
		if o := get("example.com").Object(t); len(o["verificationMethod"].([]any)) != 1 {
			t.Fatalf("after delete: %v", o)
		}

		// Service entries: each one that is not disabled is a service of
		// the document, its endpoint the primary domain's origin.
		entry := func(fragment, typ string) float64 {
			r := admin.Do(t, "POST", "/admin/service-entries", map[string]any{"fragment_id": fragment, "service_type": typ})
			expect(t, r, 201, "")
			return r.Object(t)["id"].(float64)
		}
		entry("#bsky_appview", "BskyAppView")
		feed := entry("feed", "BskyFeedGenerator")
		labeler := entry("atproto_labeler", "AtprotoLabeler")
		expect(t, admin.Do(t, "PUT", fmt.Sprintf("/admin/service-entries/%v", feed), map[string]any{"access_mode": "allowlist"}), 204, "")
		expect(t, admin.Do(t, "PUT", fmt.Sprintf("/admin/service-entries/%v", labeler), map[string]any{"access_mode": "disabled"}), 204, "")
		ident, err = dir.LookupDID(ctx, syntax.DID("did:web:example.com"))
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]identity.ServiceEndpoint{
			"bsky_appview": {Type: "BskyAppView", URL: "https://example.com"},
			"feed":         {Type: "BskyFeedGenerator", URL: "https://example.com"},
		}
		if !maps.Equal(ident.Services, want) {
			t.Fatalf("services: %+v, want %+v", ident.Services, want)
		}
		if o := get("example.com").Object(t); fmt.Sprint(o["service"]) != "[map[id:did:web:example.com#bsky_appview serviceEndpoint:https://example.com type:BskyAppView] "+
			"map[id:did:web:example.com#feed serviceEndpoint:https://example.com type:BskyFeedGenerator]]" {
			t.Fatalf("document services: %v", o["service"])
		}
	})
}

// TestIdentityFollowsPrimaryDomain: making another domain primary changes
// the instance's DID, the audience service-auth JWTs must name, and the
// host serving the DID document.
func TestIdentityFollowsPrimaryDomain(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env := testenv.New(t, open(t), appview.Config{PublicURL: "https://first.example"})
		admin := env.Bootstrap(t)
		ctx := context.Background()
		r := admin.Do(t, "POST", "/admin/domains", map[string]any{"url": "https://second.example:8443"})
		expect(t, r, 201, "")
		id, _ := r.Object(t)["id"].(string)
		call := func(aud string) testenv.Response {
			claims := map[string]any{"iss": admin.Account.DID.String(), "aud": aud, "exp": time.Now().Add(time.Minute).Unix()}
			return env.Do(t, "GET", "/admin/domains", nil, testenv.Bearer(admin.Account.JWT(t, nil, claims))...)
		}
		expect(t, call("did:web:first.example#bsky_appview"), 200, "")
		expect(t, admin.Do(t, "POST", "/admin/domains/"+id+"/primary", nil), 204, "")
		if did := env.App.InstanceDID(ctx); did != "did:web:second.example%3A8443" {
			t.Fatalf("InstanceDID %q", did)
		}
		expect(t, call("did:web:second.example%3A8443"), 200, "")
		expect(t, call("did:web:first.example"), 401, `invalid service auth token: audience "did:web:first.example" is not this service`)
		r = didJSON(t, env.URL, "second.example:8443")
		expect(t, r, 200, "")
		if r.Object(t)["id"] != "did:web:second.example%3A8443" {
			t.Fatalf("%s", r.Raw)
		}
	})
}

// TestServiceIdentityModesAndMethodInput: did_web can be set, did_plc
// and attach_account only with what they need; bad
// verification-method input gets clear errors.
func TestServiceIdentityModesAndMethodInput(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env := testenv.New(t, open(t), appview.Config{})
		admin := env.Bootstrap(t)
		expect(t, admin.Do(t, "PUT", "/admin/service-identity", map[string]any{"mode": "did_web"}), 200, "")
		for mode, msg := range map[string]string{
			"did_plc":        "the did_plc mode needs a DID: give create true, or did and rotation_key to adopt one",
			"attach_account": "the attach_account mode needs an account: give identifier and password",
			"did_key":        "invalid identity mode: use did_web, did_plc or attach_account",
			"":               "mode is required",
		} {
			expect(t, admin.Do(t, "PUT", "/admin/service-identity", map[string]any{"mode": mode}), 400, msg)
		}
		expect(t, admin.Do(t, "PUT", "/admin/service-identity", []byte("{")), 400, "invalid request body")
		expect(t, admin.Do(t, "PUT", "/admin/settings/identity.mode", map[string]any{"value": "did_plc"}), 400, "reserved setting key")

		k, _ := atcrypto.GeneratePrivateKeyK256()
		pub, _ := k.PublicKey()
		for _, c := range []struct {
			body   map[string]any
			status int
			msg    string
		}{
			{map[string]any{"generate": true, "key_type": "p256"}, 400, "fragment_id is required"},
			{map[string]any{"fragment_id": "#", "generate": true, "key_type": "p256"}, 400, "invalid fragment_id: use # then a letter and up to 63 letters, digits, _ and -"},
			{map[string]any{"fragment_id": "#1abc", "generate": true, "key_type": "p256"}, 400, "invalid fragment_id: use # then a letter and up to 63 letters, digits, _ and -"},
			{map[string]any{"fragment_id": "#a b", "generate": true, "key_type": "p256"}, 400, "invalid fragment_id: use # then a letter and up to 63 letters, digits, _ and -"},
			{map[string]any{"fragment_id": "#atproto"}, 400, "public_key_multibase or generate is required"},
			{map[string]any{"fragment_id": "#atproto", "generate": true}, 400, "key_type is required to generate a key: p256 or secp256k1"},
			{map[string]any{"fragment_id": "#atproto", "generate": true, "key_type": "ed25519"}, 400, "unsupported key_type: use p256 or secp256k1"},
			{map[string]any{"fragment_id": "#atproto", "public_key_multibase": "z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"}, 400,
				"invalid public_key_multibase: a multikey P-256 or secp256k1 public key is expected"}, // an Ed25519 multikey
			{map[string]any{"fragment_id": "#atproto", "public_key_multibase": "nonsense"}, 400, "invalid public_key_multibase: a multikey P-256 or secp256k1 public key is expected"},
			{map[string]any{"fragment_id": "#atproto", "public_key_multibase": pub.Multibase(), "key_type": "p256"}, 400, `key_type "p256" does not match the key, a secp256k1 key`},
			{map[string]any{"fragment_id": "#atproto", "public_key_multibase": pub.Multibase(), "generate": true, "key_type": "p256"}, 400, "give either public_key_multibase or generate, not both"},
			{map[string]any{"fragment_id": "#atproto", "public_key_multibase": pub.Multibase()}, 201, ""},
			{map[string]any{"fragment_id": "atproto", "generate": true, "key_type": "p256"}, 409, "verification method already exists"},
		} {
			expect(t, admin.Do(t, "POST", "/admin/verification-methods", c.body), c.status, c.msg)
		}
		expect(t, admin.Do(t, "DELETE", "/admin/verification-methods/%231bad", nil), 400, "invalid fragment_id: use # then a letter and up to 63 letters, digits, _ and -")
		expect(t, admin.Do(t, "DELETE", "/admin/verification-methods/nope", nil), 404, "verification method not found")
		viewer := env.AddAdmin(t, "stats:read")
		expect(t, viewer.Do(t, "GET", "/admin/verification-methods", nil), 403, "insufficient permissions")
		expect(t, viewer.Do(t, "GET", "/admin/service-identity", nil), 403, "insufficient permissions")
	})
}
