package appview_test

import (
	"context"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/internal/oauthtest"
	"github.com/lexview/lexview/oauth"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// TestSessionRegistrationIsVerified is the regression test of the session
// impersonation hole: a registered device session used to be believed
// about its DID, PDS and issuer. Now the DID document names the PDS, the
// PDS names the issuer, and the PDS accepts the token, bound to the
// provisioned key, as the DID's; nothing else is stored.
func TestSessionRegistrationIsVerified(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env := testenv.New(t, open(t), appview.Config{})
		pds := oauthtest.New(t, oauthtest.Options{})
		evil := oauthtest.New(t, oauthtest.Options{}) // the attacker's PDS and authorization server
		victim := env.PLC.NewAccount(t, false, pds.URL).DID.String()
		attacker := env.PLC.NewAccount(t, false, pds.URL).DID.String()
		client, secret := env.NewClient(t, apiclients.NewClient{})
		app := testenv.AppClient{Key: client.Key, Secret: secret}

		register := func(reg map[string]any) testenv.Response {
			return env.Do(t, "POST", "/oauth/sessions", reg, app.Headers()...)
		}
		refused := func(name string, reg map[string]any, status int, msg string) {
			t.Helper()
			if r := register(reg); r.Status != status || r.Error(t) != msg {
				t.Errorf("%s: %d %s, want %d %q", name, r.Status, r.Raw, status, msg)
			}
		}

		// The attacker's own PDS vouches for the victim's DID.
		p := env.Provision(t, app)
		access, refresh := evil.IssueTokens(victim, p.Signer.JKT())
		refused("foreign pds_url", p.Registration(victim, access, refresh, evil.URL), 400, "pds_url is not the PDS in the DID document")

		// The right PDS, but an authorization server it does not name.
		reg := p.Registration(victim, access, refresh, pds.URL)
		reg["issuer"] = evil.URL
		refused("foreign issuer", reg, 400, "issuer is not an authorization server of the PDS")

		// The right PDS and issuer, a made-up token.
		refused("made-up token", p.Registration(victim, "made-up", "made-up", pds.URL), 400,
			"the PDS did not accept access_token with the provisioned key")

		// A real token of the attacker's own account, claimed for the victim.
		access, refresh = pds.IssueTokens(attacker, p.Signer.JKT())
		refused("another account's token", p.Registration(victim, access, refresh, pds.URL), 400,
			"access_token belongs to another account")

		// A real token of the victim, bound to a key that is not the provisioned one.
		other, err := oauth.GenerateKey()
		if err != nil {
			t.Fatal(err)
		}
		otherJKT, _ := oauth.JWKThumbprint(&other.PublicKey)
		access, refresh = pds.IssueTokens(victim, otherJKT)
		refused("token bound to another key", p.Registration(victim, access, refresh, pds.URL), 400,
			"the PDS did not accept access_token with the provisioned key")

		// A DID no directory knows.
		refused("unresolvable did", p.Registration("did:plc:nobodyatall0000000000", access, refresh, pds.URL), 400,
			"did could not be resolved")

		if n := sessionsOf(t, env.Store, client.ID, victim); n != 0 {
			t.Fatalf("%d sessions stored for the victim by refused registrations", n)
		}

		// A PDS that cannot answer is not a refusal of the account: the
		// provision survives and the registration may be retried.
		access, refresh = pds.IssueTokens(victim, p.Signer.JKT())
		pds.FailNext("com.atproto.server.getSession", 503, "InternalServerError", "down for a moment")
		refused("PDS unavailable", p.Registration(victim, access, refresh, pds.URL), 500, "upstream PDS failure")
		reg = p.Registration(victim, access, refresh, pds.URL+"/") // the same origin, spelled differently
		if r := register(reg); r.Status != 200 || r.Object(t)["did"] != victim {
			t.Fatalf("genuine registration: %d %s", r.Status, r.Raw)
		}
		if r := register(reg); r.Status != 400 || r.Error(t) != "unknown, used or expired provision_id" {
			t.Fatalf("provision reused: %d %s", r.Status, r.Raw)
		}
		if n := sessionsOf(t, env.Store, client.ID, victim); n != 1 {
			t.Fatalf("sessions of the victim: %d, want 1", n)
		}
	})
}

