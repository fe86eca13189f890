package appview_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/testing/plugintest"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/internal/oauthtest"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// provider is a local OAuth 2.0 provider stand-in: an authorize endpoint
// that redirects at once with a code, a token endpoint (authorization
// code and refresh grants, client secret checked), and an API with the
// account's profile and items.
type provider struct {
	*httptest.Server
	mu        sync.Mutex
	codes     map[string]bool
	access    map[string]bool
	refreshes int
	items     []map[string]string
	n         int
}

const (
	demoClientID     = "lexview-demo"
	demoClientSecret = "s3cret-client-secret-value"
)

func newProvider(t *testing.T) *provider {
	p := &provider{codes: map[string]bool{}, access: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /oauth/authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("client_id") != demoClientID || q.Get("response_type") != "code" || q.Get("state") == "" {
			http.Error(w, "bad authorize request", 400)
			return
		}
		code := p.mint("code")
		p.mu.Lock()
		p.codes[code] = true
		p.mu.Unlock()
		http.Redirect(w, r, q.Get("redirect_uri")+"?"+url.Values{"code": {code}, "state": {q.Get("state")}}.Encode(), http.StatusFound)
	})
	mux.HandleFunc("POST /oauth/token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		if r.PostForm.Get("client_id") != demoClientID || r.PostForm.Get("client_secret") != demoClientSecret {
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		switch r.PostForm.Get("grant_type") {
		case "authorization_code":
			if !p.codes[r.PostForm.Get("code")] {
				http.Error(w, `{"error":"invalid_grant"}`, 400)
				return
			}
			delete(p.codes, r.PostForm.Get("code"))
		case "refresh_token":
			if r.PostForm.Get("refresh_token") != "refresh-1" {
				http.Error(w, `{"error":"invalid_grant"}`, 400)
				return
			}
			p.refreshes++
		default:
			http.Error(w, `{"error":"unsupported_grant_type"}`, 400)
			return
		}
		p.n++
		tok := fmt.Sprintf("access-%d", p.n)
		p.access[tok] = true
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "refresh_token": "refresh-1", "expires_in": 3600, "token_type": "Bearer"})
	})
	authed := func(r *http.Request) bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.access[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
	}
	mux.HandleFunc("GET /api/me", func(w http.ResponseWriter, r *http.Request) {
		if !authed(r) {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"id": "ext-42", "name": "Ann Example"})
	})
	mux.HandleFunc("GET /api/items", func(w http.ResponseWriter, r *http.Request) {
		if !authed(r) {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		since := r.URL.Query().Get("since")
		out := []map[string]string{}
		for _, it := range p.items {
			if it["id"] > since {
				out = append(out, it)
			}
		}
		cursor := since
		if len(out) > 0 {
			cursor = out[len(out)-1]["id"]
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"items": out, "cursor": cursor})
	})
	p.Server = httptest.NewServer(mux)
	t.Cleanup(p.Close)
	return p
}

func (p *provider) mint(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano())
}

// revoke makes every access token issued so far invalid.
func (p *provider) revoke() {
	p.mu.Lock()
	p.access = map[string]bool{}
	p.mu.Unlock()
}

func (p *provider) addItems(items ...map[string]string) {
	p.mu.Lock()
	p.items = append(p.items, items...)
	p.mu.Unlock()
}

