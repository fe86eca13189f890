package dashboard_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/testing/plugintest"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/internal/browsertest"
	"github.com/lexview/lexview/storage/storagetest"
)

// pluginOrigin serves the word-filter example's module under two
// manifests (1.0.0 needing an api_key secret, and 1.1.0) and a registry
// index listing 1.1.0, and returns its URL.
func pluginOrigin(t *testing.T) string {
	t.Helper()
	bin := plugintest.Build(t, "examples/plugins/wordfilter")
	files := map[string]any{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/wordfilter.wasm") {
			_, _ = w.Write(bin)
			return
		}
		v, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(v)
	}))
	url := "http://" + srv.Listener.Addr().String()
	manifest := func(version string) map[string]any {
		return map[string]any{"id": "word-filter", "name": "Word filter", "version": version, "api_version": 1,
			"description": "Finds and masks configured words.", "wasm": "wordfilter.wasm",
			"required_secrets": []map[string]string{{"key": "api_key", "name": "API key", "description": "Key of the upstream service"}},
			"config":           map[string]any{"words": []string{"darn"}}}
	}
	files["/1.0.0/manifest.json"] = manifest("1.0.0")
	files["/1.1.0/manifest.json"] = manifest("1.1.0")
	files["/index.json"] = map[string]any{"plugins": []map[string]any{{"id": "word-filter", "name": "Word filter",
		"description": "Finds and masks configured words.", "latest_version": "1.1.0", "manifest_url": url + "/1.1.0/manifest.json"}}}
	srv.Start() // after files is complete: the handler only reads it
	t.Cleanup(srv.Close)
	return url
}

// startPluginInstance is startInstance with the origin's registry index
// configured.
func startPluginInstance(t *testing.T, origin string) (*testenv.Env, string) {
	t.Helper()
	env := testenv.New(t, storagetest.SQLite(t), appview.Config{
		Security: appview.SecurityConfig{SessionSecret: sessionSecret},
		Plugins:  appview.PluginConfig{RegistryURL: origin + "/index.json"},
	})
	su := env.Bootstrap(t)
	r := su.Do(t, "POST", "/admin/api-keys", map[string]any{"name": "dashboard", "permissions": admins.All()})
	if r.Status != 201 {
		t.Fatalf("create key: %d %s", r.Status, r.Raw)
	}
	key, _ := r.Object(t)["key"].(string)
	return env, key
}

// TestBrowserPluginInstallAndSecrets: a manifest URL is previewed (name,
// version, required secret and module URL shown, nothing installed),
// then installed; the registry lists the newer version; the plugin's
// panel sets its secret, which comes back masked (never the value) and
// marks the plugin's secrets as set, then clears it (confirmed); the
// update check finds the registry's version; deleting (confirmed)
// empties the list.
func TestBrowserPluginInstallAndSecrets(t *testing.T) {
	origin := pluginOrigin(t)
	ctx := browser(t, 40*time.Second)
	env, key := startPluginInstance(t, origin)
	var errs browsertest.ConsoleErrors
	errs.Listen(ctx)
	signIn(t, ctx, env, key)
	open(t, ctx, env, "/dashboard/plugins", "#no-plugins")
	waitText(t, ctx, "#official-list tbody", "Preview and install")

	err := chromedp.Do(ctx,
		chromedp.SendKeys("#manifest-url", origin+"/1.0.0/manifest.json"),
		chromedp.Click("#preview-button"),
		chromedp.WaitVisible("#preview"),
	)
	if err != nil {
		t.Fatalf("preview: %v", err)
	}
	facts := text(t, ctx, "#preview-facts")
	for _, want := range []string{"Word filter", "1.0.0", "api_key", "API key", origin + "/1.0.0/wordfilter.wasm", "none (script library)"} {
		if !strings.Contains(facts, want) {
			t.Errorf("preview lacks %q: %q", want, facts)
		}
	}
	if r := env.Do(t, "GET", "/admin/plugins", nil, testenv.Bearer(key)...); !strings.Contains(string(r.Raw), `"plugins":[]`) {
		t.Fatalf("the preview installed something: %s", r.Raw)
	}

	start := time.Now()
	if err := chromedp.Do(ctx, chromedp.Click("#install-button"), chromedp.WaitVisible("#secret-0")); err != nil {
		t.Fatalf("install: %v (notice %q)", err, textNow(ctx, "#install-sha256-error"))
	}
	t.Logf("install (module compiled) took %v", time.Since(start))
	rows := text(t, ctx, "#plugin-list tbody")
	for _, want := range []string{"word-filter", "1.0.0", "1.1.0 available", "missing"} {
		if !strings.Contains(rows, want) {
			t.Errorf("plugin row lacks %q: %q", want, rows)
		}
	}
	waitText(t, ctx, "#official-list tbody", "installed 1.0.0")
	waitText(t, ctx, "#secret-fields", "not set (required)")

	err = chromedp.Do(ctx,
		chromedp.SendKeys("#secret-0", "sk-live-abcdefgh1234"),
		chromedp.Click("#save-secrets"),
	)
	if err != nil {
		t.Fatalf("save secrets: %v", err)
	}
	waitText(t, ctx, "#secret-fields", "set: ********1234")
	waitText(t, ctx, "#plugin-list tbody", "1 set")
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("secret-0").value + "|" + document.getElementById("secret-0").type`))
	if err != nil || v != "********1234|password" {
		t.Errorf("the secret's field holds %q (%v), want the masked value in a password field", v, err)
	}
	if html, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.outerHTML`)); strings.Contains(html, "abcdefgh") {
		t.Error("the secret's value is in the page after saving")
	}

	// Emptying the field clears the secret, after a confirmation.
	if err := chromedp.Do(ctx, clear("#secret-0"), chromedp.Click("#save-secrets")); err != nil {
		t.Fatalf("clear secret: %v", err)
	}
	confirm(t, ctx)
	waitText(t, ctx, "#secret-fields", "not set (required)")
	waitText(t, ctx, "#plugin-list tbody", "missing")

	if err := chromedp.Do(ctx, chromedp.Click("#check-update")); err != nil {
		t.Fatalf("check for updates: %v", err)
	}
	waitText(t, ctx, "#notice", "word-filter: version 1.1.0 is available.")

	if err := chromedp.Do(ctx, chromedp.Click("#delete-plugin")); err != nil {
		t.Fatalf("delete: %v", err)
	}
	waitText(t, ctx, "#confirm-text", "Its secrets are kept for a reinstall.")
	confirm(t, ctx)
	if err := chromedp.Do(ctx, chromedp.WaitVisible("#no-plugins")); err != nil {
		t.Fatalf("deleted plugin still listed: %v", err)
	}
	waitText(t, ctx, "#official-list tbody", "Preview and install")
	noConsoleErrors(t, &errs)
}
