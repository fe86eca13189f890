// Command thirdparty is a third-party app's side of Lexview's "writing for
// users" flow (docs/oauth.md), over HTTP only:
//
//  1. POST /oauth/dpop-keys: Lexview provisions a DPoP key for this device.
//  2. The app runs the atproto OAuth flow with the user's PDS, using that
//     key, and gets the user's access and refresh tokens.
//  3. POST /oauth/sessions: the app registers the tokens with Lexview.
//  4. A procedure call (a write, proxied to the user's PDS) and a query
//     (reading the record back), both DPoP-authenticated.
//  5. GET /oauth/sessions/{did}/devices, then DELETE /oauth/sessions/{did}
//     signs this device out.
//
// With -demo the program is self-contained: it embeds a Lexview instance,
// a PDS + authorization server stand-in and a PLC directory stand-in, and
// runs the same steps against them over real HTTP:
//
//	go run ./examples/thirdparty -demo
//
// Against a real instance, a person has to sign in at step 2, so run it
// twice. The first run provisions the key, saves it in -state and prints
// what the app must do; the second registers the tokens the OAuth flow
// produced and runs steps 3 to 5:
//
//	go run ./examples/thirdparty -lexview https://appview.example \
//	    -client-key hvc_... -client-secret hvs_... -did did:plc:...
//	go run ./examples/thirdparty -lexview https://appview.example \
//	    -client-key hvc_... -client-secret hvs_... -did did:plc:... \
//	    -pds https://pds.example -issuer https://auth.example \
//	    -access-token ... -refresh-token ... -expires-at 2026-11-21T15:00:00Z \
//	    -scopes "atproto transition:generic"
//
// The -state file holds the device's private key between the two runs
// (mode 0600); a real app keeps it in its own secret storage. The app here
// is a confidential client (key and secret); a public client sends an
// Origin instead of the secret and protects provisioning with PKCE (see
// docs/oauth.md).
//
// The procedure and query (-procedure, -query) must be lexicons of the
// instance with a target_collection whose records take a text and a
// createdAt, like the ones -demo uploads.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/lexview/lexview/oauth"
)

// options are the command-line flags.
type options struct {
	lexview, clientKey, clientSecret, did string
	pds, issuer                           string
	accessToken, refreshToken, expiresAt  string
	scopes, procedure, query, text, state string
	demo                                  bool
}

func main() {
	var o options
	flag.StringVar(&o.lexview, "lexview", "http://127.0.0.1:3000", "Lexview's public URL")
	flag.StringVar(&o.clientKey, "client-key", "", "API client key (hvc_...)")
	flag.StringVar(&o.clientSecret, "client-secret", "", "API client secret (hvs_...)")
	flag.StringVar(&o.did, "did", "", "the user's DID")
	flag.StringVar(&o.pds, "pds", "", "the user's PDS URL (found during the OAuth flow)")
	flag.StringVar(&o.issuer, "issuer", "", "the authorization server's issuer (found during the OAuth flow)")
	flag.StringVar(&o.accessToken, "access-token", "", "the user's access token, from the OAuth flow (second run)")
	flag.StringVar(&o.refreshToken, "refresh-token", "", "the user's refresh token, from the OAuth flow")
	flag.StringVar(&o.expiresAt, "expires-at", "", "when the access token expires (RFC 3339)")
	flag.StringVar(&o.scopes, "scopes", "atproto", "the scopes the authorization server granted")
	flag.StringVar(&o.procedure, "procedure", "com.example.createNote", "procedure NSID (writes a record)")
	flag.StringVar(&o.query, "query", "com.example.listNotes", "query NSID (reads it back)")
	flag.StringVar(&o.text, "text", "hello from a third-party app", "text of the record to write")
	flag.StringVar(&o.state, "state", "thirdparty-device.json", "file keeping the provisioned key between the two runs")
	flag.BoolVar(&o.demo, "demo", false, "run against an embedded Lexview and PDS stand-in")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "thirdparty:", err)
		os.Exit(1)
	}
}

