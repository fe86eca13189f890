package appview_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/appview/internal/web/sessioncookie"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// testSessionSecret signs the cookies of the sign-in tests.
const testSessionSecret = "a-session-secret-of-at-least-32-bytes!"

// sessionCookie returns the value of the session cookie r sets, failing
// when it sets none or sets it without HttpOnly and SameSite=Lax.
func sessionCookie(t *testing.T, r testenv.Response) string {
	t.Helper()
	resp := http.Response{Header: r.Header}
	for _, c := range resp.Cookies() {
		if c.Name != sessioncookie.CookieName {
			continue
		}
		if !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Secure || c.Path != "/" {
			t.Fatalf("cookie attributes: %q (want HttpOnly, SameSite=Lax, not Secure on http, Path=/)", r.Header.Get("Set-Cookie"))
		}
		return c.Value
	}
	t.Fatalf("no %s cookie in %v", sessioncookie.CookieName, r.Header.Values("Set-Cookie"))
	return ""
}

func cookieHeader(v string) []string { return []string{"Cookie", sessioncookie.CookieName + "=" + v} }

// TestSignInWithAdminKey: POST /auth/login-key turns an admin API key into
// the session cookie; the cookie authenticates the admin API; tampered,
// expired and foreign-secret cookies are refused; a state-changing cookie
// request must come from a registered domain; logout clears the cookie.
func TestSignInWithAdminKey(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env := testenv.New(t, open(t), appview.Config{Security: appview.SecurityConfig{SessionSecret: testSessionSecret}})
		admin := env.Bootstrap(t)
		key := fullKey(t, admin)
		r := admin.Do(t, "POST", "/admin/api-keys", map[string]any{"name": "limited", "permissions": []string{"lexicons:read"}})
		if r.Status != 201 {
			t.Fatalf("create key: %d %s", r.Status, r.Raw)
		}
		limited, _ := r.Object(t)["key"].(string)

		for _, tc := range []struct {
			name    string
			headers []string
			status  int
			msg     string
		}{
			{"no key", nil, 401, "an admin API key is required: Authorization: Bearer hv_..."},
			{"a wrong key", testenv.Bearer("hv_nope"), 401, "invalid API key"},
			{"a limited key", testenv.Bearer(limited), 403, "this key holds fewer permissions than its user, and the session cookie " +
				"would carry all of them: sign in with a key that holds every permission of its user"},
			{"a key sent cross-site", append(testenv.Bearer(key), "Origin", "https://evil.example"), 403,
				"cross-site request refused: the request must carry an Origin (or Referer) header naming a registered domain of this instance"},
		} {
			r := env.Do(t, "POST", "/auth/login-key", nil, tc.headers...)
			if r.Status != tc.status || r.Error(t) != tc.msg || r.Header.Get("Set-Cookie") != "" {
				t.Errorf("%s: %d %s %q", tc.name, r.Status, r.Raw, r.Header.Get("Set-Cookie"))
			}
		}

		r = env.Do(t, "POST", "/auth/login-key", nil, append(testenv.Bearer(key), "Origin", env.URL)...)
		if r.Status != 200 || r.Object(t)["did"] != admin.Account.DID.String() {
			t.Fatalf("login-key: %d %s", r.Status, r.Raw)
		}
		cookie := sessionCookie(t, r)
		did := syntax.DID(admin.Account.DID.String())

		if r := env.Do(t, "GET", "/admin/lexicons", nil, cookieHeader(cookie)...); r.Status != 200 {
			t.Fatalf("admin API by cookie: %d %s", r.Status, r.Raw)
		}

		unsafe := map[string]any{"name": "by cookie", "permissions": []string{"lexicons:read"}}
		for _, tc := range []struct {
			name    string
			headers []string
			status  int
		}{
			{"no Origin nor Referer", nil, 403},
			{"a foreign Origin", []string{"Origin", "https://evil.example"}, 403},
			{"a foreign Referer", []string{"Referer", "https://evil.example/page"}, 403},
			{"a registered Origin", []string{"Origin", env.URL}, 201},
			{"a registered Referer", []string{"Referer", env.URL + "/dashboard"}, 201},
		} {
			r := env.Do(t, "POST", "/admin/api-keys", unsafe, append(cookieHeader(cookie), tc.headers...)...)
			if r.Status != tc.status {
				t.Errorf("POST by cookie with %s: %d %s", tc.name, r.Status, r.Raw)
			} else if tc.status == 403 && !strings.HasPrefix(r.Error(t), "cross-site request refused") {
				t.Errorf("POST by cookie with %s: %s", tc.name, r.Raw)
			}
		}

		// Tampered, expired and foreign-secret cookies.
		tampered := cookie[:len(cookie)-2] + flip(cookie[len(cookie)-2:])
		past := sessioncookie.NewCodec([]byte(testSessionSecret), func() time.Time { return time.Now().Add(-13 * time.Hour) })
		other := sessioncookie.NewCodec([]byte("another-session-secret-of-32-bytes-or-more"), nil)
		for name, v := range map[string]string{
			"tampered":                 tampered,
			"expired":                  past.Encode(did, 12*time.Hour),
			"signed by another secret": other.Encode(did, time.Hour),
		} {
			r := env.Do(t, "GET", "/admin/lexicons", nil, cookieHeader(v)...)
			if r.Status != 401 || r.Error(t) != "invalid session" {
				t.Errorf("%s cookie: %d %s", name, r.Status, r.Raw)
			}
		}

		r = env.Do(t, "POST", "/auth/logout", nil, cookieHeader(cookie)...)
		if r.Status != 204 || !strings.Contains(r.Header.Get("Set-Cookie"), sessioncookie.CookieName+"=;") ||
			!strings.Contains(r.Header.Get("Set-Cookie"), "Max-Age=0") {
			t.Fatalf("logout: %d %q", r.Status, r.Header.Get("Set-Cookie"))
		}
	})
}

