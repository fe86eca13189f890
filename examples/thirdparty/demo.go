package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/internal/oauthtest"
	"github.com/lexview/lexview/lexicon"
)

// The lexicons -demo uploads: a record, a procedure writing it and a query
// reading it, both with the record's collection as target_collection.
const (
	noteLexicon = `{"lexicon": 1, "id": "com.example.note", "defs": {"main": {
  "type": "record", "key": "tid", "record": {"type": "object", "required": ["text", "createdAt"], "properties": {
    "text": {"type": "string", "maxLength": 1000}, "createdAt": {"type": "string", "format": "datetime"}}}}}}`
	createNoteLexicon = `{"lexicon": 1, "id": "com.example.createNote", "defs": {"main": {
  "type": "procedure", "input": {"encoding": "application/json"}}}}`
	listNotesLexicon = `{"lexicon": 1, "id": "com.example.listNotes", "defs": {"main": {
  "type": "query", "parameters": {"type": "params", "properties": {"uri": {"type": "string", "format": "at-uri"}}}}}}`
)

// demoDID is the user of the demo, known to the PLC stand-in.
const demoDID = "did:plc:thirdpartydemo000000001"

// demoScopes are the scopes the stand-in grants (and the demo client has).
const demoScopes = "atproto transition:generic"

// demo is everything -demo runs in this process: Lexview on a temporary
// SQLite database, the PDS + authorization server stand-in, and a PLC
// directory stand-in. None of it is part of a real app.
type demo struct {
	LexviewURL              string
	PDSURL                  string
	ClientKey, ClientSecret string
	DID                     string

	app    *appview.App
	pds    *oauthtest.Server
	plc    *httptest.Server
	dir    string
	stop   context.CancelFunc
	served chan error
}

// startDemo starts the demo's servers and prepares Lexview as an operator
// would: lexicons uploaded, an API client created.
func startDemo(ctx context.Context) (_ *demo, err error) {
	d := &demo{DID: demoDID}
	defer func() {
		if err != nil {
			d.Close()
		}
	}()
	if d.dir, err = os.MkdirTemp("", "lexview-thirdparty-"); err != nil {
		return nil, err
	}

	// The user's PDS and its authorization server: a stand-in that checks
	// DPoP as a real PDS does.
	d.pds = oauthtest.Start(oauthtest.Options{})
	d.PDSURL = d.pds.URL
	// The PLC directory, which maps the user's DID to that PDS.
	d.plc = newPLC(d.DID, d.pds.URL)

	// Lexview. Listen first, so that its public URL (which DPoP proofs
	// name) is the address it really serves on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	d.LexviewURL = "http://" + ln.Addr().String()
	d.app, err = appview.New(appview.Config{
		DatabaseURL: "sqlite://" + filepath.Join(d.dir, "lexview.db"),
		PublicURL:   d.LexviewURL,
		Port:        ln.Addr().(*net.TCPAddr).Port,
		Ingest:      appview.IngestConfig{JetstreamURL: "off"}, // it only indexes what the demo writes
		Network: appview.NetworkConfig{
			PLCURL:               d.plc.URL, // never the real directory
			AllowPrivateNetworks: true,      // the stand-ins live on 127.0.0.1
		},
		Security: appview.SecurityConfig{SessionSecret: rand.Text() + rand.Text()}, // no dashboard here
		Logger:   slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		ln.Close()
		return nil, err
	}
	for _, up := range []lexicon.Upload{
		{Document: json.RawMessage(noteLexicon), Backfill: new(false)}, // the demo imports its records: no network backfill
		{Document: json.RawMessage(createNoteLexicon), TargetCollection: "com.example.note"},
		{Document: json.RawMessage(listNotesLexicon), TargetCollection: "com.example.note"},
	} {
		if _, err := d.app.Lexicons().Put(ctx, up); err != nil {
			ln.Close()
			return nil, fmt.Errorf("upload lexicon: %w", err)
		}
	}
	client, secret, err := d.app.Clients().Create(ctx, appview.NewClient{
		Name: "third-party example", ClientIDURL: "https://app.example/client-metadata.json",
		ClientURI: "https://app.example", RedirectURIs: []string{"https://app.example/callback"},
		Scopes: demoScopes, CreatedBy: "did:plc:exampleadmin",
	})
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("create API client: %w", err)
	}
	d.ClientKey, d.ClientSecret = client.Key, secret

	sctx, stop := context.WithCancel(context.Background())
	d.stop, d.served = stop, make(chan error, 1)
	go func() { d.served <- d.app.Serve(sctx, ln) }()
	return d, nil
}

