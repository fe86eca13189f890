package appview_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/testing/refpds"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// TestReferencePDSAdminSignIn is the dashboard sign-in end to end against
// the reference PDS: GET /auth/login redirects to the PDS's authorization
// server (Lexview pushed the request as a loopback development client,
// its PUBLIC_URL being on 127.0.0.1), the account signs in and consents
// there (driven over HTTP, see refpds_signin_test.go), and the PDS
// redirects to /oauth/callback, which sets the session cookie. The cookie
// then claims the empty instance (bootstrap) and works on the admin API.
// A forged state, a replayed callback and a callback arriving on another
// host are refused.
func TestReferencePDSAdminSignIn(t *testing.T) {
	t.Parallel()
	n := refpds.Start(t)
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		ctx := context.Background()
		store := open(t)
		env := testenv.New(t, store, appview.Config{
			Network:  appview.NetworkConfig{PLCURL: n.PLCURL},
			Security: appview.SecurityConfig{SessionSecret: testSessionSecret},
		})
		alice := n.CreateAccount(t, "signin-"+t.Name()[strings.LastIndexByte(t.Name(), '/')+1:])
		noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

		// start begins a sign-in at Lexview and takes it through the PDS:
		// it returns the callback URL the PDS redirects the browser to.
		start := func() *url.URL {
			t.Helper()
			resp, err := noRedirect.Get(env.URL + "/auth/login?handle=" + url.QueryEscape(alice.DID))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			to := resp.Header.Get("Location")
			if resp.StatusCode != http.StatusFound || to == "" {
				t.Fatalf("/auth/login: %d Location %q", resp.StatusCode, to)
			}
			flow := newHeadlessSignIn(t, nil, "", "")
			flow.discover(n.PDSPublicURL)
			if !strings.HasPrefix(to, flow.meta.AuthorizationEndpoint+"?") {
				t.Fatalf("/auth/login redirects to %q, not to the authorization endpoint %s", to, flow.meta.AuthorizationEndpoint)
			}
			q, _ := url.Parse(to)
			if cid := q.Query().Get("client_id"); !strings.HasPrefix(cid, "http://localhost?") ||
				!strings.Contains(cid, url.QueryEscape(env.URL+"/oauth/callback")) {
				t.Fatalf("client_id %q is not the loopback client of %s", cid, env.URL)
			}
			loc := flow.authorize(to, alice.Handle, alice.Password)
			if !strings.HasPrefix(loc.String(), env.URL+"/oauth/callback?") || loc.Query().Get("code") == "" {
				t.Fatalf("the PDS redirects to %q", loc)
			}
			return loc
		}
		callback := func(u *url.URL, host string) testenv.Response {
			t.Helper()
			if host == "" {
				return testenv.Request(t, "GET", u.String(), nil)
			}
			return testenv.Request(t, "GET", u.String(), nil, "Host", host)
		}

		// A callback arriving on another host is refused, and its state
		// is spent.
		elsewhere := start()
		host := strings.Replace(strings.TrimPrefix(env.URL, "http://"), "127.0.0.1", "localhost", 1)
		if r := callback(elsewhere, host); r.Status != 400 ||
			r.Error(t) != "invalid OAuth callback: the flow was started on another domain" || r.Header.Get("Set-Cookie") != "" {
			t.Fatalf("callback on another host: %d %s", r.Status, r.Raw)
		}
		if r := callback(elsewhere, ""); r.Status != 400 || r.Error(t) != "invalid OAuth callback: unknown, used or expired state" {
			t.Fatalf("the state of a misdirected callback is spent: %d %s", r.Status, r.Raw)
		}

		cb := start()
		forged := *cb
		q := forged.Query()
		q.Set("state", "forged-"+q.Get("state"))
		forged.RawQuery = q.Encode()
		if r := callback(&forged, ""); r.Status != 400 || r.Error(t) != "invalid OAuth callback: unknown, used or expired state" {
			t.Fatalf("forged state: %d %s", r.Status, r.Raw)
		}

		r := callback(cb, "")
		if r.Status != 200 || r.Object(t)["did"] != alice.DID {
			t.Fatalf("callback: %d %s", r.Status, r.Raw)
		}
		cookie := sessionCookie(t, r)
		if r := callback(cb, ""); r.Status != 400 || r.Error(t) != "invalid OAuth callback: unknown, used or expired state" ||
			r.Header.Get("Set-Cookie") != "" {
			t.Fatalf("replayed callback: %d %s", r.Status, r.Raw)
		}

		// The sign-in keeps no OAuth session: the cookie is the credential.
		if _, err := store.GetOAuthClientSession(ctx, alice.DID, cb.Query().Get("state")); err == nil {
			t.Fatal("the sign-in's OAuth session was kept")
		}

		// The first admin request by cookie claims the empty instance.
		if r := env.Do(t, "GET", "/admin/lexicons", nil, append(cookieHeader(cookie), "X-Claim-Token", env.App.ClaimToken())...); r.Status != 200 {
			t.Fatalf("bootstrap by cookie: %d %s", r.Status, r.Raw)
		}
		u, err := store.GetAdminUserByDID(ctx, alice.DID)
		if err != nil || !u.IsSuper {
			t.Fatalf("the signed-in account is not the super user: %+v %v", u, err)
		}
		if r := env.Do(t, "GET", "/admin/users", nil, cookieHeader(cookie)...); r.Status != 200 {
			t.Fatalf("admin API by cookie: %d %s", r.Status, r.Raw)
		}
		body := map[string]any{"name": "k", "permissions": []string{"lexicons:read"}}
		if r := env.Do(t, "POST", "/admin/api-keys", body, append(cookieHeader(cookie), "Origin", "https://evil.example")...); r.Status != 403 {
			t.Fatalf("cross-site POST by cookie: %d %s", r.Status, r.Raw)
		}
		if r := env.Do(t, "POST", "/admin/api-keys", body, append(cookieHeader(cookie), "Origin", env.URL)...); r.Status != 201 {
			t.Fatalf("same-site POST by cookie: %d %s", r.Status, r.Raw)
		}
	})
}
