package appview_test

import (
	"context"
	"html"
	"strings"
	"testing"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/storage/storagetest"
)

// acceptHTML is the Accept header of a browser's navigation.
var acceptHTML = []string{"Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}

// TestSignInFailuresStayInTheDashboard: a browser whose handle sign-in is
// refused (at its start, or at the OAuth callback) gets the dashboard's
// sign-in page with the reason and the sign-in forms, under the refusal's
// status and the dashboard's security headers; other clients still get
// the JSON error.
func TestSignInFailuresStayInTheDashboard(t *testing.T) {
	t.Parallel()
	env := testenv.New(t, storagetest.SQLite(t), appview.Config{Security: appview.SecurityConfig{SessionSecret: testSessionSecret}})
	env.Bootstrap(t)
	for _, tc := range []struct {
		path   string
		status int
		msg    string
	}{
		{"/auth/login?handle=not%20a%20handle", 400, "invalid handle or DID: not a handle"},
		{"/auth/login?handle=did:plc:nobodyhere0000000000000", 400, "cannot resolve did:plc:nobodyhere0000000000000"},
		{"/oauth/callback?state=forged&code=x&iss=https://pds.test", 400, "invalid OAuth callback: unknown, used or expired state"},
		{"/oauth/callback", 400, "invalid OAuth callback: missing state"},
	} {
		r := env.Do(t, "GET", tc.path, nil, acceptHTML...)
		body := string(r.Raw)
		if r.Status != tc.status || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") ||
			r.Header.Get("Content-Security-Policy") == "" || r.Header.Get("Cache-Control") != "no-store" || !strings.Contains(body, `id="signin-failed"`) ||
			!strings.Contains(body, `id="signin-key"`) || !strings.Contains(html.UnescapeString(body), tc.msg) {
			t.Errorf("browser, %s: %d %q\n%s", tc.path, r.Status, r.Header.Get("Content-Type"), body)
		}
		if r := env.Do(t, "GET", tc.path, nil); r.Status != tc.status || !strings.HasPrefix(r.Error(t), tc.msg) {
			t.Errorf("API client, %s: %d %s", tc.path, r.Status, r.Raw)
		}
	}
}

// TestSignInPageSaysHowToClaim: the dashboard's sign-in page of an
// instance with no admin yet says how to claim it (the configured
// command), and says nothing of it once the instance is claimed.
func TestSignInPageSaysHowToClaim(t *testing.T) {
	t.Parallel()
	const cmd = "go run ./cmd/appview admin bootstrap --did <your DID>"
	env := testenv.New(t, storagetest.SQLite(t), appview.Config{Security: appview.SecurityConfig{ClaimCommand: cmd}})
	page := func() string {
		r := env.Do(t, "GET", "/dashboard/signin", nil, acceptHTML...)
		if r.Status != 200 {
			t.Fatalf("sign-in page: %d %s", r.Status, r.Raw)
		}
		return html.UnescapeString(string(r.Raw))
	}
	if p := page(); !strings.Contains(p, "This instance has no admin yet") || !strings.Contains(p, "<code>"+cmd+"</code>") {
		t.Fatalf("unclaimed instance's sign-in page:\n%s", p)
	}
	if _, err := env.App.Bootstrap(context.Background(), "did:plc:claimedbypage000000000", false); err != nil {
		t.Fatal(err)
	}
	if p := page(); strings.Contains(p, "no admin yet") || !strings.Contains(p, `id="signin-key"`) {
		t.Fatalf("claimed instance's sign-in page:\n%s", p)
	}
}
