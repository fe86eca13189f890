package appview_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/service/profiles"
	"github.com/lexview/lexview/appview/internal/testing/refpds"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/appview/internal/web/fixed"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/oauth"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// Lexicons of the end-to-end test: notes in com.example.note, written
// through a procedure and read through a query.
var refNoteLexicons = []lexicon.Upload{
	{Document: json.RawMessage(`{"lexicon":1,"id":"com.example.note","defs":{"main":{"type":"record","key":"tid","record":{"type":"object","required":["text"],"properties":{"text":{"type":"string"},"createdAt":{"type":"string","format":"datetime"}}}}}}`)},
	{Document: json.RawMessage(`{"lexicon":1,"id":"com.example.createNote","defs":{"main":{"type":"procedure","input":{"encoding":"application/json"}}}}`), TargetCollection: "com.example.note"},
	{Document: json.RawMessage(`{"lexicon":1,"id":"com.example.getNotes","defs":{"main":{"type":"query"}}}`), TargetCollection: "com.example.note"},
}

// TestReferencePDSOAuth is the write path end to end against the Bluesky
// reference PDS: an app provisions a DPoP key from Lexview, signs a user
// in at the PDS's own authorization server with it (driven over HTTP, no
// browser: see refpds_signin_test.go), registers the DPoP-bound tokens
// with Lexview, and writes through Lexview: a procedure proxied as
// createRecord and putRecord, blobs through uploadBlob (one large enough
// to be streamed); the results are read back from the PDS and from
// Lexview, and getProfile resolves the user through the PLC directory.
func TestReferencePDSOAuth(t *testing.T) {
	t.Parallel()
	n := refpds.Start(t)
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		ctx := context.Background()
		env := testenv.New(t, open(t), appview.Config{Network: appview.NetworkConfig{PLCURL: n.PLCURL}})
		for _, up := range refNoteLexicons {
			if _, err := env.App.Lexicons().Put(ctx, up); err != nil {
				t.Fatal(err)
			}
		}
		alice := n.CreateAccount(t, "oauth-"+t.Name()[strings.LastIndexByte(t.Name(), '/')+1:])

		// The app: a confidential API client whose client_id is an atproto
		// loopback client id (no published metadata needed).
		const redirectURI, scope = "http://127.0.0.1/callback", "atproto transition:generic"
		app, secret := env.NewClient(t, apiclients.NewClient{
			Name: "headless app", ClientIDURL: loopbackClientID(redirectURI, scope), ClientURI: "http://127.0.0.1/",
			RedirectURIs: []string{redirectURI}, Scopes: scope,
		})
		creds := []string{"X-Client-Key", app.Key, "X-Client-Secret", secret}

		// 1. Lexview provisions the device's DPoP key.
		r := env.Do(t, "POST", "/oauth/dpop-keys", map[string]any{}, creds...)
		var prov struct {
			ProvisionID string           `json:"provision_id"`
			DPoPKey     oauth.PrivateJWK `json:"dpop_key"`
		}
		if r.Status != 200 {
			t.Fatalf("provision: %d %s", r.Status, r.Raw)
		}
		r.JSON(t, &prov)
		priv, err := prov.DPoPKey.Key()
		if err != nil {
			t.Fatal(err)
		}
		signer, err := oauth.NewSigner(priv, nil)
		if err != nil {
			t.Fatal(err)
		}

		// 2. The app signs alice in at her PDS with that key.
		started := time.Now()
		flow := newHeadlessSignIn(t, signer, redirectURI, scope)
		tokens := flow.run(n.PDSPublicURL, alice.Handle, alice.Password)
		t.Logf("OAuth sign-in at the reference PDS (PAR, authorize, sign-in, consent, redirect, token): %v",
			time.Since(started).Round(time.Millisecond))
		if tokens.TokenType != "DPoP" || tokens.Sub != alice.DID || !strings.Contains(" "+tokens.Scope+" ", " atproto ") {
			t.Fatalf("tokens: type %q sub %q scope %q", tokens.TokenType, tokens.Sub, tokens.Scope)
		}
		if claims, err := jwtClaims(tokens.AccessToken); err != nil {
			t.Logf("the access token is opaque (%v): its DPoP binding shows only in use", err)
		} else if cnf, _ := claims["cnf"].(map[string]any); cnf["jkt"] != signer.JKT() {
			t.Fatalf("access token bound to %v, not to the provisioned key %s", cnf, signer.JKT())
		}

		// 3. It registers the tokens with Lexview.
		r = env.Do(t, "POST", "/oauth/sessions", map[string]any{
			"provision_id": prov.ProvisionID, "did": tokens.Sub, "access_token": tokens.AccessToken,
			"refresh_token": tokens.RefreshToken, "scopes": tokens.Scope,
			"expires_at": time.Now().Add(time.Duration(tokens.ExpiresIn) * time.Second).UTC().Format(time.RFC3339),
			"pds_url":    n.PDSPublicURL, "issuer": flow.meta.Issuer,
		}, creds...)
		if r.Status != 200 || r.Object(t)["did"] != alice.DID {
			t.Fatalf("register: %d %s", r.Status, r.Raw)
		}
		d := &testenv.Device{Env: env, Client: testenv.AppClient{Key: app.Key, Secret: secret}, DID: alice.DID,
			Signer: signer, AccessToken: tokens.AccessToken, SessionID: r.Object(t)["session_id"].(string)}

		// 4. A procedure through Lexview: createRecord on the real PDS.
		r = d.Call(t, "POST", "/xrpc/com.example.createNote", map[string]any{
			"text": "hello through Lexview", "createdAt": time.Now().UTC().Format(time.RFC3339),
		})
		if r.Status != 200 {
			t.Fatalf("createNote: %d %s", r.Status, r.Raw)
		}
		var created struct{ URI, CID string }
		r.JSON(t, &created)
		if !strings.HasPrefix(created.URI, "at://"+alice.DID+"/com.example.note/") || created.CID == "" {
			t.Fatalf("createNote answer: %s", r.Raw)
		}
		checkNote(t, n, env, app.Key, created.URI, "hello through Lexview")

		// putRecord (the body names the record).
		r = d.Call(t, "POST", "/xrpc/com.example.createNote", map[string]any{
			"uri": created.URI, "text": "edited through Lexview", "createdAt": time.Now().UTC().Format(time.RFC3339),
		})
		if r.Status != 200 {
			t.Fatalf("createNote with uri: %d %s", r.Status, r.Raw)
		}
		checkNote(t, n, env, app.Key, created.URI, "edited through Lexview")
		list := env.Do(t, "GET", "/xrpc/com.example.getNotes?did="+url.QueryEscape(alice.DID), nil, "X-Client-Key", app.Key)
		if recs, _ := list.Object(t)["records"].([]any); list.Status != 200 || len(recs) != 1 {
			t.Fatalf("getNotes list: %d %s", list.Status, list.Raw)
		}

		// 5. uploadBlob through Lexview: a 1.5 MiB body (streamed after a
		// pre-flight) and an avatar image, then getProfile.
		big := make([]byte, 3<<19)
		_, _ = rand.Read(big)
		if r := uploadAs(t, d, big, "application/octet-stream"); r.Status != 200 {
			t.Fatalf("uploadBlob (1.5 MiB): %d %s", r.Status, r.Raw)
		}
		avatar := pngBytes(t)
		r = uploadAs(t, d, avatar, "image/png")
		var up struct {
			Blob map[string]any `json:"blob"`
		}
		if r.Status != 200 {
			t.Fatalf("uploadBlob (avatar): %d %s", r.Status, r.Raw)
		}
		r.JSON(t, &up)
		alice.PutRecord(t, "app.bsky.actor.profile", "self", map[string]any{
			"displayName": "Alice", "description": "signed in without a browser", "avatar": up.Blob,
		})
		r = d.Call(t, "GET", fixed.GetProfilePath, nil)
		var p profiles.Profile
		if r.Status != 200 {
			t.Fatalf("getProfile: %d %s", r.Status, r.Raw)
		}
		r.JSON(t, &p)
		cid, _ := up.Blob["ref"].(map[string]any)["$link"].(string)
		wantURL := n.PDSPublicURL + "/xrpc/com.atproto.sync.getBlob?did=" + url.QueryEscape(alice.DID) + "&cid=" + cid
		if p.DID != alice.DID || p.Handle != alice.Handle || p.DisplayName != "Alice" ||
			p.Description != "signed in without a browser" || p.AvatarURL != wantURL {
			t.Fatalf("getProfile: %+v (avatar URL want %s)", p, wantURL)
		}
		if got := fetch(t, p.AvatarURL); !bytes.Equal(got, avatar) {
			t.Fatalf("the avatar at %s is %d bytes, not the %d uploaded", p.AvatarURL, len(got), len(avatar))
		}
	})
}

