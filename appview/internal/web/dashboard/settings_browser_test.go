package dashboard_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/internal/browsertest"
)

// TestBrowserSettings: the branding form stores the app name and shows a
// refused URL next to its field; the proxy policy is saved; a stored
// setting is removed after confirmation; the database page shows SQLite
// and schedules a vacuum.
func TestBrowserSettings(t *testing.T) {
	ctx := browser(t, 20*time.Second)
	env, key := startInstance(t)
	var errs browsertest.ConsoleErrors
	errs.Listen(ctx)
	signIn(t, ctx, env, key)
	open(t, ctx, env, "/dashboard/settings", "#branding")

	err := chromedp.Do(ctx,
		chromedp.SendKeys("#app_name", "Notes"),
		chromedp.SendKeys("#terms_of_service_url", "ftp://nope"),
		chromedp.Click("#branding button[type=submit]"),
		chromedp.WaitVisible("#terms_of_service_url-error"),
	)
	if err != nil {
		t.Fatalf("branding: %v", err)
	}
	if msg := text(t, ctx, "#terms_of_service_url-error"); !strings.Contains(msg, "http") {
		t.Errorf("the refused URL's error: %q", msg)
	}
	if got := setting(t, env, key, "app_name"); got != "Notes" {
		t.Errorf("app_name stored %q", got)
	}
	waitText(t, ctx, "#all-settings", "app_name")

	err = chromedp.Do(ctx,
		chromedp.SetValue("#proxy-mode", "allowlist"),
		chromedp.SendKeys("#proxy-patterns", "com.example.*"),
		chromedp.Click("#proxy button[type=submit]"),
	)
	if err != nil {
		t.Fatalf("proxy: %v", err)
	}
	waitText(t, ctx, "#notice", "XRPC proxy policy saved: allowlist.")
	r := env.Do(t, "GET", "/admin/settings/xrpc-proxy", nil, testenv.Bearer(key)...)
	if p := r.Object(t); p["mode"] != "allowlist" {
		t.Errorf("proxy policy stored: %s", r.Raw)
	}

	if err := chromedp.Do(ctx, chromedp.Click(`button[aria-label="Remove the setting app_name"]`)); err != nil {
		t.Fatalf("remove: %v", err)
	}
	confirm(t, ctx)
	waitText(t, ctx, "#notice", "Setting app_name removed.")
	if got := setting(t, env, key, "app_name"); got != "" {
		t.Errorf("app_name still stored: %q", got)
	}

	open(t, ctx, env, "/dashboard/database", "#vacuum-sqlite")
	waitText(t, ctx, "#db-dialect", "SQLite")
	if err := chromedp.Do(ctx, chromedp.Click("#vacuum-schedule")); err != nil {
		t.Fatal(err)
	}
	confirm(t, ctx)
	waitText(t, ctx, "#vacuum-state", "A vacuum is scheduled")
	noConsoleErrors(t, &errs, "error network: Failed to load resource: the server responded with a status of 400")
}

// setting returns a stored setting's value, or "".
func setting(t *testing.T, env *testenv.Env, adminKey, name string) string {
	t.Helper()
	r := env.Do(t, "GET", "/admin/settings", nil, testenv.Bearer(adminKey)...)
	v, _ := r.Object(t)[name].(string)
	return v
}