// TestSessionSecretChangeInvalidatesCookies: a cookie issued by an
// instance stops working once SESSION_SECRET changes.
func TestSessionSecretChangeInvalidatesCookies(t *testing.T) {
	t.Parallel()
	store := storagetest.SQLite(t)
	first := testenv.New(t, store, appview.Config{Security: appview.SecurityConfig{SessionSecret: testSessionSecret}})
	admin := first.Bootstrap(t)
	key := fullKey(t, admin)
	cookie := sessionCookie(t, first.Do(t, "POST", "/auth/login-key", nil, testenv.Bearer(key)...))
	if r := first.Do(t, "GET", "/admin/lexicons", nil, cookieHeader(cookie)...); r.Status != 200 {
		t.Fatalf("cookie on the issuing instance: %d %s", r.Status, r.Raw)
	}
	same := testenv.New(t, store, appview.Config{Security: appview.SecurityConfig{SessionSecret: testSessionSecret}})
	if r := same.Do(t, "GET", "/admin/lexicons", nil, cookieHeader(cookie)...); r.Status != 200 {
		t.Fatalf("cookie on an instance with the same secret: %d %s", r.Status, r.Raw)
	}
	changed := testenv.New(t, store, appview.Config{Security: appview.SecurityConfig{SessionSecret: "the-secret-was-changed-to-this-value!!"}})
	if r := changed.Do(t, "GET", "/admin/lexicons", nil, cookieHeader(cookie)...); r.Status != 401 {
		t.Fatalf("cookie after SESSION_SECRET changed: %d %s", r.Status, r.Raw)
	}
}

// fullKey mints an admin API key of the super user admin holding every
// permission.
func fullKey(t *testing.T, admin *testenv.Admin) string {
	t.Helper()
	r := admin.Do(t, "POST", "/admin/api-keys", map[string]any{"name": "dashboard", "permissions": admins.All()})
	if r.Status != 201 {
		t.Fatalf("create key: %d %s", r.Status, r.Raw)
	}
	key, _ := r.Object(t)["key"].(string)
	return key
}

// flip changes a base64url string into another of the same length.
func flip(s string) string {
	b := []byte(s)
	for i := range b {
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
	}
	return string(b)
}