// checkNote reads a note back from the PDS (getRecord) and from Lexview
// (the query lexicon) and checks its text.
func checkNote(t *testing.T, n *refpds.Network, env *testenv.Env, clientKey, uri, text string) {
	t.Helper()
	parts := strings.Split(strings.TrimPrefix(uri, "at://"), "/")
	var rec struct {
		URI   string         `json:"uri"`
		Value map[string]any `json:"value"`
	}
	n.Query(t, "com.atproto.repo.getRecord", url.Values{"repo": {parts[0]}, "collection": {parts[1]}, "rkey": {parts[2]}}, &rec)
	if rec.URI != uri || rec.Value["text"] != text || rec.Value["$type"] != "com.example.note" {
		t.Fatalf("on the PDS: %+v, want text %q", rec, text)
	}
	r := env.Do(t, "GET", "/xrpc/com.example.getNotes?uri="+url.QueryEscape(uri), nil, "X-Client-Key", clientKey)
	got, _ := r.Object(t)["record"].(map[string]any)
	if r.Status != 200 || got["text"] != text || got["uri"] != uri {
		t.Fatalf("from Lexview: %d %s, want text %q", r.Status, r.Raw, text)
	}
}

// uploadAs posts a blob to Lexview's uploadBlob as the device.
func uploadAs(t *testing.T, d *testenv.Device, blob []byte, contentType string) testenv.Response {
	t.Helper()
	return d.Call(t, "POST", fixed.UploadBlobPath, blob, "Content-Type", contentType)
}

// pngBytes returns a small PNG image.
func pngBytes(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 32, 32))
	for x := range 32 {
		for y := range 32 {
			img.Set(x, y, color.RGBA{R: uint8(x * 8), G: uint8(y * 8), B: 128, A: 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// fetch GETs a public URL.
func fetch(t *testing.T, u string) []byte {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %.200s", u, resp.StatusCode, b)
	}
	return b
}
