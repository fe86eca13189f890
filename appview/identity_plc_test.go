package appview_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/bluesky-social/indigo/atproto/atcrypto"
	"github.com/bluesky-social/indigo/atproto/identity"
	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/core/plc"
	"github.com/lexview/lexview/appview/internal/testing/refpds"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// resolvePLC resolves did at the reference PLC directory with indigo's
// identity code and returns its verification keys ("#fragment" to
// multikey: the reference directory renders #atproto in a legacy form,
// which indigo parses) and service endpoints ("#fragment type" to
// endpoint).
func resolvePLC(t *testing.T, plcURL, did string) (keys, services map[string]string) {
	t.Helper()
	dir := identity.BaseDirectory{PLCURL: plcURL, HTTPClient: *http.DefaultClient}
	doc, err := dir.ResolveDID(context.Background(), syntax.DID(did))
	if err != nil {
		t.Fatalf("resolve %s: %v", did, err)
	}
	keys, services = map[string]string{}, map[string]string{}
	ident := identity.ParseIdentity(doc)
	for _, m := range doc.VerificationMethod {
		fragment := strings.TrimPrefix(m.ID, did)
		pub, err := ident.GetPublicKey(strings.TrimPrefix(fragment, "#"))
		if err != nil {
			t.Fatalf("%s%s: %v", did, fragment, err)
		}
		keys[fragment] = pub.Multibase()
	}
	for _, s := range doc.Service {
		services[s.ID+" "+s.Type] = s.ServiceEndpoint
	}
	return keys, services
}

// plcEnv is an App whose PLC directory is plcURL (the reference one, or
// one that is down) and whose accounts resolve there, while its admins'
// DIDs resolve at a stand-in directory (env.PLC) first. cfg's PLCURL and
// Directory are set here.
func plcEnv(t *testing.T, store storage.Store, plcURL string, cfg appview.Config) *testenv.Env {
	t.Helper()
	standIn := testenv.NewPLC(t)
	cfg.Network.PLCURL = plcURL
	cfg.Network.Directory = twoDirectories{
		&identity.BaseDirectory{PLCURL: standIn.URL, HTTPClient: *http.DefaultClient},
		&identity.BaseDirectory{PLCURL: plcURL, HTTPClient: *http.DefaultClient},
	}
	env := testenv.New(t, store, cfg)
	env.PLC = standIn
	return env
}

