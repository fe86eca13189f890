package dashboard_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/internal/browsertest"
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
	return startInstanceWith(t, appview.Config{})
}

// startInstanceWith is startInstance with cfg (its session secret set).
func startInstanceWith(t *testing.T, cfg appview.Config) (*testenv.Env, string) {
	t.Helper()
	env := newInstance(t, cfg)
	return env, claim(t, env)
}

// newInstance runs an instance on SQLite with cfg (its session secret
// set) and no admin yet.
func newInstance(t *testing.T, cfg appview.Config) *testenv.Env {
	t.Helper()
	cfg.Security.SessionSecret = sessionSecret
	return testenv.New(t, storagetest.SQLite(t), cfg)
}

// claim makes the instance's super user and returns an hv_ key holding
// all of the user's permissions.
func claim(t *testing.T, env *testenv.Env) string {
	t.Helper()
	su := env.Bootstrap(t)
	r := su.Do(t, "POST", "/admin/api-keys", map[string]any{"name": "dashboard", "permissions": admins.All()})
	if r.Status != 201 {
		t.Fatalf("create key: %d %s", r.Status, r.Raw)
	}
	key, _ := r.Object(t)["key"].(string)
	return key
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

// clear empties the form field sel.
func clear(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Evaluate[string](fmt.Sprintf("document.querySelector(%q).value = ''", sel))(ctx, t)
		return err
	})
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

// signIn signs the tab in with an hv_ key and waits for the overview.
func signIn(t *testing.T, ctx context.Context, env *testenv.Env, key string) {
	t.Helper()
	err := chromedp.Do(ctx,
		chromedp.Navigate(env.URL+"/dashboard/signin"),
		chromedp.WaitVisible("#signin-key"),
		chromedp.SendKeys("#key", key),
		chromedp.WaitEnabled("#signin-key button"),
		chromedp.Click("#signin-key button"),
		chromedp.WaitVisible("#whoami"),
	)
	if err != nil {
		t.Fatalf("sign in: %v", err)
	}
}

// open navigates the tab to a dashboard path and waits until sel is
// visible.
func open(t *testing.T, ctx context.Context, env *testenv.Env, path, sel string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(env.URL+path), chromedp.WaitVisible(sel)); err != nil {
		t.Fatalf("open %s (waiting for %s): %v", path, sel, err)
	}
}

// waitText waits until the text of sel contains want.
func waitText(t *testing.T, ctx context.Context, sel, want string) {
	t.Helper()
	js := fmt.Sprintf(`(() => { const n = document.querySelector(%q); return !!n && n.textContent.includes(%q); })()`, sel, want)
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js))
		if err != nil {
			t.Fatalf("waiting for %q in %s: %v", want, sel, err)
		}
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %q in %s: %v (it holds %q)", want, sel, ctx.Err(), strings.TrimSpace(textNow(ctx, sel)))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// textNow returns the text of sel, or "" (for failure messages).
func textNow(ctx context.Context, sel string) string {
	c, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	s, _ := chromedp.Run(c, chromedp.Evaluate[string](fmt.Sprintf(`document.querySelector(%q)?.textContent ?? ""`, sel)))
	return s
}

// confirm accepts the layout's confirmation dialog.
func confirm(t *testing.T, ctx context.Context) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.WaitVisible("#confirm-ok"), chromedp.Click("#confirm-ok")); err != nil {
		t.Fatalf("confirm: %v", err)
	}
}

// noConsoleErrors fails the test for every console error but those
// starting with one of the allowed prefixes (the network log of answers
// the test provoked).
func noConsoleErrors(t *testing.T, errs *browsertest.ConsoleErrors, allowed ...string) {
	t.Helper()
next:
	for _, e := range errs.All() {
		for _, a := range allowed {
			if strings.HasPrefix(e, a) {
				continue next
			}
		}
		t.Errorf("console error: %s", e)
	}
}

// waitTrue waits until the JavaScript expression js is true. An
// expression that throws (the page is still loading) is tried again; the
// last error is reported if the wait ends.
func waitTrue(t *testing.T, ctx context.Context, what, js string) {
	t.Helper()
	var last error
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js))
		if err == nil && ok {
			return
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v (last error: %v)", what, ctx.Err(), last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// choose selects value in the select sel as a person would: the change
// event fires.
func choose(sel, value string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		ok, err := chromedp.Evaluate[bool](fmt.Sprintf(`(() => { const s = document.querySelector(%q); if (!s) return false;
			s.value = %q; s.dispatchEvent(new Event("change", {bubbles: true})); return s.value === %q; })()`, sel, value, value))(ctx, t)
		if err == nil && !ok {
			err = fmt.Errorf("no option %q in %s", value, sel)
		}
		return err
	})
}

// eval evaluates js in the tab and returns its value.
func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}
