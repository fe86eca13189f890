package apptest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bluesky-social/indigo/atproto/identity"
	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/appfolder"
	"github.com/lexview/lexview/internal/oauthtest"
	"github.com/lexview/lexview/internal/repocar"
	"github.com/lexview/lexview/oauth"
	"github.com/lexview/lexview/storage"
)

// instance is a test's throwaway Lexview: an App on SQLite in a
// temporary folder, served on 127.0.0.1, beside a stand-in PDS (and
// authorization server) that every account of the test is hosted on.
//
// Its calls are real HTTP requests with an API client's key, and its
// procedures real DPoP calls: each acting account signs in as an app's
// user does (a provisioned DPoP key, tokens from the stand-in, the
// session registered at POST /oauth/sessions and checked against the
// account's DID document). Nothing in the App is there for tests: the
// accounts resolve to the stand-in because the instance's identity
// directory is an in-memory one naming it (Config.Network.Directory).
type instance struct {
	app    *appview.App
	srv    *httptest.Server
	pds    *oauthtest.Server
	dir    string
	client *http.Client
	key    string // the API client's key and secret
	secret string
	// sessions are the signed-in accounts, by DID.
	sessions map[string]*session
	revs     *syntax.TIDClock
}

// session is an acting account's device session.
type session struct {
	signer *oauth.Signer
	access string
}

// operator is the super user of the test instances: no test acts as it.
const operator = "did:web:operator.apptest.invalid"

// startupPatience bounds the wait for the declared indexes' build.
const startupPatience = time.Minute

// startInstance starts the instance of test t with the app def applied
// and t's fixtures indexed.
func startInstance(ctx context.Context, def *appfolder.Definition, t *Test, logger *slog.Logger) (_ *instance, err error) {
	dir, err := os.MkdirTemp("", "lexview-apptest-")
	if err != nil {
		return nil, err
	}
	in := &instance{dir: dir, sessions: map[string]*session{}, revs: syntax.NewTIDClock(0),
		client: &http.Client{Timeout: time.Minute}}
	defer func() {
		if err != nil {
			in.close()
		}
	}()
	in.pds = oauthtest.Start(oauthtest.Options{})
	directory := identity.NewMockDirectory()
	for _, did := range t.accounts() {
		handle := handleOf(did)
		in.pds.SetHandle(did, handle)
		directory.Insert(identity.Identity{DID: syntax.DID(did), Handle: syntax.Handle(handle),
			AlsoKnownAs: []string{"at://" + handle},
			Services:    map[string]identity.ServiceEndpoint{"atproto_pds": {Type: "AtprotoPersonalDataServer", URL: in.pds.URL}}})
	}
	var handler http.Handler = http.NotFoundHandler()
	in.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	base := "http://" + in.srv.Listener.Addr().String()
	in.app, err = appview.New(appview.Config{
		DatabaseURL: "sqlite://" + filepath.Join(dir, "app.db"),
		PublicURL:   base, // the DPoP proofs' htu
		Logger:      logger,
		// Nothing from the network: no event stream, relay, PLC directory
		// or _lexicon look-ups; the accounts are the directory's.
		Ingest: appview.IngestConfig{JetstreamURL: "off", RelayURL: "http://127.0.0.1:1"},
		Network: appview.NetworkConfig{Directory: directory, PLCURL: "http://127.0.0.1:1",
			LexiconDNSServer: "127.0.0.1:1", AllowPrivateNetworks: true}, // the stand-in PDS is on 127.0.0.1
		Clients: appview.ClientConfig{DefaultRateLimitCapacity: 1 << 30, DefaultRateLimitRefillRate: 1 << 30},
		// A failing record-event script is reported at once, not retried.
		Scripts:               appview.ScriptConfig{Retry: appview.RetryPolicy{Attempts: 1}},
		EventLogRetentionDays: -1,
	})
	if err != nil {
		return nil, fmt.Errorf("start the instance: %w", err)
	}
	handler = in.app
	in.srv.Start()
	if err := in.apply(ctx, def); err != nil {
		return nil, err
	}
	// Claimed, so that the instance does not warn that it has no admin.
	if _, err := in.app.Bootstrap(ctx, operator, false); err != nil {
		return nil, fmt.Errorf("claim the instance: %w", err)
	}
	if err := in.app.Start(context.WithoutCancel(ctx)); err != nil {
		return nil, fmt.Errorf("start the instance: %w", err)
	}
	ready, cancel := context.WithTimeout(ctx, startupPatience)
	defer cancel()
	if err := in.app.Indexes().WaitReady(ready, ""); err != nil {
		return nil, err
	}
	for k, v := range t.Variables {
		if err := in.app.Scripts().SetVariable(ctx, k, v); err != nil {
			return nil, fmt.Errorf("variable %s: %w", k, err)
		}
	}
	c, secret, err := in.app.Clients().Create(ctx, appview.NewClient{Name: "appview test",
		ClientIDURL: "https://app.test/client-metadata.json", ClientURI: "https://app.test",
		RedirectURIs: []string{"https://app.test/callback"}, Scopes: "atproto transition:generic"})
	if err != nil {
		return nil, fmt.Errorf("create the API client: %w", err)
	}
	in.key, in.secret = c.Key, secret
	if err := in.index(ctx, t.fixtures); err != nil {
		return nil, err
	}
	return in, nil
}