func sessionsOf(t *testing.T, store storage.Store, clientID, did string) int {
	t.Helper()
	list, err := store.ListDeviceSessions(context.Background(), clientID, did)
	if err != nil {
		t.Fatal(err)
	}
	return len(list)
}

// TestMisreportedWritesAreNotIndexed: what a PDS answers to a write is
// checked against the request before it is indexed. A rev dated far ahead
// would make every later genuine version look older and be ignored.
func TestMisreportedWritesAreNotIndexed(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env := testenv.New(t, open(t), appview.Config{})
		var lie atomic.Pointer[func(oauthtest.Record) oauthtest.Record]
		pds := oauthtest.New(t, oauthtest.Options{MisreportWrite: func(r oauthtest.Record) oauthtest.Record {
			if f := lie.Load(); f != nil {
				return (*f)(r)
			}
			return r
		}})
		did := env.PLC.NewAccount(t, false, pds.URL).DID.String()
		client, secret := env.NewClient(t, apiclients.NewClient{})
		putNoteLexicons(t, env)
		dev := signIn(t, env, pds, client.Key, secret, did)
		indexed := func(uri string) bool {
			r := env.Do(t, "GET", "/xrpc/app.test.listNotes?uri="+url.QueryEscape(uri), nil, "X-Client-Key", client.Key)
			return r.Status == 200
		}
		future := syntax.NewTID(time.Now().Add(24*time.Hour).UnixMicro(), 0).String()
		for name, rewrite := range map[string]func(oauthtest.Record) oauthtest.Record{
			"rev not a TID":   func(r oauthtest.Record) oauthtest.Record { r.Rev = "zzzzzzzzzzzzz"; return r },
			"rev a day ahead": func(r oauthtest.Record) oauthtest.Record { r.Rev = future; return r },
			"another repository": func(r oauthtest.Record) oauthtest.Record {
				r.URI = strings.Replace(r.URI, did, "did:plc:victim", 1)
				return r
			},
			"another collection": func(r oauthtest.Record) oauthtest.Record {
				r.URI = strings.Replace(r.URI, "app.test.note", "app.test.other", 1)
				return r
			},
			"not a CID": func(r oauthtest.Record) oauthtest.Record { r.CID = "not-a-cid"; return r },
		} {
			lie.Store(&rewrite)
			r := dev.call(t, "POST", "/xrpc/app.test.createNote", map[string]any{"text": name})
			if r.Status != 200 {
				t.Fatalf("%s: the PDS's answer is passed on: %d %s", name, r.Status, r.Raw)
			}
			uri, _ := r.Object(t)["uri"].(string)
			if indexed(uri) {
				t.Errorf("%s: the misreported write %s was indexed", name, uri)
			}
			if why := r.Header.Get("Lexview-Not-Indexed"); !strings.HasPrefix(why, "the PDS's answer does not match the write: ") {
				t.Errorf("%s: the answer does not say why the write is not indexed: %q", name, why)
			}
		}
		// An honest answer is indexed, and a later version replaces it.
		lie.Store(nil)
		r := dev.call(t, "POST", "/xrpc/app.test.createNote", map[string]any{"text": "honest"})
		uri, _ := r.Object(t)["uri"].(string)
		if r.Status != 200 || !indexed(uri) || r.Header.Get("Lexview-Not-Indexed") != "" {
			t.Fatalf("honest write: %d %s %v, indexed %v", r.Status, r.Raw, r.Header, indexed(uri))
		}
		if r := dev.call(t, "POST", "/xrpc/app.test.createNote", map[string]any{"uri": uri, "text": "edited"}); r.Status != 200 {
			t.Fatalf("edit: %d %s", r.Status, r.Raw)
		}
		got := env.Do(t, "GET", "/xrpc/app.test.listNotes?uri="+url.QueryEscape(uri), nil, "X-Client-Key", client.Key)
		if rec, _ := got.Object(t)["record"].(map[string]any); rec["text"] != "edited" {
			t.Fatalf("after the edit: %s", got.Raw)
		}
	})
}
