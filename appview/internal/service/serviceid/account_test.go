package serviceid_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bluesky-social/indigo/atproto/identity"
	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/service/domains"
	"github.com/lexview/lexview/appview/internal/service/serviceid"
	"github.com/lexview/lexview/oauth"
	"github.com/lexview/lexview/storage/sqlite"
)

const accountDID = "did:plc:attachedaccount0000000000"

// oneAccount resolves every identifier to the account on pds.
type oneAccount struct{ pds string }

func (d oneAccount) ident() *identity.Identity {
	return &identity.Identity{DID: accountDID, Handle: "appview.test",
		Services: map[string]identity.ServiceEndpoint{"atproto_pds": {Type: "AtprotoPersonalDataServer", URL: d.pds}}}
}
func (d oneAccount) LookupHandle(context.Context, syntax.Handle) (*identity.Identity, error) {
	return d.ident(), nil
}
func (d oneAccount) LookupDID(context.Context, syntax.DID) (*identity.Identity, error) {
	return d.ident(), nil
}
func (d oneAccount) Lookup(context.Context, syntax.AtIdentifier) (*identity.Identity, error) {
	return d.ident(), nil
}
func (d oneAccount) Purge(context.Context, syntax.AtIdentifier) error { return nil }

// TestAccountSessionRefresh: a call the PDS refuses with ExpiredToken is
// retried once after com.atproto.server.refreshSession, and the new tokens
// are kept; a refresh the PDS refuses asks for the account to be attached
// again. (The reference PDS's tokens outlive any test, so a stand-in PDS
// plays the expiry.)
func TestAccountSessionRefresh(t *testing.T) {
	var refreshes, requests atomic.Int32
	refreshOK := atomic.Bool{}
	refreshOK.Store(true)
	pds := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/xrpc/com.atproto.server.createSession":
			io.WriteString(w, `{"did":"`+accountDID+`","handle":"appview.test","accessJwt":"access-1","refreshJwt":"refresh-1"}`)
		case "/xrpc/com.atproto.server.refreshSession":
			refreshes.Add(1)
			if !refreshOK.Load() || auth != "Bearer refresh-1" {
				w.WriteHeader(400)
				io.WriteString(w, `{"error":"ExpiredToken","message":"Token has expired"}`)
				return
			}
			io.WriteString(w, `{"accessJwt":"access-2","refreshJwt":"refresh-2"}`)
		case "/xrpc/com.atproto.identity.requestPlcOperationSignature":
			requests.Add(1)
			if auth != "Bearer access-2" {
				w.WriteHeader(400)
				io.WriteString(w, `{"error":"ExpiredToken","message":"Token has expired"}`)
				return
			}
		default:
			w.WriteHeader(404)
		}
	}))
	defer pds.Close()

	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "id.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	sealer, err := oauth.NewSealer([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	events := eventlog.New(eventlog.Options{Store: store, Logger: quiet})
	svc := serviceid.New(serviceid.Options{Store: store, Sealer: sealer, Events: events, Now: time.Now,
		Domains:   domains.New(domains.Options{Store: store, Events: events, PublicURL: "https://example.com", Now: time.Now, Logger: quiet}),
		Directory: oneAccount{pds.URL}, HTTP: pds.Client()})

	id, err := svc.SetMode(ctx, "did:plc:admin", serviceid.IdentityChange{Mode: serviceid.ModeAttachAccount,
		Account: serviceid.AccountRequest{Identifier: "appview.test", Password: "secret"}})
	if err != nil || id.DID != accountDID || id.AccountPDS != pds.URL {
		t.Fatalf("attach: %+v %v", id, err)
	}
	if err := svc.RequestPLCToken(ctx, "did:plc:admin"); err != nil {
		t.Fatalf("request with an expired access token: %v", err)
	}
	if refreshes.Load() != 1 || requests.Load() != 2 {
		t.Fatalf("refreshes %d, requests %d; want 1 and 2", refreshes.Load(), requests.Load())
	}
	if err := svc.RequestPLCToken(ctx, "did:plc:admin"); err != nil || refreshes.Load() != 1 {
		t.Fatalf("the refreshed token was not kept: %v, %d refreshes", err, refreshes.Load())
	}

	// Attach again (access-1 once more), and let the refresh fail.
	if _, err := svc.SetMode(ctx, "did:plc:admin", serviceid.IdentityChange{Mode: serviceid.ModeAttachAccount,
		Account: serviceid.AccountRequest{Identifier: accountDID, Password: "secret"}}); err != nil {
		t.Fatal(err)
	}
	refreshOK.Store(false)
	err = svc.RequestPLCToken(ctx, "did:plc:admin")
	if fail.KindOf(err) != fail.Invalid || !strings.HasPrefix(fail.Message(err), "the account's session could not be refreshed (attach the account again): ExpiredToken") {
		t.Fatalf("a refused refresh: %v (%s)", err, fail.Message(err))
	}
}
