package appview_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/testenv"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// TestLinkedReposWired: the App serves the linked-repo admin endpoints and
// the invite page, builds invite URLs on the primary domain, keeps the
// invite page on the public surface only, and answers 503 where the OAuth
// client is still missing.
func TestLinkedReposWired(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env := testenv.New(t, open(t), appview.Config{})
		admin := env.Bootstrap(t)
		r := admin.Do(t, "POST", "/admin/linked-repos", map[string]any{"scopes": "repo:app.example.post", "reason": "weekly digest",
			"handle": "did:plc:abc"})
		if r.Status != 200 {
			t.Fatalf("create: %d %s", r.Status, r.Raw)
		}
		id, _ := r.Object(t)["id"].(string)
		if r := admin.Do(t, "POST", "/admin/linked-repos/"+id+"/authorize", nil); r.Status != 503 {
			t.Fatalf("authorize without an OAuth client: %d %s", r.Status, r.Raw)
		}
		r = admin.Do(t, "POST", "/admin/linked-repos/"+id+"/invite", nil)
		inviteURL, _ := r.Object(t)["invite_url"].(string)
		if r.Status != 200 || !strings.HasPrefix(inviteURL, env.URL+"/invite/") {
			t.Fatalf("invite on the primary domain %s: %d %s", env.URL, r.Status, r.Raw)
		}
		p := testenv.Request(t, "GET", inviteURL, nil)
		if p.Status != 200 || !strings.Contains(string(p.Raw), "weekly digest") || !strings.Contains(string(p.Raw), "not available on this instance yet") {
			t.Fatalf("invite page: %d %s", p.Status, p.Raw)
		}
		path := strings.TrimPrefix(inviteURL, env.URL)
		if !servedBy(t, env.App.XRPCHandler(), path) || servedBy(t, env.App.AdminHandler(), path) {
			t.Fatal("the invite page belongs to the public surface only")
		}
	})
}

// servedBy reports whether h answers path with the page rather than the
// catch-all JSON 404.
func servedBy(t *testing.T, h http.Handler, path string) bool {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	return strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html")
}