// TestLoginRefusals: /auth/login needs an account and a registered
// domain, and stores nothing when it refuses.
func TestLoginRefusals(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, storagetest.SQLite(t), appview.Config{Security: appview.SecurityConfig{SessionSecret: testSessionSecret}})
	if r := env.Do(t, "GET", "/auth/login", nil); r.Status != 400 ||
		r.Error(t) != "the handle query parameter (a handle or a DID) is required" {
		t.Fatalf("no handle: %d %s", r.Status, r.Raw)
	}
	if r := env.Do(t, "GET", "/auth/login?handle=not%20a%20handle", nil); r.Status != 400 ||
		r.Error(t) != "invalid handle or DID: not a handle" {
		t.Fatalf("malformed handle: %d %s", r.Status, r.Raw)
	}
	if r := env.Do(t, "GET", "/auth/login?handle=did:plc:alice", nil, "Host", "unregistered.example"); r.Status != 400 {
		t.Fatalf("login on an unregistered host: %d %s", r.Status, r.Raw)
	}
	if n, err := env.Store.DeleteExpiredOAuthAuthRequests(context.Background(), time.Now().Add(time.Hour)); err != nil || n != 0 {
		t.Fatalf("refused logins stored %d requests (%v)", n, err)
	}
}

// TestSignInOnLoopbackAliases: on an instance whose PUBLIC_URL is a
// loopback URL (testenv's http://127.0.0.1:PORT), a page served as
// http://localhost:PORT or http://[::1]:PORT (where the README sends a
// newcomer) signs in with an admin key and uses the cookie on the admin
// API; another port and a foreign origin are still refused. An instance
// whose PUBLIC_URL is a public https URL has no such alias.
func TestSignInOnLoopbackAliases(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, storagetest.SQLite(t), appview.Config{Security: appview.SecurityConfig{SessionSecret: testSessionSecret}})
	key := fullKey(t, env.Bootstrap(t))
	u, err := url.Parse(env.URL)
	if err != nil || u.Hostname() != "127.0.0.1" {
		t.Fatalf("testenv URL %q (%v): the test needs PUBLIC_URL http://127.0.0.1:PORT", env.URL, err)
	}
	port := u.Port()
	refused := "cross-site request refused: the request must carry an Origin (or Referer) header naming a registered domain of this instance"
	for _, tc := range []struct {
		origin string
		ok     bool
	}{
		{"http://localhost:" + port, true},
		{"http://[::1]:" + port, true},
		{"http://localhost:1", false},
		{"https://localhost:" + port, false},
		{"https://evil.example", false},
		{"http://localhost:" + port + "/", false},
	} {
		r := env.Do(t, "POST", "/auth/login-key", nil, append(testenv.Bearer(key), "Origin", tc.origin)...)
		if !tc.ok {
			if r.Status != 403 || r.Error(t) != refused || r.Header.Get("Set-Cookie") != "" {
				t.Errorf("Origin %s: %d %s", tc.origin, r.Status, r.Raw)
			}
			continue
		}
		if r.Status != 200 {
			t.Errorf("Origin %s: %d %s", tc.origin, r.Status, r.Raw)
			continue
		}
		cookie := sessionCookie(t, r)
		body := map[string]any{"name": "from " + tc.origin, "permissions": []string{"lexicons:read"}}
		if r := env.Do(t, "POST", "/admin/api-keys", body, append(cookieHeader(cookie), "Origin", tc.origin)...); r.Status != 201 {
			t.Errorf("admin API by cookie from %s: %d %s", tc.origin, r.Status, r.Raw)
		}
	}

	public := testenv.New(t, storagetest.SQLite(t), appview.Config{PublicURL: "https://appview.example.com",
		Security: appview.SecurityConfig{SessionSecret: testSessionSecret}})
	key = fullKey(t, public.Bootstrap(t))
	if r := public.Do(t, "POST", "/auth/login-key", nil, append(testenv.Bearer(key), "Origin", "https://appview.example.com")...); r.Status != 200 {
		t.Fatalf("public instance, its own origin: %d %s", r.Status, r.Raw)
	}
	for _, origin := range []string{"http://localhost:" + port, "http://127.0.0.1:" + port, "https://localhost"} {
		if r := public.Do(t, "POST", "/auth/login-key", nil, append(testenv.Bearer(key), "Origin", origin)...); r.Status != 403 || r.Error(t) != refused {
			t.Errorf("public instance, Origin %s: %d %s", origin, r.Status, r.Raw)
		}
	}
}