// TestDIDPLCIdentity gives an instance a did:plc at the reference PLC
// directory (which checks every operation's chain and low-S signature):
// created by the instance, kept in line with its verification methods by
// sync-plc, and adopted from elsewhere with its rotation key.
func TestDIDPLCIdentity(t *testing.T) {
	t.Parallel()
	n := refpds.Start(t)
	ctx := context.Background()
	directory := &plc.Client{URL: n.PLCURL, HTTP: http.DefaultClient}
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env := plcEnv(t, open(t), n.PLCURL, appview.Config{PublicURL: "https://example.com"})
		admin := env.Bootstrap(t)
		r := admin.Do(t, "POST", "/admin/verification-methods", map[string]any{"fragment_id": "#atproto", "generate": true, "key_type": "secp256k1"})
		expect(t, r, 201, "")
		atprotoKey := r.Object(t)["public_key_multibase"]

		// Create: a genesis operation with the configured methods.
		r = admin.Do(t, "PUT", "/admin/service-identity", map[string]any{"mode": "did_plc", "create": true})
		expect(t, r, 200, "")
		id := r.Object(t)
		did, _ := id["did"].(string)
		rotation, _ := id["rotation_key"].(string)
		if id["mode"] != "did_plc" || !strings.HasPrefix(did, "did:plc:") || !strings.HasPrefix(rotation, "did:key:z") || id["document_url"] != nil {
			t.Fatalf("identity: %s", r.Raw)
		}
		if got := env.App.InstanceDID(ctx); got != did {
			t.Fatalf("InstanceDID %q, want %q", got, did)
		}
		if keys, _ := resolvePLC(t, n.PLCURL, did); keys["#atproto"] != atprotoKey || len(keys) != 1 {
			t.Fatalf("resolved keys %v, want #atproto %v", keys, atprotoKey)
		}
		expect(t, didJSON(t, env.URL, "example.com"), 404,
			"no DID document here: the instance's identity is not a did:web (resolve its DID at the PLC directory)")
		r = admin.Do(t, "GET", "/admin/settings", nil)
		expect(t, r, 200, "")
		if strings.Contains(string(r.Raw), "identity.") {
			t.Fatalf("settings list the identity's: %s", r.Raw)
		}
		expect(t, admin.Do(t, "PUT", "/admin/service-identity", map[string]any{"mode": "did_plc", "create": true}), 400,
			"a did:plc is already configured ("+did+"): adopt another with did and rotation_key")

		// Sync: a second method reaches the PLC; a sync with nothing to
		// change submits nothing.
		label, _ := atcrypto.GeneratePrivateKeyP256()
		labelPub, _ := label.PublicKey()
		expect(t, admin.Do(t, "POST", "/admin/verification-methods", map[string]any{"fragment_id": "atproto_label", "public_key_multibase": labelPub.Multibase()}), 201, "")
		expect(t, admin.Do(t, "POST", "/admin/service-entries", map[string]any{"fragment_id": "#bsky_appview", "service_type": "BskyAppView"}), 201, "")
		r = admin.Do(t, "POST", "/admin/service-entries", map[string]any{"fragment_id": "#off", "service_type": "BskyFeedGenerator"})
		expect(t, r, 201, "")
		off := r.Object(t)["id"]
		expect(t, admin.Do(t, "PUT", fmt.Sprintf("/admin/service-entries/%v", off), map[string]any{"access_mode": "disabled"}), 204, "")
		expect(t, admin.Do(t, "POST", "/admin/service-entries/sync-plc", nil), 204, "")
		keys, services := resolvePLC(t, n.PLCURL, did)
		if keys["#atproto_label"] != labelPub.Multibase() || keys["#atproto"] != atprotoKey {
			t.Fatalf("keys after sync: %v", keys)
		}
		if services["#bsky_appview BskyAppView"] != "https://example.com" || len(services) != 1 {
			t.Fatalf("services after sync (a disabled entry is not one): %v", services)
		}
		head, err := directory.Head(ctx, did)
		if err != nil {
			t.Fatal(err)
		}
		expect(t, admin.Do(t, "POST", "/admin/service-entries/sync-plc", nil), 204, "")
		if again, _ := directory.Head(ctx, did); again != head {
			t.Fatalf("a sync with nothing to change submitted an operation: %s -> %s", head, again)
		}
		expect(t, admin.Do(t, "DELETE", "/admin/verification-methods/atproto_label", nil), 204, "")
		expect(t, admin.Do(t, "POST", "/admin/service-entries/sync-plc", nil), 204, "")
		if keys, _ := resolvePLC(t, n.PLCURL, did); len(keys) != 1 {
			t.Fatalf("after removing #atproto_label: %v", keys)
		}

		// Adopt a DID made elsewhere, with its rotation key in hex.
		other, _ := atcrypto.GeneratePrivateKeyK256()
		otherPub, _ := other.PublicKey()
		genesis := plc.State{RotationKeys: []string{otherPub.DIDKey()}, AlsoKnownAs: []string{"at://appview.example"}}.Next("")
		if err := genesis.Sign(other); err != nil {
			t.Fatal(err)
		}
		adopted, _ := genesis.DID()
		if err := directory.Submit(ctx, adopted, genesis); err != nil {
			t.Fatal(err)
		}
		stranger, _ := atcrypto.GeneratePrivateKeyK256()
		unknown := "did:plc:aaaaaaaaaaaaaaaaaaaaaaaa"
		for _, c := range []struct {
			body map[string]any
			msg  string
		}{
			{map[string]any{"did": adopted}, "adopting a did:plc needs both did and rotation_key"},
			{map[string]any{"did": "did:web:example.com", "rotation_key": other.Multibase()}, "invalid did: a did:plc is expected"},
			{map[string]any{"did": adopted, "rotation_key": "nonsense"},
				"invalid rotation_key: a multibase P-256 or secp256k1 private key, or 64 hex digits of a secp256k1 one, is expected"},
			{map[string]any{"did": adopted, "rotation_key": stranger.Multibase()}, "rotation_key is not a rotation key of " + adopted},
			{map[string]any{"did": unknown, "rotation_key": other.Multibase()}, unknown + " is not registered at the PLC directory"},
			{map[string]any{"create": true, "did": adopted}, "give either create or did and rotation_key, not both"},
		} {
			c.body["mode"] = "did_plc"
			expect(t, admin.Do(t, "PUT", "/admin/service-identity", c.body), 400, c.msg)
		}
		r = admin.Do(t, "PUT", "/admin/service-identity", map[string]any{"mode": "did_plc", "did": adopted, "rotation_key": hex.EncodeToString(other.Bytes())})
		expect(t, r, 200, "")
		if o := r.Object(t); o["did"] != adopted || o["rotation_key"] != otherPub.DIDKey() {
			t.Fatalf("adopted: %s", r.Raw)
		}
		expect(t, admin.Do(t, "POST", "/admin/service-entries/sync-plc", nil), 204, "")
		state, err := directory.State(ctx, adopted)
		if err != nil || state.AlsoKnownAs[0] != "at://appview.example" || state.RotationKeys[0] != otherPub.DIDKey() || len(state.VerificationMethods) != 1 {
			t.Fatalf("adopted DID after sync: %+v %v", state, err)
		}

		// The first DID's rotation key was kept: it is adopted again with
		// its DID alone.
		r = admin.Do(t, "PUT", "/admin/service-identity", map[string]any{"mode": "did_plc", "did": did})
		expect(t, r, 200, "")
		if o := r.Object(t); o["did"] != did || o["rotation_key"] != rotation {
			t.Fatalf("adopting the first DID again: %s", r.Raw)
		}
		expect(t, admin.Do(t, "POST", "/admin/service-entries/sync-plc", nil), 204, "")
		r = admin.Do(t, "PUT", "/admin/service-identity", map[string]any{"mode": "did_plc", "did": adopted})
		expect(t, r, 200, "")

		// Back to did_web: the PLC identity is kept, sync-plc is refused.
		expect(t, admin.Do(t, "PUT", "/admin/service-identity", map[string]any{"mode": "did_web"}), 200, "")
		expect(t, admin.Do(t, "POST", "/admin/service-entries/sync-plc", nil), 400,
			"wrong identity mode for PLC sync: sync-plc needs the did_plc mode and a configured DID")
		r = admin.Do(t, "PUT", "/admin/service-identity", map[string]any{"mode": "did_plc"})
		expect(t, r, 200, "")
		if r.Object(t)["did"] != adopted {
			t.Fatalf("switching back: %s", r.Raw)
		}
	})
}

// TestDIDPLCDirectoryDown: an unreachable PLC directory is a 500 naming
// the failure, and the instance keeps its identity.
func TestDIDPLCDirectoryDown(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + l.Addr().String()
	l.Close()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env := plcEnv(t, open(t), down, appview.Config{PublicURL: "https://example.com"})
		admin := env.Bootstrap(t)
		r := admin.Do(t, "PUT", "/admin/service-identity", map[string]any{"mode": "did_plc", "create": true})
		if r.Status != 500 || !strings.HasPrefix(r.Error(t), "the PLC directory could not be reached or failed: ") {
			t.Fatalf("create with the directory down: %d %s", r.Status, r.Raw)
		}
		r = admin.Do(t, "GET", "/admin/service-identity", nil)
		if o := r.Object(t); o["mode"] != "did_web" || o["did"] != "did:web:example.com" {
			t.Fatalf("identity after the failure: %s", r.Raw)
		}
	})
}
