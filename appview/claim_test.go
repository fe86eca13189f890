package appview_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

const unclaimedMsg = "this instance has no admin yet: claim it with `appview admin bootstrap --did <your DID>`, " +
	"or send the claim token printed at start-up in the X-Claim-Token header"

// TestClaimNeedsTheToken: by default a fresh instance is not given to
// whoever asks first. Its first admin request must carry the claim token
// the start-up log shows (or the operator runs admin bootstrap).
func TestClaimNeedsTheToken(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		var logs testenv.LogBuffer
		env := testenv.New(t, open(t), appview.Config{Logger: slog.New(slog.NewTextHandler(&logs, nil)),
			Security: appview.SecurityConfig{ClaimCommand: "appview admin bootstrap --did <your DID>"}})
		token := env.App.ClaimToken()
		if !strings.HasPrefix(token, "hvclaim_") || !strings.Contains(logs.String(), token) ||
			!strings.Contains(logs.String(), "level=WARN msg=\"THIS INSTANCE HAS NO ADMIN YET") {
			t.Fatalf("claim token %q; start-up log:\n%s", token, logs.String())
		}
		first := env.PLC.NewAccount(t, false, "https://pds.test")
		ask := func(acct *testenv.Account, claim string) testenv.Response {
			h := testenv.Bearer(acct.ServiceAuth(t))
			if claim != "" {
				h = append(h, "X-Claim-Token", claim)
			}
			return env.Do(t, "GET", "/admin/users", nil, h...)
		}
		for name, claim := range map[string]string{"no token": "", "wrong token": token + "x"} {
			if r := ask(first, claim); r.Status != 403 || r.Error(t) != unclaimedMsg {
				t.Fatalf("%s: %d %s", name, r.Status, r.Raw)
			}
		}
		if users, _ := env.Store.ListAdminUsers(context.Background()); len(users) != 0 {
			t.Fatalf("a refused request claimed the instance: %+v", users)
		}
		if r := ask(first, token); r.Status != 200 {
			t.Fatalf("claim with the token: %d %s", r.Status, r.Raw)
		}
		// Claimed: the token is worth nothing now, and the message is the
		// specification's.
		if r := ask(env.PLC.NewAccount(t, false, "https://pds.test"), token); r.Status != 403 || r.Error(t) != "forbidden" {
			t.Fatalf("second claim: %d %s", r.Status, r.Raw)
		}
		if r := ask(first, ""); r.Status != 200 {
			t.Fatalf("the super user afterwards: %d %s", r.Status, r.Raw)
		}
		// No claim message once claimed: a restart says nothing.
		var again testenv.LogBuffer
		cfg := appview.Config{
			Store:    env.Store,
			Logger:   slog.New(slog.NewTextHandler(&again, nil)),
			Ingest:   appview.IngestConfig{JetstreamURL: "off", RelayURL: "http://127.0.0.1:1"},
			Security: appview.SecurityConfig{TokenEncryptionKey: testenv.TokenKey},
			Network:  appview.NetworkConfig{PLCURL: env.PLC.URL, AllowPrivateNetworks: true},
		}
		app, err := appview.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := app.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		app.Shutdown(context.Background())
		if strings.Contains(again.String(), "NO ADMIN") {
			t.Fatalf("a claimed instance announces a claim:\n%s", again.String())
		}
	})
}

