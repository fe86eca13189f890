package appview_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/testing/plugintest"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// servePlugin serves the word-filter example (manifest and module) and
// returns the manifest URL and the module's sha256.
func servePlugin(t testing.TB) (string, string) {
	t.Helper()
	return plugintest.Serve(t, "examples/plugins/wordfilter")
}

// TestScriptCallsPlugin installs the word-filter example through the
// admin API, pinned, and calls it from a query script.
func TestScriptCallsPlugin(t *testing.T) {
	t.Parallel()
	manifestURL, sum := servePlugin(t)
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		e := newScriptEnv(t, open(t))
		r := e.admin.Do(t, "POST", "/admin/plugins", map[string]any{"url": manifestURL, "sha256": sum})
		if r.Status != 200 || !strings.Contains(string(r.Raw), `"sha256":"`+sum+`"`) {
			t.Fatalf("install: %d %s", r.Status, r.Raw)
		}
		e.setScript(t, "xrpc.query:app.test.feed", `function handle()
			local r = plugins.call("word-filter", "check", {text = params.text})
			local c = plugins.call("word-filter", "censor", {text = params.text})
			return {clean = r.clean, matches = r.matches, censored = c.text}
		end`)
		r = e.get(t, "/xrpc/app.test.feed?text=Well+heck+that+is+darn+fine")
		if r.Status != 200 || string(r.Raw) != `{"censored":"Well **** that is **** fine","clean":false,"matches":["heck","darn"]}` {
			t.Fatalf("feed: %d %s", r.Status, r.Raw)
		}
		// A missing plugin or function fails the script, not the instance.
		e.setScript(t, "xrpc.query:app.test.feed", `function handle() return plugins.call("nope", "check", {}) end`)
		if r := e.get(t, "/xrpc/app.test.feed"); r.Status != 500 {
			t.Fatalf("missing plugin: %d %s", r.Status, r.Raw)
		}
		if events := e.admin.Do(t, "GET", "/admin/events?event_type=script.error", nil); !strings.Contains(string(events.Raw), "plugin nope is not loaded") {
			t.Fatalf("script error event: %s", events.Raw)
		}
	})
}

// TestPluginInstalledThroughAnotherInstance: two instances share a
// PostgreSQL database; a plugin installed through one, and the script
// calling it, work on the other without a restart (the change feed), and
// a deleted plugin is unloaded there too.
func TestPluginInstalledThroughAnotherInstance(t *testing.T) {
	t.Parallel()
	manifestURL, sum := servePlugin(t)
	ctx := context.Background()
	dbURL := storagetest.PostgresURL(t)
	open := func() storage.Store {
		s, err := appview.OpenStore(ctx, dbURL)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		if err := s.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		return s
	}
	a := newScriptEnv(t, open())
	b := testenv.New(t, open(), appview.Config{})
	if r := a.admin.Do(t, "POST", "/admin/plugins", map[string]any{"url": manifestURL, "sha256": sum}); r.Status != 200 {
		t.Fatalf("install: %d %s", r.Status, r.Raw)
	}
	a.setScript(t, "xrpc.query:app.test.feed", `function handle()
		return {censored = plugins.call("word-filter", "censor", {text = params.text}).text}
	end`)
	onB := func() testenv.Response {
		return b.Do(t, "GET", "/xrpc/app.test.feed?text=oh+heck", nil, "X-Client-Key", a.key)
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		r := onB()
		if r.Status == 200 && string(r.Raw) == `{"censored":"oh ****"}` {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("instance b: %d %s", r.Status, r.Raw)
		}
	}
	if r := a.admin.Do(t, "DELETE", "/admin/plugins/word-filter", nil); r.Status != 200 && r.Status != 204 {
		t.Fatalf("delete: %d %s", r.Status, r.Raw)
	}
	for deadline := time.Now().Add(60 * time.Second); onB().Status != 500; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("instance b still calls the deleted plugin")
		}
	}
}