// run performs the steps, printing each to out.
func run(ctx context.Context, o options, out io.Writer) error {
	// signIn stands in for step 2 in -demo mode; nil means a person signs
	// in, between two runs of this program.
	var signIn func(ctx context.Context, did, jkt string) (Tokens, error)
	var d *demo
	if o.demo {
		var err error
		d, err = startDemo(ctx)
		if err != nil {
			return fmt.Errorf("start the demo: %w", err)
		}
		defer d.Close()
		o.lexview, o.clientKey, o.clientSecret, o.did = d.LexviewURL, d.ClientKey, d.ClientSecret, d.DID
		signIn = d.SignIn
		fmt.Fprintf(out, "demo: Lexview at %s, PDS and authorization server at %s, user %s\n", d.LexviewURL, d.PDSURL, d.DID)
	}
	if o.clientKey == "" || o.did == "" {
		return errors.New("-client-key and -did are required (or -demo)")
	}
	lv := &Lexview{BaseURL: strings.TrimRight(o.lexview, "/"), ClientKey: o.clientKey, ClientSecret: o.clientSecret,
		HTTP: &http.Client{Timeout: 30 * time.Second}}

	// Step 1: provision this device's DPoP key, or (second run) load the
	// one the first run provisioned.
	var prov Provision
	var signer *oauth.Signer
	var err error
	if signIn != nil || o.accessToken == "" {
		if prov, signer, err = lv.ProvisionKey(ctx); err != nil {
			return err
		}
		fmt.Fprintf(out, "1. POST /oauth/dpop-keys: provision %s..., DPoP key thumbprint (jkt) %s\n",
			prov.ProvisionID[:min(8, len(prov.ProvisionID))], signer.JKT())
	} else {
		if prov, signer, err = loadState(o.state); err != nil {
			return err
		}
		fmt.Fprintf(out, "1. loaded the provisioned DPoP key from %s (jkt %s)\n", o.state, signer.JKT())
	}

	// Step 2: the OAuth flow with the user's PDS, with that key.
	var tok Tokens
	switch {
	case signIn != nil:
		if tok, err = signIn(ctx, o.did, signer.JKT()); err != nil {
			return fmt.Errorf("sign in: %w", err)
		}
		fmt.Fprintf(out, "2. OAuth: tokens issued for %s by %s, bound to the key, scopes %q\n", o.did, tok.Issuer, tok.Scopes)
	case o.accessToken == "":
		if err := saveState(o.state, prov); err != nil {
			return err
		}
		printInstructions(out, o, signer.JKT())
		return nil
	default:
		if tok, err = tokensFromFlags(o); err != nil {
			return err
		}
		fmt.Fprintf(out, "2. OAuth: using the tokens given for %s (issuer %s)\n", o.did, tok.Issuer)
	}

	// Step 3: register the session. The provision is consumed.
	dev, err := lv.RegisterSession(ctx, prov, signer, o.did, tok)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "3. POST /oauth/sessions: session %s for %s\n", dev.SessionID, dev.DID)
	if err := writeReadSignOut(ctx, lv, dev, o, out); err != nil {
		return err
	}
	if d != nil {
		d.Report(out)
	}
	return nil
}