// SignIn stands in for step 2, the OAuth flow: it finds the user's PDS and
// authorization server over HTTP as an app does, then, since no person is
// there to sign in, has the stand-in issue tokens bound to the device's
// key (thumbprint jkt).
func (d *demo) SignIn(ctx context.Context, did, jkt string) (Tokens, error) {
	pds, issuer, err := discover(ctx, d.plc.URL, did)
	if err != nil {
		return Tokens{}, err
	}
	access, refresh := d.pds.IssueTokens(did, jkt)
	return Tokens{AccessToken: access, RefreshToken: refresh, ExpiresAt: time.Now().Add(time.Hour),
		Scopes: demoScopes, PDSURL: pds, Issuer: issuer}, nil
}

// Report prints what reached the PDS stand-in: the records Lexview wrote
// there, and the DPoP-nonce challenges Lexview answered on the way.
func (d *demo) Report(out io.Writer) {
	fmt.Fprintf(out, "demo: the PDS stand-in holds %d record(s); Lexview answered %d DPoP-nonce challenge(s)\n",
		len(d.pds.Records()), d.pds.Stats().NonceChallenges)
}

// Close stops everything and removes the temporary database.
func (d *demo) Close() {
	if d.stop != nil {
		d.stop()
		if err := <-d.served; err != nil {
			fmt.Fprintln(os.Stderr, "demo: lexview:", err)
		}
	} else if d.app != nil {
		_ = d.app.Shutdown(context.Background())
	}
	if d.pds != nil {
		d.pds.Close()
	}
	if d.plc != nil {
		d.plc.Close()
	}
	if d.dir != "" {
		_ = os.RemoveAll(d.dir)
	}
}

// newPLC starts a PLC directory stand-in serving one DID document: did,
// hosted on pds.
func newPLC(did, pds string) *httptest.Server {
	doc, _ := json.Marshal(map[string]any{
		"@context":    []string{"https://www.w3.org/ns/did/v1"},
		"id":          did,
		"alsoKnownAs": []string{"at://demo.example"},
		"service": []map[string]string{
			{"id": "#atproto_pds", "type": "AtprotoPersonalDataServer", "serviceEndpoint": pds},
		},
	})
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/"+did {
			http.Error(w, `{"message":"DID not registered"}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/did+ld+json")
		_, _ = w.Write(doc)
	}))
}

// discover is the start of the OAuth flow, simplified to did:plc: the DID
// document names the PDS, the PDS's protected-resource metadata names its
// authorization server, whose metadata confirms its issuer.
func discover(ctx context.Context, plcURL, did string) (pds, issuer string, err error) {
	var doc struct {
		Service []struct {
			ID              string `json:"id"`
			ServiceEndpoint string `json:"serviceEndpoint"`
		} `json:"service"`
	}
	if err := getJSON(ctx, plcURL+"/"+did, &doc); err != nil {
		return "", "", err
	}
	for _, s := range doc.Service {
		if s.ID == "#atproto_pds" {
			pds = s.ServiceEndpoint
		}
	}
	if pds == "" {
		return "", "", errors.New("the DID document names no PDS")
	}
	var resource struct {
		AuthorizationServers []string `json:"authorization_servers"`
	}
	if err := getJSON(ctx, pds+"/.well-known/oauth-protected-resource", &resource); err != nil {
		return "", "", err
	}
	if len(resource.AuthorizationServers) == 0 {
		return "", "", errors.New("the PDS names no authorization server")
	}
	var as struct {
		Issuer string `json:"issuer"`
	}
	if err := getJSON(ctx, resource.AuthorizationServers[0]+"/.well-known/oauth-authorization-server", &as); err != nil {
		return "", "", err
	}
	if as.Issuer != resource.AuthorizationServers[0] {
		return "", "", fmt.Errorf("authorization server metadata names issuer %q", as.Issuer)
	}
	return pds, as.Issuer, nil
}

// getJSON fetches a JSON document.
func getJSON(ctx context.Context, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: status %d", u, resp.StatusCode)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(v)
}
