package scripts_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// TestScriptsInTheApp drives the endpoints through a whole instance with
// the real script machinery: the syntax check, and changes that serve at
// once.
func TestScriptsInTheApp(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env := testenv.New(t, open(t), appview.Config{})
		doc := `{"lexicon":1,"id":"app.test.hello","defs":{"main":{"type":"query"}}}`
		if _, err := env.App.Lexicons().Put(context.Background(), lexicon.Upload{Document: json.RawMessage(doc)}); err != nil {
			t.Fatal(err)
		}
		su := env.Bootstrap(t)
		client, _ := env.NewClient(t, apiclients.NewClient{})
		hello := func() string {
			t.Helper()
			r := env.Do(t, "GET", "/xrpc/app.test.hello", nil, "X-Client-Key", client.Key)
			if r.Status != 200 {
				t.Fatalf("query: %d %s", r.Status, r.Raw)
			}
			s, _ := r.Object(t)["greeting"].(string)
			return s
		}

		r := su.Do(t, "POST", "/admin/scripts", map[string]any{"trigger": "xrpc.query:app.test.hello", "source": "function handle( return end"})
		if msg := r.Error(t); r.Status != 400 || !strings.HasPrefix(msg, "script has a syntax error: ") || len(msg) < 30 {
			t.Fatalf("syntax error: %d %s", r.Status, r.Raw)
		}
		// The check without storing: the real compiler's line.
		r = su.Do(t, "POST", "/admin/scripts/check", map[string]any{"source": "function handle()\n  return {\nend"})
		if o := r.Object(t); r.Status != 400 || !strings.HasPrefix(r.Error(t), "script has a syntax error: ") || o["line"] != float64(3) {
			t.Fatalf("check: %d %s", r.Status, r.Raw)
		}
		if r = su.Do(t, "POST", "/admin/scripts/check", map[string]any{"source": "function handle() return {} end"}); r.Status != 200 {
			t.Fatalf("check: %d %s", r.Status, r.Raw)
		}
		r = su.Do(t, "POST", "/admin/scripts", map[string]any{
			"trigger": "xrpc.query:app.test.hello", "source": `function handle() return {greeting = "hi"} end`,
		})
		if r.Status != 201 {
			t.Fatalf("create: %d %s", r.Status, r.Raw)
		}
		if got := hello(); got != "hi" {
			t.Fatalf("greeting %q", got)
		}
		id, _ := r.Object(t)["id"].(string)
		r = su.Do(t, "PATCH", "/admin/scripts/"+id, map[string]any{"source": `function handle() return {greeting = "hello"} end`})
		if r.Status != 200 {
			t.Fatalf("patch: %d %s", r.Status, r.Raw)
		}
		if got := hello(); got != "hello" {
			t.Fatalf("greeting after the edit %q", got)
		}
	})
}
