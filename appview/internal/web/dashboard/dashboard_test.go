package dashboard_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lexview/lexview/appview/internal/web/dashboard"
)

// serve answers one GET of path from a mux holding only the dashboard.
func serve(t *testing.T, path string) *http.Response {
	t.Helper()
	mux := http.NewServeMux()
	dashboard.New(dashboard.Options{Logger: slog.New(slog.DiscardHandler)}).Mount(mux)
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Result()
}

func body(t *testing.T, r *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSecurityHeaders: every dashboard answer, pages, static files,
// redirects and unknown paths alike, carries the security headers.
func TestSecurityHeaders(t *testing.T) {
	for _, path := range []string{"/", "/dashboard", "/dashboard/", "/dashboard/signin",
		"/dashboard/static/dashboard.js", "/dashboard/static/api.js", "/dashboard/static/dashboard.css",
		"/dashboard/nope", "/dashboard/static/nope.js"} {
		r := serve(t, path)
		for name, want := range map[string]string{
			"Content-Security-Policy": dashboard.ContentSecurityPolicy,
			"X-Frame-Options":         "DENY",
			"X-Content-Type-Options":  "nosniff",
			"Referrer-Policy":         "same-origin",
		} {
			if got := r.Header.Get(name); got != want {
				t.Errorf("%s: %s = %q, want %q", path, name, got, want)
			}
		}
	}
	for _, directive := range []string{"script-src 'self'", "style-src 'self'", "frame-ancestors 'none'", "default-src 'none'"} {
		if !strings.Contains(dashboard.ContentSecurityPolicy, directive+";") && !strings.HasSuffix(dashboard.ContentSecurityPolicy, directive) {
			t.Errorf("the policy lacks %q: %s", directive, dashboard.ContentSecurityPolicy)
		}
	}
	if strings.Contains(dashboard.ContentSecurityPolicy, "unsafe-") {
		t.Errorf("the policy allows unsafe sources: %s", dashboard.ContentSecurityPolicy)
	}
}

// TestRedirects: the root and /dashboard lead to /dashboard/.
func TestRedirects(t *testing.T) {
	for _, path := range []string{"/", "/dashboard"} {
		r := serve(t, path)
		if r.StatusCode != http.StatusFound || r.Header.Get("Location") != "/dashboard/" {
			t.Errorf("%s: %d to %q", path, r.StatusCode, r.Header.Get("Location"))
		}
	}
}

// TestPages: each page renders without a session (the data comes from
// the admin API, which checks the cookie), its scripts and stylesheet are
// external files, and nothing inline would need the policy relaxed.
func TestPages(t *testing.T) {
	for _, tc := range []struct {
		path, page string
		want       []string
	}{
		{"/dashboard/", "overview", []string{`<title>Overview · Lexview</title>`, `id="stats"`, `id="signout"`,
			`<a href="/dashboard/" aria-current="page">Overview</a>`}},
		{"/dashboard/signin", "signin", []string{`<form id="signin-handle" method="get" action="/auth/login">`,
			`<form id="signin-key"`, `<label for="key">`, `<label for="handle">`}},
	} {
		r := serve(t, tc.path)
		b := body(t, r)
		if r.StatusCode != http.StatusOK || r.Header.Get("Content-Type") != "text/html; charset=utf-8" {
			t.Fatalf("%s: %d %q", tc.path, r.StatusCode, r.Header.Get("Content-Type"))
		}
		want := append(tc.want, `data-page="`+tc.page+`"`,
			`<script type="module" src="/dashboard/static/dashboard.js"></script>`,
			`<link rel="stylesheet" href="/dashboard/static/dashboard.css">`)
		for _, w := range want {
			if !strings.Contains(b, w) {
				t.Errorf("%s lacks %s", tc.path, w)
			}
		}
		for _, bad := range []string{"<style", " style=", "<script>", " onclick=", " onsubmit=", "javascript:"} {
			if strings.Contains(b, bad) {
				t.Errorf("%s holds inline %q, which the policy refuses", tc.path, bad)
			}
		}
	}
	if b := body(t, serve(t, "/dashboard/signin")); strings.Contains(b, `id="signout"`) {
		t.Error("the sign-in page offers to sign out")
	}
}

// TestEveryPage: every page renders with its name, has its script
// module, and is listed in the navigation (with the permission its data
// needs) of every signed-in page; a page holds nothing inline.
func TestEveryPage(t *testing.T) {
	all := dashboard.Pages()
	for _, p := range all {
		r := serve(t, p.Path)
		b := body(t, r)
		if r.StatusCode != http.StatusOK || !strings.Contains(b, `data-page="`+p.Name+`"`) {
			t.Errorf("%s: %d, page %q not named", p.Path, r.StatusCode, p.Name)
			continue
		}
		if s := serve(t, "/dashboard/static/pages/"+p.Name+".js"); s.StatusCode != http.StatusOK ||
			s.Header.Get("Content-Type") != "text/javascript; charset=utf-8" {
			t.Errorf("%s: script pages/%s.js: %d", p.Path, p.Name, s.StatusCode)
		}
		for _, bad := range []string{"<style", " style=", "<script>", " onclick=", " onsubmit=", "javascript:"} {
			if strings.Contains(b, bad) {
				t.Errorf("%s holds inline %q, which the policy refuses", p.Path, bad)
			}
		}
		checkControlsLabelled(t, p.Path, b)
		if p.Name == "signin" {
			continue
		}
		for _, q := range all {
			if q.Name == "signin" {
				continue
			}
			link := `<a href="` + q.Path + `"`
			if q.Perm != "" {
				link += ` data-perm="` + q.Perm + `"`
			}
			if !strings.Contains(b, link) {
				t.Errorf("%s: the navigation lacks %s", p.Path, link)
			}
		}
		if !strings.Contains(b, `<dialog id="confirm"`) || !strings.Contains(b, `id="notice"`) {
			t.Errorf("%s lacks the layout's confirmation dialog or notice", p.Path)
		}
	}
}

// TestStaticFiles: the scripts and the stylesheet are served with their
// types (nosniff makes the browser check them); unknown paths are 404.
func TestStaticFiles(t *testing.T) {
	for path, typ := range map[string]string{
		"/dashboard/static/dashboard.js":  "text/javascript; charset=utf-8",
		"/dashboard/static/api.js":        "text/javascript; charset=utf-8",
		"/dashboard/static/ui.js":         "text/javascript; charset=utf-8",
		"/dashboard/static/dashboard.css": "text/css; charset=utf-8",
	} {
		r := serve(t, path)
		if r.StatusCode != http.StatusOK || r.Header.Get("Content-Type") != typ || len(body(t, r)) == 0 {
			t.Errorf("%s: %d %q", path, r.StatusCode, r.Header.Get("Content-Type"))
		}
	}
	for _, path := range []string{"/dashboard/nope", "/dashboard/static/nope.js", "/dashboard/signin/x"} {
		if r := serve(t, path); r.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", path, r.StatusCode)
		}
	}
}

// TestNotFoundStaysInTheDashboard: a browser asking for a path under
// /dashboard/ that is no page gets a dashboard page saying so, the path
// escaped, with the way back to the overview; other clients plain text.
func TestNotFoundStaysInTheDashboard(t *testing.T) {
	mux := http.NewServeMux()
	dashboard.New(dashboard.Options{Logger: slog.New(slog.DiscardHandler)}).Mount(mux)
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/dashboard/lexicon%3Cb%3E", nil)
	req.Header.Set("Accept", "text/html,application/xhtml+xml")
	mux.ServeHTTP(rec, req)
	page := rec.Body.String()
	if rec.Code != http.StatusNotFound || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") ||
		!strings.Contains(page, `There is no dashboard page at <code>/dashboard/lexicon&lt;b&gt;</code>`) ||
		!strings.Contains(page, `<a href="/dashboard/">Back to the overview</a>`) ||
		!strings.Contains(page, `data-page="notfound"`) {
		t.Fatalf("not found, for a browser: %d %s", rec.Code, page)
	}
	if r := serve(t, "/dashboard/nope"); r.StatusCode != http.StatusNotFound || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("not found, for another client: %d %q", r.StatusCode, r.Header.Get("Content-Type"))
	}
}
