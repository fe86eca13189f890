package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/lexview/lexview/oauth"
)

// Lexview is a third-party app's HTTP client for one Lexview instance. It
// holds what identifies the app: its API client key and, for a
// confidential client, its secret. Nothing here is specific to the demo:
// this is the part to copy.
type Lexview struct {
	// BaseURL is Lexview's public URL (its PUBLIC_URL), without a trailing
	// slash. DPoP proofs name it: htu is BaseURL plus the request path.
	BaseURL string
	// ClientKey (hvc_...) and ClientSecret (hvs_...) authenticate the
	// app's /oauth/* calls. A public client has no secret; it sends an
	// Origin and uses PKCE instead (see docs/oauth.md).
	ClientKey, ClientSecret string
	// HTTP sends the requests.
	HTTP *http.Client
}

// Device is one signed-in device of the app: the DPoP key Lexview
// provisioned for it and the session registered with that key.
type Device struct {
	DID         string        // the user
	Signer      *oauth.Signer // makes DPoP proofs with the device's key
	AccessToken string        // the user's access token, bound to that key
	SessionID   string        // Lexview's id of this device's session
}

// Provision is the answer of POST /oauth/dpop-keys.
type Provision struct {
	// ProvisionID is single-use and expires after 10 minutes: register
	// the session before then.
	ProvisionID string `json:"provision_id"`
	// DPoPKey is the device's private P-256 key, as a JWK.
	DPoPKey oauth.PrivateJWK `json:"dpop_key"`
}

// Tokens are the outcome of the OAuth flow with the user's PDS (step 2).
type Tokens struct {
	AccessToken, RefreshToken string
	ExpiresAt                 time.Time
	Scopes                    string // as granted, e.g. "atproto transition:generic"
	PDSURL, Issuer            string // the user's PDS and its authorization server
}

// Reply is an HTTP answer from Lexview.
type Reply struct {
	Status int
	Body   []byte
}

// Decode decodes a JSON body into v.
func (r Reply) Decode(v any) error {
	if err := json.Unmarshal(r.Body, v); err != nil {
		return fmt.Errorf("status %d: body is not the expected JSON: %q", r.Status, r.Body)
	}
	return nil
}

// Expect returns an error unless the status is want.
func (r Reply) Expect(want int) error {
	if r.Status != want {
		return fmt.Errorf("status %d (want %d): %s", r.Status, want, strings.TrimSpace(string(r.Body)))
	}
	return nil
}

// ProvisionKey is step 1: POST /oauth/dpop-keys asks Lexview for a fresh
// DPoP key for this device. It returns the provision and a Signer for the
// key, to use for the whole OAuth flow and every later call.
func (lv *Lexview) ProvisionKey(ctx context.Context) (Provision, *oauth.Signer, error) {
	var p Provision
	r, err := lv.do(ctx, "POST", "/oauth/dpop-keys", map[string]any{}, lv.clientHeaders())
	if err == nil {
		err = r.Expect(http.StatusOK)
	}
	if err == nil {
		err = r.Decode(&p)
	}
	if err != nil {
		return p, nil, fmt.Errorf("provision a DPoP key: %w", err)
	}
	signer, err := SignerFor(p.DPoPKey)
	return p, signer, err
}

// SignerFor turns a provisioned JWK into a DPoP Signer.
func SignerFor(jwk oauth.PrivateJWK) (*oauth.Signer, error) {
	key, err := jwk.Key() // checks that x and y belong to d
	if err != nil {
		return nil, err
	}
	return oauth.NewSigner(key, nil)
}

// RegisterSession is step 3: POST /oauth/sessions hands the user's tokens
// to Lexview, which stores them sealed with the provisioned key. The
// provision is consumed. It returns the signed-in device.
func (lv *Lexview) RegisterSession(ctx context.Context, p Provision, signer *oauth.Signer, did string, t Tokens) (*Device, error) {
	body := map[string]any{
		"provision_id":  p.ProvisionID,
		"did":           did,
		"access_token":  t.AccessToken,
		"refresh_token": t.RefreshToken,
		"expires_at":    t.ExpiresAt.UTC().Format(time.RFC3339),
		"scopes":        t.Scopes, // must contain atproto and be within the client's scopes
		"pds_url":       t.PDSURL,
		"issuer":        t.Issuer,
	}
	var out struct {
		SessionID string `json:"session_id"`
		DID       string `json:"did"`
	}
	r, err := lv.do(ctx, "POST", "/oauth/sessions", body, lv.clientHeaders())
	if err == nil {
		err = r.Expect(http.StatusOK)
	}
	if err == nil {
		err = r.Decode(&out)
	}
	if err != nil {
		return nil, fmt.Errorf("register the session: %w", err)
	}
	return &Device{DID: out.DID, Signer: signer, AccessToken: t.AccessToken, SessionID: out.SessionID}, nil
}

// Call makes a request as the user, from device d (steps 4 and 5): the
// client key, the access token as `Authorization: DPoP`, and a fresh DPoP
// proof for exactly this method and URL. Every proof is accepted once, so
// a retry needs a new one: call Call again. body is sent as JSON unless
// nil.
func (lv *Lexview) Call(ctx context.Context, d *Device, method, path string, body any) (Reply, error) {
	// htu is Lexview's public URL plus the path as sent; NewProof drops
	// the query string, and binds the proof to the token (ath).
	proof, err := d.Signer.NewProof(method, lv.BaseURL+path, d.AccessToken, "")
	if err != nil {
		return Reply{}, err
	}
	h := http.Header{}
	h.Set("X-Client-Key", lv.ClientKey)
	h.Set("Authorization", "DPoP "+d.AccessToken)
	h.Set("DPoP", proof)
	return lv.do(ctx, method, path, body, h)
}

// AsClient makes a request as the app itself (client key and secret), for
// the calls a confidential client may make without a user: listing a
// user's devices, signing a user out everywhere.
func (lv *Lexview) AsClient(ctx context.Context, method, path string, body any) (Reply, error) {
	return lv.do(ctx, method, path, body, lv.clientHeaders())
}

// clientHeaders are the app's credentials for /oauth/* calls.
func (lv *Lexview) clientHeaders() http.Header {
	h := http.Header{}
	h.Set("X-Client-Key", lv.ClientKey)
	if lv.ClientSecret != "" {
		h.Set("X-Client-Secret", lv.ClientSecret)
	}
	return h
}

// do sends one request and reads the whole answer.
func (lv *Lexview) do(ctx context.Context, method, path string, body any, h http.Header) (Reply, error) {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return Reply{}, err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, lv.BaseURL+path, rd)
	if err != nil {
		return Reply{}, err
	}
	req.Header = h
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := lv.HTTP.Do(req)
	if err != nil {
		return Reply{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return Reply{}, err
	}
	return Reply{Status: resp.StatusCode, Body: raw}, nil
}
