package oauthtest_test

import (
	"crypto/ecdsa"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lexview/lexview/internal/oauthtest"
	"github.com/lexview/lexview/oauth"
)

const did = "did:plc:alice"

type device struct {
	key     *ecdsa.PrivateKey
	signer  *oauth.Signer
	jkt     string
	access  string
	refresh string
}

func newDevice(t *testing.T, s *oauthtest.Server, now func() time.Time) *device {
	t.Helper()
	key, err := oauth.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	signer, err := oauth.NewSigner(key, now)
	if err != nil {
		t.Fatal(err)
	}
	d := &device{key: key, signer: signer, jkt: signer.JKT()}
	d.access, d.refresh = s.IssueTokens(did, d.jkt)
	return d
}

// call sends an authenticated request with a proof made by signer for
// (proofMethod, proofURL) and returns status, WWW-Authenticate and body.
func call(t *testing.T, s *oauthtest.Server, method, path, token, proof string, body io.Reader) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(method, s.URL+path, body)
	if token != "" {
		req.Header.Set("Authorization", "DPoP "+token)
	}
	if proof != "" {
		req.Header.Set("DPoP", proof)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), string(b)
}

func proof(t *testing.T, signer *oauth.Signer, method, u, token, nonce string) string {
	t.Helper()
	p, err := signer.NewProof(method, u, token, nonce)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const sessionPath = "/xrpc/com.atproto.server.getSession"

func TestResourceServerChecksDPoP(t *testing.T) {
	s := oauthtest.New(t, oauthtest.Options{})
	d := newDevice(t, s, nil)
	u := s.URL + sessionPath

	// Without the nonce: a challenge carrying it.
	status, wa, body := call(t, s, "GET", sessionPath, d.access, proof(t, d.signer, "GET", u, d.access, ""), nil)
	if status != 401 || !strings.Contains(wa, `error="use_dpop_nonce"`) || !strings.Contains(body, "use_dpop_nonce") {
		t.Fatalf("no nonce: %d %q %s", status, wa, body)
	}
	nonce := s.Nonce()
	good := proof(t, d.signer, "GET", u, d.access, nonce)
	if status, _, body := call(t, s, "GET", sessionPath, d.access, good, nil); status != 200 || !strings.Contains(body, did) {
		t.Fatalf("valid: %d %s", status, body)
	}

	other := newDevice(t, s, nil)
	old, _ := oauth.NewSigner(d.key, func() time.Time { return time.Now().Add(-6 * time.Minute) })
	for name, tc := range map[string]struct{ token, proof, want string }{
		"replay":        {d.access, good, "jti was already used"},
		"wrong htu":     {d.access, proof(t, d.signer, "GET", s.URL+"/xrpc/other", d.access, nonce), "htu"},
		"wrong host":    {d.access, proof(t, d.signer, "GET", "http://localhost"+sessionPath, d.access, nonce), "htu"},
		"wrong htm":     {d.access, proof(t, d.signer, "POST", u, d.access, nonce), "htm"},
		"wrong ath":     {d.access, proof(t, d.signer, "GET", u, other.access, nonce), "ath"},
		"no ath":        {d.access, proof(t, d.signer, "GET", u, "", nonce), "ath"},
		"old iat":       {d.access, proof(t, old, "GET", u, d.access, nonce), "iat"},
		"stale nonce":   {d.access, proof(t, d.signer, "GET", u, d.access, "bogus"), "use_dpop_nonce"},
		"other key":     {d.access, proof(t, other.signer, "GET", u, d.access, nonce), "another DPoP key"},
		"unknown token": {"at_forged", proof(t, d.signer, "GET", u, "at_forged", nonce), "unknown access token"},
		"no proof":      {d.access, "", "exactly one DPoP proof"},
		"garbage proof": {d.access, "a.b.c", "malformed"},
	} {
		status, wa, body := call(t, s, "GET", sessionPath, tc.token, tc.proof, nil)
		if status != 401 || !strings.Contains(wa, tc.want) {
			t.Errorf("%s: %d %q %s", name, status, wa, body)
		}
	}
	if status, wa, _ := call(t, s, "GET", sessionPath, "", "", nil); status != 401 || !strings.HasPrefix(wa, "DPoP") {
		t.Errorf("no authorization: %d %q", status, wa)
	}

	// Expired tokens.
	s.ExpireAccessTokens()
	status, wa, body = call(t, s, "GET", sessionPath, d.access, proof(t, d.signer, "GET", u, d.access, nonce), nil)
	if status != 401 || !strings.Contains(wa, `error="invalid_token", error_description="token expired"`) ||
		!strings.Contains(body, `"error":"ExpiredToken"`) {
		t.Fatalf("expired: %d %q %s", status, wa, body)
	}
}

func TestNonceRotation(t *testing.T) {
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s := oauthtest.New(t, oauthtest.Options{Now: clock, NonceRotation: time.Minute, AcceptPreviousNonce: true})
	first := s.Nonce()
	mu.Lock()
	now = now.Add(61 * time.Second)
	mu.Unlock()
	second := s.Nonce()
	if second == first {
		t.Fatal("nonce not rotated periodically")
	}
	d := newDevice(t, s, clock)
	u := s.URL + sessionPath
	// The previous nonce is still accepted when configured so.
	if status, _, body := call(t, s, "GET", sessionPath, d.access, proof(t, d.signer, "GET", u, d.access, first), nil); status != 200 {
		t.Fatalf("previous nonce: %d %s", status, body)
	}
	third := s.RotateNonce()
	if status, _, _ := call(t, s, "GET", sessionPath, d.access, proof(t, d.signer, "GET", u, d.access, first), nil); status != 401 {
		t.Fatal("nonce of two rotations ago accepted")
	}
	if status, _, _ := call(t, s, "GET", sessionPath, d.access, proof(t, d.signer, "GET", u, d.access, third), nil); status != 200 {
		t.Fatal("current nonce refused")
	}
}

func tokenRequest(t *testing.T, s *oauthtest.Server, signer *oauth.Signer, nonce string, form url.Values) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("POST", s.URL+"/oauth/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("DPoP", proof(t, signer, "POST", s.URL+"/oauth/token", "", nonce))
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	if resp.StatusCode == 400 && out["error"] == "use_dpop_nonce" && resp.Header.Get("DPoP-Nonce") == "" {
		t.Fatal("nonce challenge without DPoP-Nonce")
	}
	return resp.StatusCode, out
}

func TestTokenEndpoint(t *testing.T) {
	s := oauthtest.New(t, oauthtest.Options{ClientID: "https://app.example/cm.json"})
	d := newDevice(t, s, nil)
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {d.refresh}, "client_id": {"https://app.example/cm.json"}}

	if status, out := tokenRequest(t, s, d.signer, "", form); status != 400 || out["error"] != "use_dpop_nonce" {
		t.Fatalf("no nonce: %d %v", status, out)
	}
	other := newDevice(t, s, nil)
	if status, out := tokenRequest(t, s, other.signer, s.Nonce(), form); status != 400 || out["error"] != "invalid_grant" {
		t.Fatalf("other key: %d %v", status, out)
	}
	bad := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {d.refresh}, "client_id": {"https://evil.example"}}
	if status, out := tokenRequest(t, s, d.signer, s.Nonce(), bad); status != 400 || out["error"] != "invalid_client" {
		t.Fatalf("wrong client: %d %v", status, out)
	}
	status, out := tokenRequest(t, s, d.signer, s.Nonce(), form)
	if status != 200 || out["token_type"] != "DPoP" || out["sub"] != did || out["refresh_token"] == d.refresh ||
		out["access_token"] == "" || out["expires_in"] != float64(3600) || out["scope"] != "atproto transition:generic" {
		t.Fatalf("refresh: %d %v", status, out)
	}
	// The old refresh token is spent; the new access token works.
	if status, out := tokenRequest(t, s, d.signer, s.Nonce(), form); status != 400 || out["error"] != "invalid_grant" {
		t.Fatalf("reuse: %d %v", status, out)
	}
	access := out["access_token"].(string)
	u := s.URL + sessionPath
	if status, _, body := call(t, s, "GET", sessionPath, access, proof(t, d.signer, "GET", u, access, s.Nonce()), nil); status != 200 {
		t.Fatalf("new token: %d %s", status, body)
	}
	if st := s.Stats(); st.Refreshes != 1 || st.NonceChallenges != 1 || st.TokenRequests != 5 {
		t.Fatalf("stats %+v", st)
	}
}