// close stops the instance and removes its files.
func (in *instance) close() {
	if in.srv != nil {
		in.srv.Close()
	}
	if in.app != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		in.app.Shutdown(ctx)
		cancel()
	}
	if in.pds != nil {
		in.pds.Close()
	}
	os.RemoveAll(in.dir)
}

// apply applies the app's definition as `appview apply` does.
func (in *instance) apply(ctx context.Context, def *appfolder.Definition) error {
	target := appfolder.Local(in.app)
	plan, err := appfolder.Compare(ctx, target, def, false)
	if err != nil {
		return fmt.Errorf("apply the app: %w", err)
	}
	if _, err := appfolder.Apply(ctx, target, plan); err != nil {
		return fmt.Errorf("apply the app: %w", err)
	}
	return nil
}

// source names the tests' changes in the writer's metrics and logs.
const source = "apptest"

// index writes the fixture records through the App's writer, as live
// ingestion does: validation, record-event scripts, hooks, links and
// field indexes. A record refused or skipped is an error.
func (in *instance) index(ctx context.Context, recs []Record) error {
	if len(recs) == 0 {
		return nil
	}
	changes := make([]storage.Change, len(recs))
	for i, r := range recs {
		c, err := in.change(storage.OpCreate, r)
		if err != nil {
			return fmt.Errorf("fixture: %w", err)
		}
		changes[i] = c
	}
	res, err := in.app.Writer().Write(ctx, source, changes)
	if err != nil {
		return fmt.Errorf("index the fixtures: %w", err)
	}
	var errs []error
	for _, r := range append(res.Rejected, res.ScriptFailed...) {
		errs = append(errs, fmt.Errorf("fixture %s: %w", r.URI, r.Err))
	}
	for _, r := range res.Flagged { // stored, but a fixture must be valid
		errs = append(errs, fmt.Errorf("fixture %s: its lexicon refuses it: %w", r.URI, r.Err))
	}
	if len(errs) == 0 && res.Skipped > 0 {
		errs = append(errs, fmt.Errorf("%d fixture records were skipped by a record-event script or hook", res.Skipped))
	}
	return errors.Join(errs...)
}

// change is r as a change of the event stream: $type set, its CID (the
// one given, else the one its value has in a repository), a fresh
// revision, a TID for a missing rkey.
func (in *instance) change(op storage.ChangeOp, r Record) (storage.Change, error) {
	c := storage.Change{Op: op, DID: r.Repo, Collection: r.Collection, RKey: r.RKey, Rev: in.revs.Next().String()}
	if c.RKey == "" {
		c.RKey = in.revs.Next().String()
	}
	if op == storage.OpDelete {
		return c, nil
	}
	var fields map[string]json.RawMessage
	json.Unmarshal(r.Record, &fields) // checked by Load
	if _, ok := fields["$type"]; !ok {
		fields["$type"], _ = json.Marshal(r.Collection)
	}
	c.Record, _ = json.Marshal(fields)
	c.CID = r.CID
	if c.CID == "" {
		var err error
		if c.CID, err = repocar.RecordCID(c.Record); err != nil {
			return c, fmt.Errorf("at://%s/%s/%s is not atproto data: %w", c.DID, c.Collection, c.RKey, err)
		}
	}
	return c, nil
}

