package dashboard_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/admins"
	"github.com/lexview/lexview/appview/internal/testenv"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// sessionSecret signs the session cookies of the browser tests.
const sessionSecret = "a-session-secret-of-at-least-32-bytes!"

// startInstance runs an instance on SQLite (the dashboard reads through
// the admin API, whose storage is tested on both backends elsewhere) with
// its super user and an hv_ key holding all of the user's permissions.
func startInstance(t *testing.T) (*testenv.Env, string) {
	t.Helper()
	env := testenv.New(t, storagetest.SQLite(t), appview.Config{SessionSecret: sessionSecret})
	su := env.Bootstrap(t)
	r := su.Do(t, "POST", "/admin/api-keys", map[string]any{"name": "dashboard", "permissions": admins.All()})
	if r.Status != 201 {
		t.Fatalf("create key: %d %s", r.Status, r.Raw)
	}
	key, _ := r.Object(t)["key"].(string)
	return env, key
}

// seed stores n records of collection.
func seed(t *testing.T, s storage.Store, collection string, n int) {
	t.Helper()
	var ops []storage.RecordOp
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	for i := range n {
		ops = append(ops, storage.RecordOp{Record: storagetest.Rec("did:plc:dashboardtest", collection,
			fmt.Sprintf("r%03d", i), at.Add(time.Duration(i)*time.Second), map[string]any{"n": i})})
	}
	if err := s.ApplyBatch(context.Background(), storage.Batch{Ops: ops}); err != nil {
		t.Fatal(err)
	}
}

// TestBrowserSignInWithKey: the root leads an unauthenticated browser to
// the sign-in page; a wrong key is refused next to the field; the admin's
// hv_ key signs in and the overview shows the seeded collection's count;
// signing out leads back to the sign-in page; no console errors (the
// Content-Security-Policy holds) but the network log of the expected 401s.
func TestBrowserSignInWithKey(t *testing.T) {
	ctx := browser(t, 10*time.Second)
	env, key := startInstance(t)
	seed(t, env.Store, "app.test.post", 3)

	var errs consoleErrors
	errs.listen(ctx)
	if err := chromedp.Do(ctx, chromedp.Navigate(env.URL+"/"), chromedp.WaitVisible("#signin-key")); err != nil {
		t.Fatalf("unauthenticated visit: %v", err)
	}
	if at := location(t, ctx); at != env.URL+"/dashboard/signin" {
		t.Fatalf("unauthenticated visit: at %q", at)
	}

	err := chromedp.Do(ctx,
		chromedp.SendKeys("#key", "hv_wrong"),
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
		t.Fatalf("sign in: %v (console: %q)", err, errs.all())
	}
	if at := location(t, ctx); at != env.URL+"/dashboard/" {
		t.Fatalf("sign in: at %q", at)
	}
	rows, total := strings.Join(strings.Fields(text(t, ctx, "#collections tbody")), " "), text(t, ctx, "#total-records")
	if rows != "app.test.post 3" || total != "3" {
		t.Errorf("overview: rows %q, total %q", rows, total)
	}

	if err := chromedp.Do(ctx, chromedp.Click("#signout button"), chromedp.WaitVisible("#signin-key")); err != nil {
		t.Fatalf("sign out: %v", err)
	}
	if at := location(t, ctx); at != env.URL+"/dashboard/signin" {
		t.Fatalf("sign out: at %q", at)
	}
	// Expected in the console: the network errors of the first visit's
	// 401 and of the wrong key's 401. Anything else (a CSP violation, an
	// exception) fails.
	for _, e := range errs.all() {
		if !strings.HasPrefix(e, "error network: Failed to load resource: the server responded with a status of 401") {
			t.Errorf("console error: %s", e)
		}
	}
}

// clear empties the form field sel.
func clear(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Evaluate[string](fmt.Sprintf("document.querySelector(%q).value = ''", sel))(ctx, t)
		return err
	})
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

	var errs consoleErrors
	errs.listen(ctx)
	err := chromedp.Do(ctx,
		chromedp.Navigate(env.URL+"/dashboard/signin"),
		chromedp.SendKeys("#key", key),
		chromedp.Click("#signin-key button"),
		chromedp.WaitVisible("#denied"),
	)
	if err != nil {
		t.Fatalf("sign in: %v (console: %q)", err, errs.all())
	}
	msg := text(t, ctx, "#denied")
	if msg != "Your account lacks the stats:read permission this page needs (the admin API answered: insufficient permissions)." {
		t.Errorf("denial: %q", msg)
	}
	if visible, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!document.getElementById("stats").hidden`)); err != nil || visible {
		t.Errorf("the statistics are shown to an admin without stats:read (%v)", err)
	}
	for _, e := range errs.all() {
		if !strings.HasPrefix(e, "error network: Failed to load resource: the server responded with a status of 403") {
			t.Errorf("console error: %s", e)
		}
	}
}

// location returns the tab's URL.
func location(t *testing.T, ctx context.Context) string {
	t.Helper()
	at, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatalf("location: %v", err)
	}
	return at
}

// text returns the visible text of the first element sel matches.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(sel))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}