func TestMetadataAndRecords(t *testing.T) {
	s := oauthtest.New(t, oauthtest.Options{})
	resp, err := s.Client().Get(s.URL + "/.well-known/oauth-authorization-server")
	if err != nil {
		t.Fatal(err)
	}
	var meta map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&meta)
	resp.Body.Close()
	if meta["issuer"] != s.URL || meta["token_endpoint"] != s.URL+"/oauth/token" {
		t.Fatalf("metadata %v", meta)
	}
	if _, err := s.SetProfile(did, json.RawMessage(`{"displayName":"Alice","description":"hi"}`)); err != nil {
		t.Fatal(err)
	}
	get := func(q string) (int, map[string]any) {
		resp, err := s.Client().Get(s.URL + "/xrpc/com.atproto.repo.getRecord?" + q)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	status, out := get("repo=" + did + "&collection=app.bsky.actor.profile&rkey=self")
	value, _ := out["value"].(map[string]any)
	if status != 200 || value["displayName"] != "Alice" || value["$type"] != "app.bsky.actor.profile" ||
		out["uri"] != "at://"+did+"/app.bsky.actor.profile/self" || !strings.HasPrefix(out["cid"].(string), "bafyrei") {
		t.Fatalf("profile: %d %v", status, out)
	}
	if status, out := get("repo=" + did + "&collection=app.bsky.actor.profile&rkey=other"); status != 400 || out["error"] != "RecordNotFound" {
		t.Fatalf("missing: %d %v", status, out)
	}
	if status, out := get("repo=" + did); status != 400 || out["error"] != "InvalidRequest" {
		t.Fatalf("bad params: %d %v", status, out)
	}
}