// serveDemo serves the oauth-demo example's module and two manifests: the
// example's, pointed at prov (id oauth-demo), and one whose allowed_hosts
// do not name the provider (id oauth-demo-nohost). It returns the base
// URL and the module's sha256.
func serveDemo(t *testing.T, prov *provider) (string, string) {
	bin := plugintest.Build(t, "examples/plugins/oauthdemo")
	raw, err := os.ReadFile("../examples/plugins/oauthdemo/manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	var mf map[string]any
	if err := json.Unmarshal(raw, &mf); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(prov.URL)
	cfg := mf["config"].(map[string]any)
	cfg["authorize_url"], cfg["token_url"], cfg["api_url"] = prov.URL+"/oauth/authorize", prov.URL+"/oauth/token", prov.URL+"/api"
	mf["allowed_hosts"] = []string{u.Hostname()}
	good, _ := json.Marshal(mf)
	mf["id"], mf["allowed_hosts"] = "oauth-demo-nohost", []string{"provider.example.com"}
	nohost, _ := json.Marshal(mf)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/demo/manifest.json":
			_, _ = w.Write(good)
		case "/nohost/manifest.json":
			_, _ = w.Write(nohost)
		case "/demo/oauthdemo.wasm", "/nohost/oauthdemo.wasm":
			_, _ = w.Write(bin)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	sum := sha256.Sum256(bin)
	return srv.URL, hex.EncodeToString(sum[:])
}

// authorize follows the authorize URL to the provider and returns the
// path and query of the callback it redirects to, without following it.
func authorize(t *testing.T, env *testenv.Env, authorizeURL string) string {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(authorizeURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusFound || !strings.HasPrefix(loc, env.URL+"/plugins/") {
		t.Fatalf("authorize: %d to %q", resp.StatusCode, loc)
	}
	return strings.TrimPrefix(loc, env.URL)
}

func putItemLexicons(t *testing.T, env *testenv.Env) {
	t.Helper()
	for _, up := range []lexicon.Upload{
		{Document: json.RawMessage(`{"lexicon":1,"id":"com.example.demo.item","defs":{"main":{"type":"record","key":"any","record":{"type":"object","required":["text"],"properties":{"text":{"type":"string","maxLength":100},"sourceId":{"type":"string"},"createdAt":{"type":"string","format":"datetime"}}}}}}`)},
		{Document: json.RawMessage(`{"lexicon":1,"id":"com.example.demo.listItems","defs":{"main":{"type":"query"}}}`), TargetCollection: "com.example.demo.item"},
	} {
		if _, err := env.App.Lexicons().Put(context.Background(), up); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPluginAccounts signs a user in with the oauth-demo example against
// the provider stand-in and syncs the account's items into the user's
// repository on the PDS stand-in (internal/oauthtest), indexed by Lexview.
func TestPluginAccounts(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		prov := newProvider(t)
		base, sum := serveDemo(t, prov)
		logs := &testenv.LogBuffer{}
		env := testenv.New(t, open(t), appview.Config{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
		admin := env.Bootstrap(t)
		putItemLexicons(t, env)
		pds := oauthtest.New(t, oauthtest.Options{})
		client, secret := env.NewClient(t, apiclients.NewClient{})
		ann := env.PLC.NewAccount(t, false, pds.URL).DID.String()
		bob := env.PLC.NewAccount(t, false, pds.URL).DID.String()
		annDev := env.SignIn(t, pds, testenv.AppClient{Key: client.Key, Secret: secret}, ann)
		bobDev := env.SignIn(t, pds, testenv.AppClient{Key: client.Key, Secret: secret}, bob)

		if r := admin.Do(t, "POST", "/admin/plugins", map[string]any{"url": base + "/demo/manifest.json", "sha256": sum}); r.Status != 200 {
			t.Fatalf("install: %d %s", r.Status, r.Raw)
		}
		if r := admin.Do(t, "PUT", "/admin/plugins/oauth-demo/secrets", map[string]any{"secrets": map[string]string{
			"client_id": demoClientID, "client_secret": demoClientSecret}}); r.Status != 204 {
			t.Fatalf("secrets: %d %s", r.Status, r.Raw)
		}
		prov.addItems(map[string]string{"id": "item-1", "text": "first", "created_at": "2026-01-02T03:04:05Z"},
			map[string]string{"id": "item-2", "text": "second"},
			map[string]string{"id": "item-3", "text": "no lexicon", "collection": "com.example.unknown.thing"},
			map[string]string{"id": "item-3 bad key", "text": "invalid record key"})

		// Anonymous callers cannot start.
		if r := env.Do(t, "POST", "/plugins/oauth-demo/connect", nil, "X-Client-Key", client.Key); r.Status != 401 {
			t.Fatalf("anonymous connect: %d %s", r.Status, r.Raw)
		}
		// Connect: the plugin builds the authorize URL; the provider
		// redirects to the callback with a code; the callback stores the
		// tokens and syncs.
		r := annDev.Call(t, "POST", "/plugins/oauth-demo/connect", nil)
		authURL := authorizeURL(t, r)
		if r.Status != 200 || !strings.HasPrefix(authURL, prov.URL+"/oauth/authorize?") ||
			!strings.Contains(authURL, "redirect_uri="+url.QueryEscape(env.URL+"/plugins/oauth-demo/callback")) {
			t.Fatalf("connect: %d %s", r.Status, r.Raw)
		}
		callback := authorize(t, env, authURL)
		r = env.Do(t, "GET", callback, nil)
		if r.Status != 200 {
			t.Fatalf("callback: %d %s", r.Status, r.Raw)
		}
		var done struct {
			DID      string
			External struct{ ID, Name string }
			Sync     struct {
				Written int
				Refused []struct{ Collection, Reason string }
			}
		}
		r.JSON(t, &done)
		if strings.Contains(string(r.Raw), "access-") || strings.Contains(string(r.Raw), "refresh-1") {
			t.Fatalf("the callback answer shows tokens: %s", r.Raw)
		}
		if done.DID != ann || done.External.ID != "ext-42" || done.Sync.Written != 2 || len(done.Sync.Refused) != 2 ||
			done.Sync.Refused[0].Collection != "com.example.unknown.thing" || !strings.Contains(done.Sync.Refused[1].Reason, "invalid record key") {
			t.Fatalf("callback answer: %s", r.Raw)
		}
		for _, rkey := range []string{"item-1", "item-2"} {
			uri := "at://" + ann + "/com.example.demo.item/" + rkey
			if _, ok := pds.Record(uri); !ok {
				t.Fatalf("%s is not on the PDS", uri)
			}
			got := env.Do(t, "GET", "/xrpc/com.example.demo.listItems?uri="+uri, nil, "X-Client-Key", client.Key)
			if got.Status != 200 || got.Object(t)["record"].(map[string]any)["sourceId"] != rkey {
				t.Fatalf("indexed %s: %d %s", uri, got.Status, got.Raw)
			}
		}
		if _, ok := pds.Record("at://" + ann + "/com.example.unknown.thing/item-3"); ok {
			t.Fatal("a record without a lexicon was written")
		}
		// The tokens are stored sealed, bound to the plugin and the user.
		acct, err := env.Store.GetPluginAccount(context.Background(), "oauth-demo", ann)
		if err != nil || strings.Contains(acct.SealedTokens, "access-") || strings.Contains(acct.SealedTokens, "refresh-1") ||
			acct.Cursor != "item-3 bad key" || acct.ExternalID != "ext-42" {
			t.Fatalf("stored account: %+v %v", acct, err)
		}
		if r := annDev.Call(t, "GET", "/plugins/oauth-demo/account", nil); r.Status != 200 ||
			!strings.Contains(string(r.Raw), `"connected":true`) || strings.Contains(string(r.Raw), "access-") {
			t.Fatalf("account: %d %s", r.Status, r.Raw)
		}

		// Replayed, forged and expired states are refused.
		if r := env.Do(t, "GET", callback, nil); r.Status != 400 {
			t.Fatalf("replayed state: %d %s", r.Status, r.Raw)
		}
		if r := env.Do(t, "GET", "/plugins/oauth-demo/callback?code=x&state=forged", nil); r.Status != 400 {
			t.Fatalf("forged state: %d %s", r.Status, r.Raw)
		}
		now := time.Now()
		if err := env.Store.CreateOAuthAuthRequest(context.Background(), storage.OAuthAuthRequest{State: "old-state",
			Purpose: "plugin-account", Subject: "oauth-demo", DomainOrigin: env.URL, AccountDID: ann, SealedData: "x",
			CreatedAt: now.Add(-time.Hour), ExpiresAt: now.Add(-time.Minute)}); err != nil {
			t.Fatal(err)
		}
		if r := env.Do(t, "GET", "/plugins/oauth-demo/callback?code=x&state=old-state", nil); r.Status != 400 {
			t.Fatalf("expired state: %d %s", r.Status, r.Raw)
		}
		// A state issued to Ann, brought back with Bob's credentials.
		r = annDev.Call(t, "POST", "/plugins/oauth-demo/connect", nil)
		cb := authorize(t, env, authorizeURL(t, r))
		if r := bobDev.Call(t, "GET", cb, nil); r.Status != 403 {
			t.Fatalf("callback with another user's credentials: %d %s", r.Status, r.Raw)
		}
		// A state of another plugin's flow is refused too.
		r = annDev.Call(t, "POST", "/plugins/oauth-demo/connect", nil)
		cb = authorize(t, env, authorizeURL(t, r))
		if r := env.Do(t, "GET", strings.Replace(cb, "/oauth-demo/", "/other/", 1), nil); r.Status != 400 {
			t.Fatalf("state for another plugin: %d %s", r.Status, r.Raw)
		}

		// Refresh: the provider revokes the access token; the plugin asks
		// for a refresh, Lexview refreshes and syncs the new item.
		prov.revoke()
		prov.addItems(map[string]string{"id": "item-4", "text": "after refresh"})
		r = annDev.Call(t, "POST", "/plugins/oauth-demo/sync", nil)
		if r.Status != 200 || r.Object(t)["written"] != float64(1) || r.Object(t)["refreshed"] != true || prov.refreshes != 1 {
			t.Fatalf("sync after revoke: %d %s (refreshes %d)", r.Status, r.Raw, prov.refreshes)
		}
		if _, ok := pds.Record("at://" + ann + "/com.example.demo.item/item-4"); !ok {
			t.Fatal("item-4 is not on the PDS")
		}
		// Reconnecting the same external account keeps the cursor: the
		// first sync finds nothing new.
		r = annDev.Call(t, "POST", "/plugins/oauth-demo/connect", nil)
		cb = authorize(t, env, authorizeURL(t, r))
		if r := env.Do(t, "GET", cb, nil); r.Status != 200 || r.Object(t)["sync"].(map[string]any)["written"] != float64(0) {
			t.Fatalf("reconnect: %d %s", r.Status, r.Raw)
		}
		if acct, err := env.Store.GetPluginAccount(context.Background(), "oauth-demo", ann); err != nil || acct.Cursor != "item-4" {
			t.Fatalf("cursor after reconnect: %+v %v", acct, err)
		}
		// Bob has no connection.
		if r := bobDev.Call(t, "POST", "/plugins/oauth-demo/sync", nil); r.Status != 404 {
			t.Fatalf("sync without a connection: %d %s", r.Status, r.Raw)
		}

		// A plugin whose manifest does not allow the provider's host
		// cannot reach it: the exchange fails, nothing is stored.
		if r := admin.Do(t, "POST", "/admin/plugins", map[string]any{"url": base + "/nohost/manifest.json"}); r.Status != 200 {
			t.Fatalf("install nohost: %d %s", r.Status, r.Raw)
		}
		admin.Do(t, "PUT", "/admin/plugins/oauth-demo-nohost/secrets", map[string]any{"secrets": map[string]string{
			"client_id": demoClientID, "client_secret": demoClientSecret}})
		r = bobDev.Call(t, "POST", "/plugins/oauth-demo-nohost/connect", nil)
		cb = authorize(t, env, authorizeURL(t, r))
		if r := env.Do(t, "GET", cb, nil); r.Status != 500 || !strings.Contains(r.Error(t), "allowed_hosts") {
			t.Fatalf("undeclared host: %d %s", r.Status, r.Raw)
		}
		if _, err := env.Store.GetPluginAccount(context.Background(), "oauth-demo-nohost", bob); err == nil {
			t.Fatal("an account was stored for a failed exchange")
		}
		// A plugin without auth_type oauth2 has no connect route.
		if r := annDev.Call(t, "POST", "/plugins/nope/connect", nil); r.Status != 404 {
			t.Fatalf("unknown plugin: %d %s", r.Status, r.Raw)
		}

		// Events: connected and synced, with counts.
		ev := admin.Do(t, "GET", "/admin/events?event_type=plugin.sync", nil)
		if !strings.Contains(string(ev.Raw), `"written":2`) || !strings.Contains(string(ev.Raw), `"written":1`) {
			t.Fatalf("plugin.sync events: %s", ev.Raw)
		}
		if ev := admin.Do(t, "GET", "/admin/events?event_type=plugin.account_connected", nil); !strings.Contains(string(ev.Raw), "ext-42") {
			t.Fatalf("plugin.account_connected events: %s", ev.Raw)
		}

		// Disconnect deletes the tokens.
		if r := annDev.Call(t, "DELETE", "/plugins/oauth-demo/account", nil); r.Status != 204 {
			t.Fatalf("disconnect: %d %s", r.Status, r.Raw)
		}
		if _, err := env.Store.GetPluginAccount(context.Background(), "oauth-demo", ann); err == nil {
			t.Fatal("tokens kept after disconnect")
		}
		if r := annDev.Call(t, "DELETE", "/plugins/oauth-demo/account", nil); r.Status != 404 {
			t.Fatalf("disconnect twice: %d %s", r.Status, r.Raw)
		}

		// Secrets and tokens never reach the logs or the event log.
		all := admin.Do(t, "GET", "/admin/events?limit=500", nil)
		for _, s := range []string{demoClientSecret, "access-1", "refresh-1"} {
			if strings.Contains(logs.String(), s) || strings.Contains(string(all.Raw), s) {
				t.Fatalf("%q leaked into the logs or events", s)
			}
		}
	})
}

// authorizeURL is a connect answer's authorize_url; an answer without one
// fails the test with its status and body.
func authorizeURL(t *testing.T, r testenv.Response) string {
	t.Helper()
	u, ok := r.Object(t)["authorize_url"].(string)
	if !ok {
		t.Fatalf("connect: %d %s", r.Status, r.Raw)
	}
	return u
}
