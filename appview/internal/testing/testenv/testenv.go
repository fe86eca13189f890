// Package testenv runs a whole Lexview instance for HTTP-level tests, with
// a stand-in PLC directory on 127.0.0.1 serving real DID documents, and
// accounts that sign real ES256 / ES256K service-auth JWTs.
package testenv

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bluesky-social/indigo/atproto/atcrypto"
	"github.com/bluesky-social/indigo/atproto/identity"
	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/storage"
)

// TokenKey is the TOKEN_ENCRYPTION_KEY of test instances (PostgreSQL
// requires one).
const TokenKey = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="

// PLC is a stand-in PLC directory: GET /{did} answers the DID document.
type PLC struct {
	URL string
	mu  sync.Mutex
	doc map[string]identity.DIDDocument
	n   int
}

// NewPLC starts a PLC stand-in for the test.
func NewPLC(t testing.TB) *PLC {
	p := &PLC{doc: map[string]identity.DIDDocument{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		doc, ok := p.doc[strings.TrimPrefix(r.URL.Path, "/")]
		p.mu.Unlock()
		if !ok {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"message":"DID not registered"}`)
			return
		}
		w.Header().Set("Content-Type", "application/did+ld+json")
		json.NewEncoder(w).Encode(doc)
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// Account is a DID whose #atproto key the test holds.
type Account struct {
	DID syntax.DID
	Key atcrypto.PrivateKey
	plc *PLC
}

// NewAccount registers a fresh did:plc with a P-256 key (k256 false) or a
// secp256k1 key (k256 true), hosted on pds.
func (p *PLC) NewAccount(t testing.TB, k256 bool, pds string) *Account {
	t.Helper()
	p.mu.Lock()
	p.n++
	did := syntax.DID(fmt.Sprintf("did:plc:testaccount%011d", p.n))
	p.mu.Unlock()
	a := &Account{DID: did, plc: p}
	a.SetKey(t, k256)
	p.mu.Lock()
	doc := p.doc[did.String()]
	doc.Service = []identity.DocService{{ID: "#atproto_pds", Type: "AtprotoPersonalDataServer", ServiceEndpoint: pds}}
	doc.AlsoKnownAs = []string{fmt.Sprintf("at://account%d.test", p.n)}
	p.doc[did.String()] = doc
	p.mu.Unlock()
	return a
}

// Register serves a DID document for did with a handle and a PDS but no
// signing key, for tests that only resolve accounts.
func (p *PLC) Register(did, handle, pds string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.doc[did] = identity.DIDDocument{
		DID: syntax.DID(did), AlsoKnownAs: []string{"at://" + handle},
		Service: []identity.DocService{{ID: "#atproto_pds", Type: "AtprotoPersonalDataServer", ServiceEndpoint: pds}},
	}
}

// RegisterLabeler serves a DID document for did naming endpoint as its
// #atproto_labeler service and keyMultibase (a multibase public key) as
// its #atproto_label verification method, replacing any earlier document
// of did (calling it again with a new key is a key rotation). It
// implements labelertest.Registrar.
func (p *PLC) RegisterLabeler(did, endpoint, keyMultibase string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.doc[did] = identity.DIDDocument{
		DID: syntax.DID(did), AlsoKnownAs: []string{"at://" + strings.NewReplacer("did:plc:", "", ":", "-").Replace(did) + ".test"},
		VerificationMethod: []identity.DocVerificationMethod{{
			ID: did + "#atproto_label", Type: "Multikey", Controller: did, PublicKeyMultibase: keyMultibase,
		}},
		Service: []identity.DocService{{ID: "#atproto_labeler", Type: "AtprotoLabeler", ServiceEndpoint: endpoint}},
	}
}

// AddService adds a service (id like "#atproto_appview") to did's
// document, which must exist.
func (p *PLC) AddService(did, id, typ, endpoint string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	doc := p.doc[did]
	doc.Service = append(doc.Service, identity.DocService{ID: id, Type: typ, ServiceEndpoint: endpoint})
	p.doc[did] = doc
}

// HostOn makes pds the PDS of did's document, creating a document (with
// no signing key, and a handle made from the DID) if did has none; a
// document that already names a PDS keeps it.
func (p *PLC) HostOn(did, pds string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	doc, ok := p.doc[did]
	if !ok {
		doc = identity.DIDDocument{DID: syntax.DID(did),
			AlsoKnownAs: []string{"at://" + strings.NewReplacer("did:plc:", "", "did:web:", "", ":", "-").Replace(did) + ".test"}}
	}
	for _, svc := range doc.Service {
		if svc.ID == "#atproto_pds" {
			return
		}
	}
	doc.Service = append(doc.Service, identity.DocService{ID: "#atproto_pds", Type: "AtprotoPersonalDataServer", ServiceEndpoint: pds})
	p.doc[did] = doc
}

// SetKey gives the account a new #atproto key (a key rotation).
func (a *Account) SetKey(t testing.TB, k256 bool) {
	t.Helper()
	var priv atcrypto.PrivateKeyExportable
	var err error
	if k256 {
		priv, err = atcrypto.GeneratePrivateKeyK256()
	} else {
		priv, err = atcrypto.GeneratePrivateKeyP256()
	}
	if err != nil {
		t.Fatal(err)
	}
	pub, err := priv.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	a.Key = priv
	a.plc.mu.Lock()
	defer a.plc.mu.Unlock()
	doc := a.plc.doc[a.DID.String()]
	doc.DID = a.DID
	doc.VerificationMethod = []identity.DocVerificationMethod{{
		ID: a.DID.String() + "#atproto", Type: "Multikey", Controller: a.DID.String(), PublicKeyMultibase: pub.Multibase(),
	}}
	a.plc.doc[a.DID.String()] = doc
}

// JWT signs a compact JWS with the account's key: header fields (alg is
// set from the key unless given) and claims as provided.
func (a *Account) JWT(t testing.TB, header, claims map[string]any) string {
	t.Helper()
	h := map[string]any{"typ": "JWT"}
	switch a.Key.(type) {
	case *atcrypto.PrivateKeyK256:
		h["alg"] = "ES256K"
	default:
		h["alg"] = "ES256"
	}
	for k, v := range header {
		h[k] = v
	}
	hb, _ := json.Marshal(h)
	cb, _ := json.Marshal(claims)
	signing := base64.RawURLEncoding.EncodeToString(hb) + "." + base64.RawURLEncoding.EncodeToString(cb)
	sig, err := a.Key.HashAndSign([]byte(signing))
	if err != nil {
		t.Fatal(err)
	}
	return signing + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// ServiceAuth returns a valid service-auth JWT for the account, expiring
// in a minute.
func (a *Account) ServiceAuth(t testing.TB) string {
	return a.JWT(t, nil, map[string]any{
		"iss": a.DID.String(), "aud": TestAudience, "exp": time.Now().Add(time.Minute).Unix(),
		"iat": time.Now().Unix(), "jti": storage.NewID(),
	})
}

// TestAudience is the `aud` of the service-auth JWTs accounts mint
// (Account.ServiceAuth), accepted by every test instance.
const TestAudience = "did:web:lexview.test"

// Env is a running Lexview instance.
type Env struct {
	App   *appview.App
	URL   string
	PLC   *PLC
	Store storage.Store
}

// New starts an instance on store, background work included. cfg may
// leave Store, Network.PLCURL and Logger unset.
func New(t testing.TB, store storage.Store, cfg appview.Config) *Env {
	t.Helper()
	env := NewUnstarted(t, store, cfg)
	if err := env.App.Start(context.Background()); err != nil {
		t.Fatalf("start: %v", err)
	}
	return env
}

// NewUnstarted is New without App.Start, for tests that start it
// themselves.
func NewUnstarted(t testing.TB, store storage.Store, cfg appview.Config) *Env {
	t.Helper()
	plc := NewPLC(t)
	cfg.Store = store
	if cfg.Network.PLCURL == "" {
		cfg.Network.PLCURL = plc.URL
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Ingest.JetstreamURL == "" {
		cfg.Ingest.JetstreamURL = "off"
	}
	if cfg.Security.TokenEncryptionKey == "" {
		cfg.Security.TokenEncryptionKey = TokenKey
	}
	cfg.Network.AllowPrivateNetworks = true // stand-ins live on 127.0.0.1
	// Account.ServiceAuth mints tokens for this audience.
	cfg.Security.ServiceAuthAudiences = append(cfg.Security.ServiceAuthAudiences, TestAudience)
	if cfg.EventLogRetentionDays == 0 {
		// Tests seed entries with fixed past dates; the started App's purge
		// worker must not remove them mid-test.
		cfg.EventLogRetentionDays = -1
	}
	if cfg.Ingest.RelayURL == "" {
		cfg.Ingest.RelayURL = "http://127.0.0.1:1" // never the real network
	}
	if cfg.Network.LexiconDNSServer == "" && cfg.Network.LexiconResolver == nil {
		cfg.Network.LexiconDNSServer = "127.0.0.1:1" // _lexicon look-ups fail at once, off the network
	}
	// Start the server first so that PUBLIC_URL (the DPoP htu origin) is
	// its real address.
	handler := http.NotFoundHandler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	if cfg.PublicURL == "" {
		cfg.PublicURL = srv.URL
	}
	app, err := appview.New(cfg)
	if err != nil {
		srv.Close()
		t.Fatalf("appview.New: %v", err)
	}
	handler = app
	t.Cleanup(func() {
		srv.Close()
		app.Shutdown(context.Background())
	})
	return &Env{App: app, URL: srv.URL, PLC: plc, Store: store}
}

// Response is a decoded HTTP answer.
type Response struct {
	Status int
	Header http.Header
	Raw    []byte
}

// JSON decodes the body into v, failing the test if it does not decode.
func (r Response) JSON(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Raw, v); err != nil {
		t.Fatalf("status %d: body is not JSON: %q", r.Status, r.Raw)
	}
}

// Object decodes the body as a JSON object.
func (r Response) Object(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	r.JSON(t, &m)
	return m
}

// Error returns the `error` string of a JSON error body.
func (r Response) Error(t testing.TB) string {
	t.Helper()
	s, _ := r.Object(t)["error"].(string)
	return s
}

// Do sends a request. body is JSON-encoded unless it is []byte or nil.
// headers are name, value pairs.
func (e *Env) Do(t testing.TB, method, path string, body any, headers ...string) Response {
	t.Helper()
	return Request(t, method, e.URL+path, body, headers...)
}

// Request sends a request to url and reads the answer. body is
// JSON-encoded unless it is []byte or nil; headers are name, value pairs
// ("Host" sets the request's Host).
func Request(t testing.TB, method, url string, body any, headers ...string) Response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if strings.EqualFold(headers[i], "Host") { // net/http sends req.Host, not a Host header
			req.Host = headers[i+1]
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return Response{Status: resp.StatusCode, Header: resp.Header, Raw: raw}
}

// Bearer returns the Authorization header pair for a token.
func Bearer(token string) []string { return []string{"Authorization", "Bearer " + token} }

// Admin is an admin caller of the instance.
type Admin struct {
	Account *Account
	env     *Env
}

// Do calls the admin API as this admin with a fresh service-auth JWT.
func (a *Admin) Do(t testing.TB, method, path string, body any) Response {
	t.Helper()
	return a.env.Do(t, method, path, body, Bearer(a.Account.ServiceAuth(t))...)
}

// Bootstrap makes a new account the super user (the first admin request).
func (e *Env) Bootstrap(t testing.TB) *Admin {
	t.Helper()
	acct := e.PLC.NewAccount(t, false, "https://pds.test")
	a := &Admin{Account: acct, env: e}
	h := append(Bearer(acct.ServiceAuth(t)), "X-Claim-Token", e.App.ClaimToken())
	if r := e.Do(t, "GET", "/admin/lexicons", nil, h...); r.Status != 200 {
		t.Fatalf("bootstrap request: %d %s", r.Status, r.Raw)
	}
	return a
}

// AddAdmin stores a new admin user holding exactly perms.
func (e *Env) AddAdmin(t testing.TB, perms ...admins.Permission) *Admin {
	t.Helper()
	acct := e.PLC.NewAccount(t, false, "https://pds.test")
	names := make([]string, len(perms))
	for i, p := range perms {
		names[i] = string(p)
	}
	err := e.Store.CreateAdminUser(context.Background(), storage.AdminUser{
		ID: storage.NewID(), DID: acct.DID.String(), Permissions: names, CreatedAt: time.Now(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return &Admin{Account: acct, env: e}
}

// NewClient creates an API client and returns its key and secret.
func (e *Env) NewClient(t testing.TB, nc apiclients.NewClient) (storage.APIClient, string) {
	t.Helper()
	if nc.Name == "" {
		nc.Name = "test client"
	}
	if nc.ClientIDURL == "" {
		nc.ClientIDURL = "https://app.test/" + storage.NewID() + "/client-metadata.json"
	}
	if nc.ClientURI == "" {
		nc.ClientURI = "https://app.test"
	}
	if nc.RedirectURIs == nil {
		nc.RedirectURIs = []string{"https://app.test/callback"}
	}
	if nc.CreatedBy == "" {
		nc.CreatedBy = "did:plc:testadmin"
	}
	c, secret, err := e.App.Clients().Create(context.Background(), appview.NewClient(nc))
	if err != nil {
		t.Fatalf("create API client: %v", err)
	}
	return c, secret
}