// TestOperations: createRecord, putRecord and deleteRecord are logged in
// order, a put of an unchanged record and a seed are not.
func TestOperations(t *testing.T) {
	s := oauthtest.New(t, oauthtest.Options{})
	d := newDevice(t, s, nil)
	if _, err := s.SeedRecord(did, "com.example.note", "seeded", json.RawMessage(`{"text":"seed"}`)); err != nil {
		t.Fatal(err)
	}
	write := func(nsid, body string) {
		t.Helper()
		path := "/xrpc/" + nsid
		status, _, answer := call(t, s, "POST", path, d.access, proof(t, d.signer, "POST", s.URL+path, d.access, s.Nonce()), strings.NewReader(body))
		if status != 200 {
			t.Fatalf("%s: %d %s", nsid, status, answer)
		}
	}
	write("com.atproto.repo.createRecord", `{"repo":"`+did+`","collection":"com.example.note","rkey":"a","record":{"text":"one"}}`)
	write("com.atproto.repo.putRecord", `{"repo":"`+did+`","collection":"com.example.note","rkey":"a","record":{"text":"two"}}`)
	write("com.atproto.repo.putRecord", `{"repo":"`+did+`","collection":"com.example.note","rkey":"a","record":{"text":"two"}}`)
	write("com.atproto.repo.deleteRecord", `{"repo":"`+did+`","collection":"com.example.note","rkey":"a"}`)
	var got []string
	for _, op := range s.Operations() {
		got = append(got, op.Action+" "+op.URI+" "+string(op.Value))
	}
	want := []string{
		"create at://" + did + `/com.example.note/a {"$type":"com.example.note","text":"one"}`,
		"update at://" + did + `/com.example.note/a {"$type":"com.example.note","text":"two"}`,
		"delete at://" + did + "/com.example.note/a ",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("operations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
