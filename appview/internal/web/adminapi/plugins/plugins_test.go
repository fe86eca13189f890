package plugins_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/service/plugins"
	"github.com/lexview/lexview/appview/internal/service/plugins/wasm"
	"github.com/lexview/lexview/appview/internal/testing/plugintest"
	"github.com/lexview/lexview/appview/internal/web/adminapi"
	"github.com/lexview/lexview/appview/internal/web/adminapi/internal/admintest"
	adminplugins "github.com/lexview/lexview/appview/internal/web/adminapi/plugins"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

var cache = wazero.NewCompilationCache()

// origin serves manifests, modules and a registry index.
type origin struct {
	*httptest.Server
	mu    sync.Mutex
	files map[string][]byte
}

func newOrigin(t *testing.T) *origin {
	o := &origin{files: map[string][]byte{}}
	o.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		b, ok := o.files[r.URL.Path]
		o.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(b)
	}))
	t.Cleanup(o.Close)
	return o
}

func (o *origin) put(path string, b []byte) {
	o.mu.Lock()
	o.files[path] = b
	o.mu.Unlock()
}

func (o *origin) putJSON(t *testing.T, path string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	o.put(path, b)
}

func manifest(id, version, wasmPath string, extra map[string]any) map[string]any {
	m := map[string]any{"id": id, "name": "Plugin " + id, "version": version, "api_version": 1, "description": "d",
		"icon_url": "https://icons.example/i.png", "wasm": wasmPath, "config": map[string]any{"words": []string{"darn"}}}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

type summary struct {
	ID                string               `json:"id"`
	Name              string               `json:"name"`
	Version           string               `json:"version"`
	Source            string               `json:"source"`
	URL               string               `json:"url"`
	SHA256            *string              `json:"sha256"`
	Enabled           bool                 `json:"enabled"`
	AuthType          string               `json:"auth_type"`
	RequiredSecrets   []plugins.SecretSpec `json:"required_secrets"`
	SecretsConfigured bool                 `json:"secrets_configured"`
	LoadedAt          *string              `json:"loaded_at"`
	UpdateAvailable   bool                 `json:"update_available"`
	LatestVersion     string               `json:"latest_version"`
	PendingReleases   []string             `json:"pending_releases"`
}

type world struct {
	srv *admintest.Server
	mgr *plugins.Manager
}

func setup(t *testing.T, store storage.Store, registry, dir string, noSealer bool) world {
	t.Helper()
	rt, err := wasm.New(context.Background(), wasm.Options{Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	var mgr *plugins.Manager
	srv := admintest.New(t, store, func(m *adminapi.Mux, w *admintest.World) {
		mgr = plugins.New(plugins.Options{Store: w.Store, Runtime: rt, Sealer: w.Sealer, Fetch: http.DefaultClient,
			Plugin: http.DefaultClient, Events: w.Events, RegistryURL: registry, Dir: dir, Logger: w.Logger})
		if err := mgr.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		adminplugins.Mount(m, mgr)
	}, func(w *admintest.World) {
		if noSealer {
			w.Sealer = nil
		}
	})
	t.Cleanup(func() { mgr.Close(context.Background()) })
	return world{srv, mgr}
}

func listPlugins(t *testing.T, c *admintest.Caller) []summary {
	t.Helper()
	r := c.Do(t, "GET", "/admin/plugins", nil)
	admintest.Expect(t, r, 200, "")
	var list struct {
		Plugins []summary `json:"plugins"`
	}
	r.JSON(t, &list)
	return list.Plugins
}

func decodeSummary(t *testing.T, r admintest.Response) summary {
	t.Helper()
	var s summary
	r.JSON(t, &s)
	return s
}

func TestPlugins(t *testing.T) {
	bin := plugintest.Build(t, "appview/internal/service/plugins/wasm/testdata/bad")
	sum := sha256.Sum256(bin)
	hash := hex.EncodeToString(sum[:])
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		o := newOrigin(t)
		o.put("/v1/bad.wasm", bin)
		o.put("/v2/bad.wasm", bin)
		secrets := []map[string]string{{"key": "api_key", "name": "API key", "description": "the key"}, {"key": "pin", "name": "PIN", "description": ""}}
		o.putJSON(t, "/v1/manifest.json", manifest("echo", "1.0.0", "bad.wasm", map[string]any{"required_secrets": secrets}))
		o.putJSON(t, "/v2/manifest.json", manifest("echo", "1.1.0", "bad.wasm", map[string]any{"required_secrets": secrets}))
		o.putJSON(t, "/gone/manifest.json", manifest("gone", "1.0.0", "missing.wasm", nil))
		o.put("/broken/manifest.json", []byte(`{"id": "Not Valid!", "name": "x"`))
		o.putJSON(t, "/noapi/manifest.json", map[string]any{"id": "x", "name": "x", "version": "1", "api_version": 7, "wasm": "x.wasm"})
		o.putJSON(t, "/index.json", plugins.Index{Plugins: []plugins.Listing{{ID: "echo", Name: "Echo", Description: "echoes",
			LatestVersion: "1.2.0", ManifestURL: o.URL + "/v2/manifest.json", Releases: []plugins.Release{
				{Version: "1.0.0", ManifestURL: o.URL + "/v1/manifest.json"}, {Version: "1.2.0", ManifestURL: o.URL + "/v2/manifest.json"},
				{Version: "1.1.0", ManifestURL: o.URL + "/v2/manifest.json"}}}}})
		w := setup(t, open(t), o.URL+"/index.json", "", false)
		su := w.srv.Super
		ctx := context.Background()

		r := su.Do(t, "GET", "/admin/plugins", nil)
		admintest.Expect(t, r, 200, "")
		if string(r.Raw) != `{"encryption_configured":true,"plugins":[]}` {
			t.Fatalf("empty list: %s", r.Raw)
		}

		// Preview: nothing stored.
		r = su.Do(t, "POST", "/admin/plugins/preview", map[string]any{"url": o.URL + "/v1/manifest.json"})
		admintest.Expect(t, r, 200, "")
		var pv plugins.Preview
		r.JSON(t, &pv)
		if pv.ID != "echo" || pv.Version != "1.0.0" || pv.WASMURL != o.URL+"/v1/bad.wasm" || pv.ManifestURL != o.URL+"/v1/manifest.json" ||
			len(pv.RequiredSecrets) != 2 || pv.AuthType != "none" || pv.IconURL == "" {
			t.Fatalf("preview: %s", r.Raw)
		}
		if list, _ := w.srv.Store.ListPlugins(ctx); len(list) != 0 {
			t.Fatalf("preview stored: %v", list)
		}
		for _, c := range []struct{ url, msg string }{
			{o.URL + "/broken/manifest.json", "the manifest is invalid: the manifest is not a JSON object of the expected shape: unexpected EOF"},
			{o.URL + "/noapi/manifest.json", "the manifest is invalid: api_version 7 is not supported (this instance implements 1)"},
			{o.URL + "/nothing.json", "the manifest cannot be fetched: fetching " + o.URL + "/nothing.json: the server answered 404"},
			{"ftp://x", `the manifest cannot be fetched: "ftp://x" is not an absolute http(s) URL`},
			{"", "url is required"},
		} {
			admintest.Expect(t, su.Do(t, "POST", "/admin/plugins/preview", map[string]any{"url": c.url}), 400, c.msg)
		}

		// Install refusals: a module that 404s, a hash mismatch.
		admintest.Expect(t, su.Do(t, "POST", "/admin/plugins", map[string]any{"url": o.URL + "/gone/manifest.json"}), 400,
			"the module cannot be fetched: fetching "+o.URL+"/gone/missing.wasm: the server answered 404")
		admintest.Expect(t, su.Do(t, "POST", "/admin/plugins", map[string]any{"url": o.URL + "/v1/manifest.json", "sha256": strings.Repeat("0", 64)}), 400,
			"the module's sha256 is "+hash+", not the pinned "+strings.Repeat("0", 64))
		if list, _ := w.srv.Store.ListPlugins(ctx); len(list) != 0 {
			t.Fatalf("refused installs stored: %v", list)
		}

		// Install pinned.
		r = su.Do(t, "POST", "/admin/plugins", map[string]any{"url": o.URL + "/v1/manifest.json", "sha256": strings.ToUpper(hash)})
		admintest.Expect(t, r, 200, "")
		s := decodeSummary(t, r)
		if s.ID != "echo" || s.Version != "1.0.0" || s.Source != "url" || s.URL != o.URL+"/v1/manifest.json" || s.SHA256 == nil || *s.SHA256 != hash ||
			!s.Enabled || s.SecretsConfigured || s.LoadedAt == nil || len(s.RequiredSecrets) != 2 || s.PendingReleases == nil {
			t.Fatalf("install: %s", r.Raw)
		}
		if out, err := w.mgr.Call(ctx, "echo", "echo", json.RawMessage(`{"x":1}`)); err != nil || string(out) != `{"x":1}` {
			t.Fatalf("call: %s %v", out, err)
		}

		// Secrets: set, masked, kept, cleared; sealed at rest.
		admintest.Expect(t, su.Do(t, "PUT", "/admin/plugins/echo/secrets", map[string]any{"secrets": map[string]string{
			"api_key": "sk-live-abcdefgh1234", "pin": "12345678"}}), 204, "")
		r = su.Do(t, "GET", "/admin/plugins/echo/secrets", nil)
		admintest.Expect(t, r, 200, "")
		if string(r.Raw) != `{"plugin_id":"echo","secrets":{"api_key":"********1234","pin":"********"}}` {
			t.Fatalf("masked: %s", r.Raw)
		}
		stored, _ := w.srv.Store.ListPluginSecrets(ctx, "echo")
		for _, x := range stored {
			if strings.Contains(x.Sealed, "abcdefgh") || strings.Contains(x.Sealed, "12345678") {
				t.Fatalf("stored in the clear: %+v", x)
			}
		}
		if out, _ := w.mgr.Call(ctx, "echo", "secret", json.RawMessage(`"api_key"`)); string(out) != `{"set":true,"value":"sk-live-abcdefgh1234"}` {
			t.Fatalf("plugin reads its secret: %s", out)
		}
		if l := listPlugins(t, su); len(l) != 1 || !l[0].SecretsConfigured {
			t.Fatalf("secrets_configured after setting: %+v", l)
		}
		admintest.Expect(t, su.Do(t, "PUT", "/admin/plugins/echo/secrets", map[string]any{"secrets": map[string]string{
			"api_key": "********1234", "pin": ""}}), 204, "")
		r = su.Do(t, "GET", "/admin/plugins/echo/secrets", nil)
		if string(r.Raw) != `{"plugin_id":"echo","secrets":{"api_key":"********1234"}}` {
			t.Fatalf("after keep/clear: %s", r.Raw)
		}
		if out, _ := w.mgr.Call(ctx, "echo", "secret", json.RawMessage(`"pin"`)); string(out) != `{"set":false,"value":""}` {
			t.Fatalf("cleared secret still seen: %s", out)
		}
		for _, e := range w.srv.Events(t, "plugin") {
			if strings.Contains(string(e.Detail), "abcdefgh") {
				t.Fatalf("secret in the event log: %+v", e)
			}
		}
		admintest.Expect(t, su.Do(t, "PUT", "/admin/plugins/echo/secrets", map[string]any{"secrets": map[string]string{"bad key": "x"}}), 400,
			`secret key "bad key" must be 1 to 128 characters of letters, digits, _, . and -, starting with a letter or _`)
		admintest.Expect(t, su.Do(t, "GET", "/admin/plugins/nope/secrets", nil), 404, "plugin nope is not installed")

		// Registry: official list and an update check.
		r = su.Do(t, "GET", "/admin/plugins/official", nil)
		admintest.Expect(t, r, 200, "")
		var off struct {
			LastRefreshedAt *string                  `json:"last_refreshed_at"`
			Plugins         []plugins.OfficialPlugin `json:"plugins"`
		}
		r.JSON(t, &off)
		if off.LastRefreshedAt == nil || len(off.Plugins) != 1 || off.Plugins[0].LatestVersion != "1.2.0" || off.Plugins[0].ManifestURL != o.URL+"/v2/manifest.json" {
			t.Fatalf("official: %s", r.Raw)
		}
		r = su.Do(t, "POST", "/admin/plugins/echo/check-update", nil)
		admintest.Expect(t, r, 200, "")
		if s := decodeSummary(t, r); !s.UpdateAvailable || s.LatestVersion != "1.2.0" || strings.Join(s.PendingReleases, ",") != "1.1.0,1.2.0" {
			t.Fatalf("check-update: %s", r.Raw)
		}
		admintest.Expect(t, su.Do(t, "POST", "/admin/plugins/nope/check-update", nil), 404, "plugin nope is not installed")

		// Reload from its URL keeps the pin; a new URL clears it.
		r = su.Do(t, "POST", "/admin/plugins/echo/reload", nil)
		admintest.Expect(t, r, 200, "")
		if s := decodeSummary(t, r); s.SHA256 == nil || s.Version != "1.0.0" {
			t.Fatalf("reload: %s", r.Raw)
		}
		r = su.Do(t, "POST", "/admin/plugins/echo/reload", map[string]any{"url": o.URL + "/v2/manifest.json"})
		admintest.Expect(t, r, 200, "")
		if s := decodeSummary(t, r); s.SHA256 != nil || s.Version != "1.1.0" || s.URL != o.URL+"/v2/manifest.json" ||
			strings.Join(s.PendingReleases, ",") != "1.2.0" || !s.UpdateAvailable {
			t.Fatalf("reload with a new url: %s", r.Raw)
		}
		admintest.Expect(t, su.Do(t, "POST", "/admin/plugins/echo/reload", map[string]any{"url": o.URL + "/gone/manifest.json"}), 400,
			"the module cannot be fetched: fetching "+o.URL+"/gone/missing.wasm: the server answered 404")
		if out, err := w.mgr.Call(ctx, "echo", "echo", json.RawMessage(`1`)); err != nil || string(out) != "1" {
			t.Fatalf("a failed reload broke the plugin: %s %v", out, err)
		}

		// Permissions.
		reader := w.srv.Caller(t, admins.PluginsRead)
		admintest.Expect(t, reader.Do(t, "GET", "/admin/plugins", nil), 200, "")
		admintest.Expect(t, reader.Do(t, "POST", "/admin/plugins", map[string]any{"url": o.URL + "/v1/manifest.json"}), 403, "insufficient permissions")
		admintest.Expect(t, reader.Do(t, "DELETE", "/admin/plugins/echo", nil), 403, "insufficient permissions")

		// Delete keeps the secrets; a second delete is 404.
		admintest.Expect(t, su.Do(t, "DELETE", "/admin/plugins/echo", nil), 204, "")
		admintest.Expect(t, su.Do(t, "DELETE", "/admin/plugins/echo", nil), 404, "plugin echo is not loaded")
		if list, _ := w.srv.Store.ListPluginSecrets(ctx, "echo"); len(list) != 1 {
			t.Fatalf("secrets after delete: %v", list)
		}
		if _, err := w.mgr.Call(ctx, "echo", "echo", nil); err == nil {
			t.Fatal("a deleted plugin still answers")
		}
		if r := su.Do(t, "GET", "/admin/plugins", nil); string(r.Raw) != `{"encryption_configured":true,"plugins":[]}` {
			t.Fatalf("after delete: %s", r.Raw)
		}
		// Reinstall: the kept secret is back.
		admintest.Expect(t, su.Do(t, "POST", "/admin/plugins", map[string]any{"url": o.URL + "/v1/manifest.json"}), 200, "")
		if out, _ := w.mgr.Call(ctx, "echo", "secret", json.RawMessage(`"api_key"`)); string(out) != `{"set":true,"value":"sk-live-abcdefgh1234"}` {
			t.Fatalf("secret after reinstall: %s", out)
		}

		// A restart loads the installed plugin from the database alone.
		o.Close()
		rt, err := wasm.New(ctx, wasm.Options{Cache: cache})
		if err != nil {
			t.Fatal(err)
		}
		defer rt.Close(ctx)
		restarted := plugins.New(plugins.Options{Store: w.srv.Store, Runtime: rt, Sealer: w.srv.World.Sealer, Fetch: http.DefaultClient})
		if err := restarted.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer restarted.Close(ctx)
		if out, err := restarted.Call(ctx, "echo", "secret", json.RawMessage(`"api_key"`)); err != nil || string(out) != `{"set":true,"value":"sk-live-abcdefgh1234"}` {
			t.Fatalf("after a restart: %s %v", out, err)
		}
	})
}

func TestPluginsFromFilesAndRestart(t *testing.T) {
	bin := plugintest.Build(t, "examples/plugins/wordfilter")
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		dir := t.TempDir()
		mf, err := os.ReadFile("../../../../../examples/plugins/wordfilter/manifest.json")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "word-filter.json"), mf, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "wordfilter.wasm"), bin, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "broken.json"), []byte(`{"id":"broken"}`), 0o644); err != nil {
			t.Fatal(err)
		}
		store := open(t)
		w := setup(t, store, "", dir, false)
		su := w.srv.Super
		list := listPlugins(t, su)
		if len(list) != 1 || list[0].Source != "file" || !strings.HasPrefix(list[0].URL, "file://") ||
			list[0].SHA256 != nil || list[0].UpdateAvailable || list[0].LatestVersion != "1.0.0" || list[0].LoadedAt == nil {
			t.Fatalf("file plugins: %+v", list)
		}
		if out, err := w.mgr.Call(context.Background(), "word-filter", "check", json.RawMessage(`{"text":"heck"}`)); err != nil ||
			string(out) != `{"clean":false,"matches":["heck"]}` {
			t.Fatalf("file plugin call: %s %v", out, err)
		}
		admintest.Expect(t, su.Do(t, "POST", "/admin/plugins/word-filter/reload", nil), 400,
			"plugin word-filter is loaded from a file and cannot be reloaded")
		// No registry: an empty official list, never refreshed.
		if r := su.Do(t, "GET", "/admin/plugins/official", nil); string(r.Raw) != `{"last_refreshed_at":null,"plugins":[]}` {
			t.Fatalf("official without a registry: %s", r.Raw)
		}
		if events := w.srv.Events(t, "plugin"); len(events) == 0 || events[0].Type != "plugin.load_failed" {
			t.Fatalf("the broken file is not reported: %+v", events)
		}
	})
}

func TestSecretsNeedEncryption(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		w := setup(t, open(t), "", "", true)
		r := w.srv.Super.Do(t, "GET", "/admin/plugins", nil)
		if string(r.Raw) != `{"encryption_configured":false,"plugins":[]}` {
			t.Fatalf("list: %s", r.Raw)
		}
		admintest.Expect(t, w.srv.Super.Do(t, "GET", "/admin/plugins/x/secrets", nil), 503, "token encryption is not configured")
		admintest.Expect(t, w.srv.Super.Do(t, "PUT", "/admin/plugins/x/secrets", map[string]any{"secrets": map[string]string{}}), 503,
			"token encryption is not configured")
	})
}

func TestMask(t *testing.T) {
	for in, want := range map[string]string{"": "********", "12345678": "********", "123456789": "********6789", "ééééééééé": "********éééé"} {
		if got := plugins.Mask(in); got != want {
			t.Errorf("Mask(%q) = %q, want %q", in, got, want)
		}
	}
}
