package userauth

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/core/caller"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/web/sessioncookie"
	"github.com/lexview/lexview/storage"
)

// oneDomain is a registered-domain matcher with one domain.
type oneDomain string

func (d oneDomain) Match(_ context.Context, host string) (storage.Domain, bool) {
	if "https://"+host == string(d) {
		return storage.Domain{ID: "d1", URL: string(d)}, true
	}
	return storage.Domain{}, false
}

// TestCookieStep: with no Authorization header the session cookie
// identifies the user (step 4); a state-changing request by cookie must
// come from a registered domain; a bad cookie is refused; no cookie is
// anonymous.
func TestCookieStep(t *testing.T) {
	codec := sessioncookie.NewCodec([]byte("a-session-secret-of-at-least-32-bytes!"), nil)
	a := &Authenticator{Cookies: codec, Domains: oneDomain("https://a.example")}
	did := syntax.DID("did:plc:alice")
	good := codec.Cookie(did, time.Hour, true)
	for _, tc := range []struct {
		name, method, origin, referer string
		cookie                        string
		kind                          fail.Kind // of the refusal; -1 when accepted
		anonymous                     bool
	}{
		{name: "query by cookie", method: "GET", cookie: good.Value, kind: -1},
		{name: "procedure from the domain", method: "POST", origin: "https://a.example", cookie: good.Value, kind: -1},
		{name: "procedure with a same-site Referer", method: "POST", referer: "https://a.example/app", cookie: good.Value, kind: -1},
		{name: "procedure with no Origin", method: "POST", cookie: good.Value, kind: fail.Forbidden},
		{name: "procedure from elsewhere", method: "POST", origin: "https://evil.example", cookie: good.Value, kind: fail.Forbidden},
		{name: "procedure from the domain over http", method: "POST", origin: "http://a.example", cookie: good.Value, kind: fail.Forbidden},
		{name: "tampered cookie", method: "GET", cookie: good.Value + "x", kind: fail.Unauthenticated},
		{name: "no cookie", method: "POST", kind: -1, anonymous: true},
	} {
		r := httptest.NewRequest(tc.method, "https://a.example/xrpc/app.test.do", nil)
		if tc.cookie != "" {
			r.Header.Set("Cookie", sessioncookie.CookieName+"="+tc.cookie)
		}
		if tc.origin != "" {
			r.Header.Set("Origin", tc.origin)
		}
		if tc.referer != "" {
			r.Header.Set("Referer", tc.referer)
		}
		c, err := a.Authenticate(r, "client")
		switch {
		case tc.kind >= 0 && (err == nil || fail.KindOf(err) != tc.kind):
			t.Errorf("%s: %v, want a %v refusal", tc.name, err, tc.kind)
		case tc.kind < 0 && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.kind < 0 && tc.anonymous && c != nil:
			t.Errorf("%s: caller %+v, want anonymous", tc.name, c)
		case tc.kind < 0 && !tc.anonymous && (c == nil || c.DID != did.String() || c.Via != caller.ViaSession):
			t.Errorf("%s: caller %+v", tc.name, c)
		}
	}
}