// writeReadSignOut runs steps 4 and 5 as the signed-in device.
func writeReadSignOut(ctx context.Context, lv *Lexview, dev *Device, o options, out io.Writer) error {
	// Step 4a: a procedure call. Lexview writes the body as a record to the
	// user's PDS (createRecord; with a "uri" it would be putRecord) and
	// indexes it before answering with the PDS's answer.
	note := map[string]any{"text": o.text, "createdAt": time.Now().UTC().Format(time.RFC3339)}
	r, err := lv.Call(ctx, dev, "POST", "/xrpc/"+o.procedure, note)
	if err == nil {
		err = r.Expect(http.StatusOK)
	}
	var written struct{ URI, CID string }
	if err == nil {
		err = r.Decode(&written)
	}
	if err != nil {
		return fmt.Errorf("procedure %s: %w", o.procedure, err)
	}
	fmt.Fprintf(out, "4a. POST /xrpc/%s: wrote %s\n", o.procedure, written.URI)

	// Step 4b: a query reads it back at once. Queries take the same DPoP
	// authentication (optional for them); the query string is not part of
	// the proof's htu.
	r, err = lv.Call(ctx, dev, "GET", "/xrpc/"+o.query+"?uri="+url.QueryEscape(written.URI), nil)
	if err == nil {
		err = r.Expect(http.StatusOK)
	}
	var read struct {
		Record struct {
			URI  string `json:"uri"`
			Text string `json:"text"`
		} `json:"record"`
	}
	if err == nil {
		err = r.Decode(&read)
	}
	if err != nil {
		return fmt.Errorf("query %s: %w", o.query, err)
	}
	if read.Record.Text != o.text {
		return fmt.Errorf("query %s read back %q, want %q", o.query, read.Record.Text, o.text)
	}
	fmt.Fprintf(out, "4b. GET /xrpc/%s?uri=...: read back %q\n", o.query, read.Record.Text)

	// Step 5a: the user's devices, as this device sees them (DPoP works
	// here, as does the client key and secret).
	devicesPath := "/oauth/sessions/" + dev.DID + "/devices"
	type device struct {
		ID     string   `json:"id"`
		Scopes []string `json:"scopes"`
	}
	var devices []device
	r, err = lv.Call(ctx, dev, "GET", devicesPath, nil)
	if err == nil {
		err = r.Expect(http.StatusOK)
	}
	if err == nil {
		err = r.Decode(&devices)
	}
	if err != nil {
		return fmt.Errorf("list devices: %w", err)
	}
	if !slices.ContainsFunc(devices, func(x device) bool { return x.ID == dev.SessionID }) {
		return fmt.Errorf("list devices: session %s is not listed", dev.SessionID)
	}
	fmt.Fprintf(out, "5a. GET %s: %d device(s), this one among them\n", devicesPath, len(devices))

	// Step 5b: sign out. With a DPoP proof, DELETE signs out only the
	// device whose key made the proof; with the client key and secret it
	// would sign the user out of every device.
	r, err = lv.Call(ctx, dev, "DELETE", "/oauth/sessions/"+dev.DID, nil)
	if err == nil {
		err = r.Expect(http.StatusNoContent)
	}
	if err != nil {
		return fmt.Errorf("sign out: %w", err)
	}
	fmt.Fprintf(out, "5b. DELETE /oauth/sessions/%s: signed out this device\n", dev.DID)

	// Step 5c: check, as the app itself (client key and secret), that the
	// device is gone, and that its calls are refused from now on.
	r, err = lv.AsClient(ctx, "GET", devicesPath, nil)
	if err == nil {
		err = r.Expect(http.StatusOK)
	}
	if err == nil {
		err = r.Decode(&devices)
	}
	if err != nil {
		return fmt.Errorf("list devices after sign-out: %w", err)
	}
	if slices.ContainsFunc(devices, func(x device) bool { return x.ID == dev.SessionID }) {
		return fmt.Errorf("session %s is still listed after sign-out", dev.SessionID)
	}
	r, err = lv.Call(ctx, dev, "POST", "/xrpc/"+o.procedure, note)
	if err == nil {
		err = r.Expect(http.StatusUnauthorized)
	}
	if err != nil {
		return fmt.Errorf("call after sign-out: %w", err)
	}
	fmt.Fprintf(out, "5c. devices left: %d; the device's next write is refused: %d %s\n",
		len(devices), r.Status, strings.TrimSpace(string(r.Body)))
	return nil
}

// printInstructions tells what the app must do at step 2 when a person
// signs in, and how to continue.
func printInstructions(out io.Writer, o options, jkt string) {
	fmt.Fprintf(out, `2. Now run the atproto OAuth flow for %s, with the DPoP key saved in %s
   (a private P-256 JWK, thumbprint %s) as the DPoP key of every request:
   a. resolve the DID to its PDS, and the PDS's /.well-known/oauth-protected-resource
      to its authorization server; read that server's /.well-known/oauth-authorization-server;
   b. push the authorization request (PAR) with a DPoP proof of the key, answering
      the server's DPoP-Nonce challenge, and send the user to the authorization endpoint;
   c. exchange the code at the token endpoint, again with a DPoP proof of the key
      (a confidential client without keys of its own gets a client assertion from
      POST /oauth/client-assertion).
   Then, within 10 minutes (the provision expires), run again with the same flags plus:
      -pds PDS_URL -issuer ISSUER -access-token ACCESS -refresh-token REFRESH
      -expires-at RFC3339 -scopes "SCOPES AS GRANTED"
`, o.did, o.state, jkt)
}

// tokensFromFlags reads step 2's outcome from the flags.
func tokensFromFlags(o options) (Tokens, error) {
	if o.refreshToken == "" || o.pds == "" || o.issuer == "" || o.expiresAt == "" {
		return Tokens{}, errors.New("-refresh-token, -expires-at, -pds and -issuer are required with -access-token")
	}
	exp, err := time.Parse(time.RFC3339, o.expiresAt)
	if err != nil {
		return Tokens{}, fmt.Errorf("-expires-at: %w", err)
	}
	return Tokens{AccessToken: o.accessToken, RefreshToken: o.refreshToken, ExpiresAt: exp,
		Scopes: o.scopes, PDSURL: o.pds, Issuer: o.issuer}, nil
}

// saveState keeps the provision between the two runs. The file holds a
// private key: it is written readable by its owner only.
func saveState(path string, p Provision) error {
	raw, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, raw, 0o600)
}

// loadState reads what saveState kept.
func loadState(path string) (Provision, *oauth.Signer, error) {
	var p Provision
	raw, err := os.ReadFile(path)
	if err != nil {
		return p, nil, fmt.Errorf("the provisioned key (run once without -access-token first): %w", err)
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return p, nil, fmt.Errorf("%s: %w", path, err)
	}
	signer, err := SignerFor(p.DPoPKey)
	return p, signer, err
}
