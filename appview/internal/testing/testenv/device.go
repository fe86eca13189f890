package testenv

import (
	"crypto/ecdsa"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/internal/oauthtest"
	"github.com/lexview/lexview/oauth"
)

// AppClient is how an app authenticates its /oauth/* calls: a
// confidential client sends its key and secret, a public client its key
// and an Origin among its allowed origins (and PKCE, which SignIn does).
type AppClient struct {
	Key    string
	Secret string // confidential clients
	Origin string // public clients
}

// headers returns the client credentials as name, value pairs.
func (c AppClient) headers() []string {
	h := []string{"X-Client-Key", c.Key}
	if c.Secret != "" {
		h = append(h, "X-Client-Secret", c.Secret)
	}
	if c.Origin != "" {
		h = append(h, "Origin", c.Origin)
	}
	return h
}

// Device is one device of an app signed in through Lexview's DPoP flow:
// its provisioned key and the tokens registered for it.
type Device struct {
	Env         *Env
	Client      AppClient
	DID         string
	Signer      *oauth.Signer
	Key         *ecdsa.PrivateKey // the provisioned DPoP key
	AccessToken string
	SessionID   string
}

// pkceVerifier is the PKCE verifier public clients use in tests.
const pkceVerifier = "lexview-test-pkce-verifier-0123456789-abcdefghijklmnop"

// SignIn provisions a DPoP key for client, obtains tokens bound to it from
// the PDS stand-in (standing in for the app's own OAuth flow with the
// user's PDS) and registers the session; did's document names pds as its
// PDS (see PLC.HostOn). It checks that the provision is
// single-use.
func (e *Env) SignIn(t testing.TB, pds *oauthtest.Server, client AppClient, did string) *Device {
	t.Helper()
	prov := e.Provision(t, client)
	e.PLC.HostOn(did, pds.URL)
	access, refresh := pds.IssueTokens(did, prov.Signer.JKT())
	reg := prov.Registration(did, access, refresh, pds.URL)
	r := e.Do(t, "POST", "/oauth/sessions", reg, client.headers()...)
	if r.Status != 200 || r.Object(t)["did"] != did {
		t.Fatalf("register: %d %s", r.Status, r.Raw)
	}
	// A provision is single-use.
	if again := e.Do(t, "POST", "/oauth/sessions", reg, client.headers()...); again.Status != 400 {
		t.Fatalf("provision reused: %d %s", again.Status, again.Raw)
	}
	id, _ := r.Object(t)["session_id"].(string)
	return &Device{Env: e, Client: client, DID: did, Signer: prov.Signer, Key: prov.Key, AccessToken: access, SessionID: id}
}

// Provision is a DPoP key provisioned for one device of an app.
type Provision struct {
	ID     string // provision_id
	Key    *ecdsa.PrivateKey
	Signer *oauth.Signer
	public bool
}

// Provision asks the instance for a DPoP key for a device of client (with
// PKCE for a public client).
func (e *Env) Provision(t testing.TB, client AppClient) Provision {
	t.Helper()
	body := map[string]any{}
	if client.Secret == "" {
		body["pkce_challenge"] = oauth.PKCEChallenge(pkceVerifier)
	}
	r := e.Do(t, "POST", "/oauth/dpop-keys", body, client.headers()...)
	if r.Status != 200 {
		t.Fatalf("provision: %d %s", r.Status, r.Raw)
	}
	var prov struct {
		ProvisionID string           `json:"provision_id"`
		DPoPKey     oauth.PrivateJWK `json:"dpop_key"`
	}
	r.JSON(t, &prov)
	if !strings.HasPrefix(prov.ProvisionID, "hvp_") || prov.DPoPKey.D == "" {
		t.Fatalf("provision body: %s", r.Raw)
	}
	priv, err := prov.DPoPKey.Key()
	if err != nil {
		t.Fatal(err)
	}
	signer, err := oauth.NewSigner(priv, nil)
	if err != nil {
		t.Fatal(err)
	}
	return Provision{ID: prov.ProvisionID, Key: priv, Signer: signer, public: client.Secret == ""}
}

// Registration is the POST /oauth/sessions body registering tokens for
// did, issued by the PDS (and authorization server) at pds, for p.
func (p Provision) Registration(did, access, refresh, pds string) map[string]any {
	reg := map[string]any{
		"provision_id": p.ID, "did": did, "access_token": access, "refresh_token": refresh,
		"expires_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339), "scopes": "atproto",
		"pds_url": pds, "issuer": pds,
	}
	if p.public {
		reg["pkce_verifier"] = pkceVerifier
	}
	return reg
}

// Headers returns the client's credentials as name, value pairs.
func (c AppClient) Headers() []string { return c.headers() }

// Proof returns a fresh DPoP proof of the device for method and path (its
// query, if any, is not part of the proof's htu).
func (d *Device) Proof(t testing.TB, method, path string) string {
	t.Helper()
	proof, err := d.Signer.NewProof(method, d.Env.URL+path, d.AccessToken, "")
	if err != nil {
		t.Fatal(err)
	}
	return proof
}

// Call makes a DPoP-authenticated request to Lexview with the device's
// client key, access token and a fresh proof; headers are extra name,
// value pairs.
func (d *Device) Call(t testing.TB, method, path string, body any, headers ...string) Response {
	t.Helper()
	h := append([]string{"X-Client-Key", d.Client.Key, "Authorization", "DPoP " + d.AccessToken,
		"DPoP", d.Proof(t, method, path)}, headers...)
	return d.Env.Do(t, method, path, body, h...)
}