// TestClaimModes: the specification's first-request rule stays available,
// and an operator can allow only the command.
func TestClaimModes(t *testing.T) {
	t.Parallel()
	store := storagetest.SQLite(t)
	env := testenv.New(t, store, appview.Config{Security: appview.SecurityConfig{AdminClaim: appview.ClaimFirstRequest}})
	if env.App.ClaimToken() != "" {
		t.Fatal("a claim token in first-request mode")
	}
	if r := env.Do(t, "GET", "/admin/users", nil, testenv.Bearer(env.PLC.NewAccount(t, false, "https://pds.test").ServiceAuth(t))...); r.Status != 200 {
		t.Fatalf("first request: %d %s", r.Status, r.Raw)
	}

	env = testenv.New(t, storagetest.SQLite(t), appview.Config{Security: appview.SecurityConfig{AdminClaim: appview.ClaimByCommand}})
	acct := env.PLC.NewAccount(t, false, "https://pds.test")
	// No claim token in this mode, and no command: the program embedding
	// Lexview (here testenv) claims it through the Go API.
	const byCommand = "this instance has no admin yet: claim it with App.Bootstrap (the program embedding Lexview calls it)"
	if r := env.Do(t, "GET", "/admin/users", nil, testenv.Bearer(acct.ServiceAuth(t))...); r.Status != 403 || r.Error(t) != byCommand {
		t.Fatalf("command mode, first request: %d %s", r.Status, r.Raw)
	}
	key, err := appview.Bootstrap(context.Background(), appview.Config{Store: env.Store}, acct.DID.String(), false)
	if err != nil {
		t.Fatal(err)
	}
	if r := env.Do(t, "GET", "/admin/users", nil, testenv.Bearer(key)...); r.Status != 200 {
		t.Fatalf("the bootstrapped key: %d %s", r.Status, r.Raw)
	}
	if _, err := appview.New(appview.Config{Store: store, Security: appview.SecurityConfig{AdminClaim: "anyone"}}); err == nil {
		t.Fatal("an unknown claim mode was accepted")
	}
}

// TestServiceAuthNamesThisService: an admin service-auth JWT must be for
// this service (its DID, or an audience the operator added), and must not
// be bound to an XRPC method.
func TestServiceAuthNamesThisService(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, storagetest.SQLite(t), appview.Config{})
	admin := env.Bootstrap(t)
	exp := time.Now().Add(time.Minute).Unix()
	for _, tc := range []struct {
		name   string
		claims map[string]any
		status int
		msg    string
	}{
		{"this instance's DID", map[string]any{"aud": env.App.InstanceDID(context.Background())}, 200, ""},
		{"a service of it", map[string]any{"aud": env.App.InstanceDID(context.Background()) + "#bsky_appview"}, 200, ""},
		{"an added audience", map[string]any{"aud": testenv.TestAudience}, 200, ""},
		{"another service", map[string]any{"aud": "did:web:whatever.example"}, 401,
			`invalid service auth token: audience "did:web:whatever.example" is not this service`},
		{"no audience", map[string]any{}, 401, `invalid service auth token: audience "" is not this service`},
		{"bound to a method", map[string]any{"aud": testenv.TestAudience, "lxm": "xyz.statusphere.getStatuses"}, 401,
			"invalid service auth token: a token bound to a method (lxm) is not accepted on the admin API"},
	} {
		claims := map[string]any{"iss": admin.Account.DID.String(), "exp": exp}
		for k, v := range tc.claims {
			claims[k] = v
		}
		r := env.Do(t, "POST", "/admin/api-keys", map[string]any{"name": tc.name, "permissions": []string{"stats:read"}},
			testenv.Bearer(admin.Account.JWT(t, nil, claims))...)
		if tc.status == 200 && r.Status != 201 || tc.status != 200 && (r.Status != tc.status || r.Error(t) != tc.msg) {
			t.Errorf("%s: %d %s", tc.name, r.Status, r.Raw)
		}
	}
}

// TestXRPCServiceAuthMethod: on XRPC a service-auth JWT bound to a method
// (lxm) identifies its issuer only on that method.
func TestXRPCServiceAuthMethod(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, storagetest.SQLite(t), appview.Config{})
	putNoteLexicons(t, env)
	client, _ := env.NewClient(t, apiclients.NewClient{})
	acct := env.PLC.NewAccount(t, false, "https://pds.test")
	token := func(lxm string) string {
		c := map[string]any{"iss": acct.DID.String(), "aud": env.App.InstanceDID(context.Background()), "exp": time.Now().Add(time.Minute).Unix()}
		if lxm != "" {
			c["lxm"] = lxm
		}
		return acct.JWT(t, nil, c)
	}
	for lxm, want := range map[string]int{"": 200, "app.test.listNotes": 200, "app.test.createNote": 401} {
		r := env.Do(t, "GET", "/xrpc/app.test.listNotes", nil, append(testenv.Bearer(token(lxm)), "X-Client-Key", client.Key)...)
		if r.Status != want {
			t.Errorf("lxm %q: %d %s", lxm, r.Status, r.Raw)
		}
	}
}

