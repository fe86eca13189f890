package dashboard_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/internal/browsertest"
)

// TestBrowserSignInWithKey, at the README's address, http://localhost:PORT
// of an instance whose PUBLIC_URL is http://127.0.0.1:PORT: the root leads
// an unauthenticated browser to the sign-in page, which says how to claim
// the fresh instance; a handle sign-in that fails stays in the dashboard,
// with the reason above the sign-in forms; from there a wrong key is
// refused next to the field and the admin's hv_ key signs in, and the
// overview shows the seeded collection's count; signing out leads back to
// the sign-in page; no console errors (the Content-Security-Policy holds)
// but the network log of the expected 400 and 401s.
func TestBrowserSignInWithKey(t *testing.T) {
	ctx := browser(t, 10*time.Second)
	const claimCmd = "go run ./cmd/appview admin bootstrap --did <your DID>"
	env := newInstance(t, appview.Config{Security: appview.SecurityConfig{ClaimCommand: claimCmd}})
	seed(t, env.Store, "app.test.post", 3)
	u, err := url.Parse(env.URL)
	if err != nil || u.Hostname() != "127.0.0.1" {
		t.Fatalf("instance URL %q (%v): the test needs http://127.0.0.1:PORT", env.URL, err)
	}
	base := "http://localhost:" + u.Port()

	var errs browsertest.ConsoleErrors
	errs.Listen(ctx)
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/"), chromedp.WaitEnabled("#signin-key button")); err != nil {
		t.Fatalf("unauthenticated visit: %v", err)
	}
	if at := location(t, ctx); at != base+"/dashboard/signin" {
		t.Fatalf("unauthenticated visit: at %q", at)
	}
	if claim := text(t, ctx, "#claim"); !strings.Contains(claim, "This instance has no admin yet") || !strings.Contains(claim, claimCmd) {
		t.Fatalf("unclaimed instance's sign-in page: %q", claim)
	}

	const nobody = "did:plc:nobodyhere0000000000000"
	if err := chromedp.Do(ctx, chromedp.SendKeys("#handle", nobody), chromedp.Click("#signin-handle button")); err != nil {
		t.Fatalf("handle sign-in: %v", err)
	}
	// A plain form's navigation: wait for the new page, its script listening.
	waitTrue(t, ctx, "the failed sign-in's page", `location.pathname === "/auth/login" && document.querySelector("#signin-key button")?.disabled === false`)
	if at := location(t, ctx); !strings.HasPrefix(at, base+"/auth/login?handle=") {
		t.Fatalf("failed handle sign-in: at %q", at)
	}
	if msg := text(t, ctx, "#signin-failed"); !strings.Contains(msg, "cannot resolve "+nobody) {
		t.Fatalf("failed handle sign-in: %q", msg)
	}

	// The operator claims the instance; the failed sign-in's page still
	// holds the key form: the way back.
	key := claim(t, env)
	err = chromedp.Do(ctx,
		chromedp.SendKeys("#key", "hv_wrong"),
		chromedp.WaitEnabled("#signin-key button"),
		chromedp.Click("#signin-key button"),
		chromedp.WaitVisible("#key-error"),
	)
	if err != nil {
		t.Fatalf("wrong key: %v", err)
	}
	if msg := text(t, ctx, "#key-error"); msg != "invalid API key" {
		t.Fatalf("wrong key: %q", msg)
	}

	err = chromedp.Do(ctx,
		clear("#key"),
		chromedp.SendKeys("#key", key),
		chromedp.Click("#signin-key button"),
		chromedp.WaitVisible("#collections"),
	)
	if err != nil {
		t.Fatalf("sign in: %v (console: %q)", err, errs.All())
	}
	if at := location(t, ctx); at != base+"/dashboard/" {
		t.Fatalf("sign in: at %q", at)
	}
	rows, total := strings.Join(strings.Fields(text(t, ctx, "#collections tbody")), " "), text(t, ctx, "#total-records")
	if rows != "app.test.post 3" || total != "3" {
		t.Errorf("overview: rows %q, total %q", rows, total)
	}

	if err := chromedp.Do(ctx, chromedp.Click("#signout button"), chromedp.WaitVisible("#signin-key")); err != nil {
		t.Fatalf("sign out: %v", err)
	}
	if at := location(t, ctx); at != base+"/dashboard/signin" {
		t.Fatalf("sign out: at %q", at)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("#claim").length`); n != 0 {
		t.Errorf("the claimed instance's sign-in page still says how to claim it")
	}
	// Expected in the console: the network errors of the first visit's
	// 401, of the failed handle sign-in's 400 and of the wrong key's 401.
	// Anything else (a CSP violation, an exception) fails.
	for _, e := range errs.All() {
		if !strings.HasPrefix(e, "error network: Failed to load resource: the server responded with a status of 401") &&
			!strings.HasPrefix(e, "error network: Failed to load resource: the server responded with a status of 400") {
			t.Errorf("console error: %s", e)
		}
	}
}

// TestBrowserOverviewForbidden: an admin without stats:read signs in and
// the overview says why it shows nothing, with the admin API's reason.
func TestBrowserOverviewForbidden(t *testing.T) {
	ctx := browser(t, 10*time.Second)
	env, _ := startInstance(t)
	limited := env.AddAdmin(t, admins.LexiconsRead, admins.APIKeysCreate)
	r := limited.Do(t, "POST", "/admin/api-keys", map[string]any{"name": "dashboard",
		"permissions": []string{string(admins.LexiconsRead), string(admins.APIKeysCreate)}})
	if r.Status != 201 {
		t.Fatalf("create key: %d %s", r.Status, r.Raw)
	}
	key, _ := r.Object(t)["key"].(string)

	var errs browsertest.ConsoleErrors
	errs.Listen(ctx)
	err := chromedp.Do(ctx,
		chromedp.Navigate(env.URL+"/dashboard/signin"),
		chromedp.SendKeys("#key", key),
		chromedp.WaitEnabled("#signin-key button"),
		chromedp.Click("#signin-key button"),
		chromedp.WaitVisible("#denied"),
	)
	if err != nil {
		t.Fatalf("sign in: %v (console: %q)", err, errs.All())
	}
	msg := text(t, ctx, "#denied")
	if msg != "Your account lacks the stats:read permission this page needs (the admin API answered: insufficient permissions)." {
		t.Errorf("denial: %q", msg)
	}
	if visible, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!document.getElementById("stats").hidden`)); err != nil || visible {
		t.Errorf("the statistics are shown to an admin without stats:read (%v)", err)
	}
	for _, e := range errs.All() {
		if !strings.HasPrefix(e, "error network: Failed to load resource: the server responded with a status of 403") {
			t.Errorf("console error: %s", e)
		}
	}
}