// handleOf is the handle the stand-ins give did: its identifier as a name
// under .test.
func handleOf(did string) string {
	id := did[strings.LastIndex(did, ":")+1:]
	label := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return '-'
	}, id)
	label = strings.Trim(label, "-")
	if len(label) > 63 {
		label = label[:63]
	}
	if label == "" {
		label = "account"
	}
	return label + ".test"
}

// call makes an XRPC call as did ("" for none) and returns its status and
// body.
func (in *instance) call(ctx context.Context, method, path string, body []byte, did string) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, in.srv.URL+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("X-Client-Key", in.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if did != "" {
		s, err := in.signIn(ctx, did)
		if err != nil {
			return 0, nil, fmt.Errorf("sign in %s: %w", did, err)
		}
		htu, _, _ := strings.Cut(in.app.Config().PublicURL+path, "?")
		proof, err := s.signer.NewProof(method, htu, s.access, "")
		if err != nil {
			return 0, nil, err
		}
		req.Header.Set("Authorization", "DPoP "+s.access)
		req.Header.Set("DPoP", proof)
	}
	resp, err := in.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp.StatusCode, raw, err
}

// signIn returns did's device session, signing it in the first time as
// an app's user signs in (docs/oauth.md): a DPoP key provisioned by the
// instance, tokens bound to it from the stand-in's authorization server,
// the session registered.
func (in *instance) signIn(ctx context.Context, did string) (*session, error) {
	if s, ok := in.sessions[did]; ok {
		return s, nil
	}
	var prov struct {
		ProvisionID string           `json:"provision_id"`
		DPoPKey     oauth.PrivateJWK `json:"dpop_key"`
	}
	if err := in.oauthCall(ctx, "/oauth/dpop-keys", map[string]any{}, &prov); err != nil {
		return nil, err
	}
	key, err := prov.DPoPKey.Key()
	if err != nil {
		return nil, err
	}
	signer, err := oauth.NewSigner(key, nil)
	if err != nil {
		return nil, err
	}
	access, refresh := in.pds.IssueTokens(did, signer.JKT())
	reg := map[string]any{
		"provision_id": prov.ProvisionID, "did": did, "access_token": access, "refresh_token": refresh,
		"expires_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339), "scopes": "atproto transition:generic",
		"pds_url": in.pds.URL, "issuer": in.pds.URL,
	}
	if err := in.oauthCall(ctx, "/oauth/sessions", reg, nil); err != nil {
		return nil, err
	}
	s := &session{signer: signer, access: access}
	in.sessions[did] = s
	return s, nil
}

// oauthCall posts body to an /oauth/* endpoint with the client's
// credentials and decodes the answer into out.
func (in *instance) oauthCall(ctx context.Context, path string, body, out any) error {
	raw, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.srv.URL+path, bytes.NewReader(raw))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Client-Key", in.key)
	req.Header.Set("X-Client-Secret", in.secret)
	resp, err := in.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: %d %s", path, resp.StatusCode, answer)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(answer, out)
}

// accounts are the DIDs t names: its fixtures' and events' repositories
// and its acting accounts.
func (t *Test) accounts() []string {
	seen := map[string]bool{}
	var out []string
	add := func(did string) {
		if did != "" && !seen[did] {
			seen[did] = true
			out = append(out, did)
		}
	}
	add(t.As)
	for _, r := range t.fixtures {
		add(r.Repo)
	}
	for _, st := range t.Steps {
		if st.As != nil {
			add(*st.As)
		}
		if st.Event != nil {
			add(st.Event.Repo)
		}
	}
	return out
}