// TestClaimTokenSurvivesRestart: the claim token is derived from the key
// sealing secrets at rest, so a restart (another App on the same store
// and key) prints the same one, and another key another.
func TestClaimTokenSurvivesRestart(t *testing.T) {
	t.Parallel()
	store := storagetest.SQLite(t)
	first := testenv.New(t, store, appview.Config{})
	again := testenv.New(t, store, appview.Config{})
	other := testenv.New(t, storagetest.SQLite(t), appview.Config{Security: appview.SecurityConfig{
		TokenEncryptionKey: "ZmVkY2JhOTg3NjU0MzIxMGZlZGNiYTk4NzY1NDMyMTA="}})
	if tok := first.App.ClaimToken(); !strings.HasPrefix(tok, "hvclaim_") || len(tok) < 40 || tok != again.App.ClaimToken() {
		t.Fatalf("claim tokens of one store and key: %q, then %q", tok, again.App.ClaimToken())
	}
	if first.App.ClaimToken() == other.App.ClaimToken() {
		t.Fatal("two keys make the same claim token")
	}
	// The restarted instance accepts it.
	acct := again.PLC.NewAccount(t, false, "https://pds.test")
	h := append(testenv.Bearer(acct.ServiceAuth(t)), "X-Claim-Token", first.App.ClaimToken())
	if r := again.Do(t, "GET", "/admin/users", nil, h...); r.Status != 200 {
		t.Fatalf("claim with the token of the previous start: %d %s", r.Status, r.Raw)
	}
}

// TestAppBootstrap: an embedding program makes the first admin of its App
// with App.Bootstrap, which mints a key the admin API accepts; a second
// DID is refused, and the same DID gets another key only when asked.
func TestAppBootstrap(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, storagetest.SQLite(t), appview.Config{})
	ctx := context.Background()
	if unclaimed, err := env.App.Unclaimed(ctx); err != nil || !unclaimed {
		t.Fatalf("fresh instance: unclaimed %v (%v)", unclaimed, err)
	}
	if _, err := env.App.Bootstrap(ctx, "not a did", false); err == nil {
		t.Fatal("a malformed DID was accepted")
	}
	key, err := env.App.Bootstrap(ctx, "did:plc:embedderadmin0000000000", false)
	if err != nil || !strings.HasPrefix(key, "hv_") {
		t.Fatalf("bootstrap: %q %v", key, err)
	}
	if unclaimed, err := env.App.Unclaimed(ctx); err != nil || unclaimed {
		t.Fatalf("after bootstrap: unclaimed %v (%v)", unclaimed, err)
	}
	if r := env.Do(t, "GET", "/admin/users", nil, testenv.Bearer(key)...); r.Status != 200 {
		t.Fatalf("the minted key: %d %s", r.Status, r.Raw)
	}
	if _, err := env.App.Bootstrap(ctx, "did:plc:someoneelse00000000000", false); !errors.Is(err, appview.ErrBootstrapRefused) {
		t.Fatalf("a second DID: %v", err)
	}
	if _, err := env.App.Bootstrap(ctx, "did:plc:embedderadmin0000000000", false); !errors.Is(err, appview.ErrBootstrapRefused) {
		t.Fatalf("the same DID without forceNewKey: %v", err)
	}
	if again, err := env.App.Bootstrap(ctx, "did:plc:embedderadmin0000000000", true); err != nil || again == key {
		t.Fatalf("forceNewKey: %q %v", again, err)
	}
}
