// Package dashboard serves the web dashboard: server-rendered pages from
// templates and small JavaScript modules and a stylesheet, all embedded in
// the binary, under /dashboard. The pages call the admin API from the
// browser with the session cookie that /auth/login and /auth/login-key set
// (package signin); this package holds no credentials and reads no data.
package dashboard

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
)

//go:embed assets
var assets embed.FS

// Path is where the dashboard is served.
const Path = "/dashboard/"

// ContentSecurityPolicy is the policy of every dashboard response: scripts,
// styles, images and API calls from the instance's own origin only, no
// inline script or style, no plugins, no framing. form-action is left
// open: the handle sign-in form's answer redirects to the account's
// authorization server, which Chromium checks against form-action.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; base-uri 'none'; frame-ancestors 'none'"

// page is one page of the dashboard.
type page struct {
	// Name is the page's template (assets/<Name>.html), its script
	// (assets/static/pages/<Name>.js) and its data-page attribute.
	Name string
	// Path is the page's URL path; Title its title and navigation label.
	Path, Title string
	// Group is the navigation group the page is listed under; a page
	// with no group is not in the navigation (the sign-in page).
	Group string
	// Perm is the permission the page's data needs: the navigation hides
	// the page from an admin without it. Empty for every admin.
	Perm string
}

// The navigation groups, in order.
const (
	groupData     = "Data"
	groupAccess   = "Access"
	groupNetwork  = "Network"
	groupInstance = "Instance"
)

var groups = []string{groupData, groupAccess, groupNetwork, groupInstance}

// pages are the dashboard's pages, in navigation order within a group.
var pages = []page{
	{Name: "overview", Path: Path, Title: "Overview", Group: groupData},
	{Name: "lexicons", Path: Path + "lexicons", Title: "Lexicons", Group: groupData, Perm: "lexicons:read"},
	{Name: "scripts", Path: Path + "scripts", Title: "Scripts", Group: groupData, Perm: "scripts:read"},
	{Name: "records", Path: Path + "records", Title: "Records", Group: groupData, Perm: "records:read"},
	{Name: "indexes", Path: Path + "indexes", Title: "Indexes", Group: groupData, Perm: "indexes:read"},
	{Name: "backfill", Path: Path + "backfill", Title: "Backfill", Group: groupData, Perm: "backfill:read"},
	{Name: "deadletters", Path: Path + "dead-letters", Title: "Dead letters", Group: groupData, Perm: "dead-letters:read"},
	{Name: "events", Path: Path + "events", Title: "Event log", Group: groupData, Perm: "events:read"},
	{Name: "users", Path: Path + "users", Title: "Users", Group: groupAccess, Perm: "users:read"},
	{Name: "apikeys", Path: Path + "api-keys", Title: "Admin API keys", Group: groupAccess, Perm: "api-keys:read"},
	{Name: "clients", Path: Path + "api-clients", Title: "API clients", Group: groupAccess, Perm: "api-clients:view"},
	{Name: "linkedrepos", Path: Path + "linked-repos", Title: "Linked repos", Group: groupAccess, Perm: "linked-repos:read"},
	{Name: "domains", Path: Path + "domains", Title: "Domains", Group: groupNetwork, Perm: "settings:manage"},
	{Name: "identity", Path: Path + "identity", Title: "Service identity", Group: groupNetwork, Perm: "settings:manage"},
	{Name: "labelers", Path: Path + "labelers", Title: "Labelers", Group: groupNetwork, Perm: "labelers:read"},
	{Name: "plugins", Path: Path + "plugins", Title: "Plugins", Group: groupNetwork, Perm: "plugins:read"},
	{Name: "settings", Path: Path + "settings", Title: "Settings", Group: groupInstance, Perm: "settings:manage"},
	{Name: "variables", Path: Path + "script-variables", Title: "Script variables", Group: groupInstance, Perm: "script-variables:read"},
	{Name: "database", Path: Path + "database", Title: "Database", Group: groupInstance, Perm: "settings:manage"},
	{Name: "signin", Path: Path + "signin", Title: "Sign in"},
}

// navGroup is one group of navigation links as the layout renders it.
type navGroup struct {
	Title string
	Items []navItem
}

// navItem is a navigation link as the layout renders it.
type navItem struct {
	Path, Title, Perm string
	Current           bool
}

// view is the data every page template is executed with.
type view struct {
	Page  page
	Nav   []navGroup
	Asset string // the static files' path prefix
	// CSS is set when the page has its own stylesheet
	// (assets/static/pages/<Name>.css).
	CSS bool
}

// Handler serves the dashboard.
type Handler struct {
	pages  map[string]*template.Template // by page Name
	static http.Handler
	log    *slog.Logger
}

// New returns a Handler over the embedded files. The templates are part
// of the binary, so a template that does not parse is a programming error
// (the package's tests parse every page): New panics on it.
func New(log *slog.Logger) *Handler {
	h := &Handler{pages: map[string]*template.Template{}, log: log}
	for _, p := range pages {
		h.pages[p.Name] = template.Must(template.ParseFS(assets, "assets/layout.html", "assets/"+p.Name+".html"))
	}
	static, err := fs.Sub(assets, "assets/static")
	if err != nil {
		panic(fmt.Sprintf("dashboard: static files: %v", err))
	}
	h.static = http.StripPrefix(Path+"static/", http.FileServerFS(static))
	return h
}

// Mount registers the dashboard's routes on mux, the root redirect
// included: GET / and GET /dashboard redirect to /dashboard/.
func (h *Handler) Mount(mux *http.ServeMux) {
	mux.Handle("GET /{$}", secured(redirect))
	mux.Handle("GET /dashboard", secured(redirect))
	for _, p := range pages {
		mux.Handle("GET "+p.Path+pathEnd(p.Path), secured(h.render(p)))
	}
	mux.Handle("GET "+Path+"static/", secured(h.static))
	mux.Handle(Path, secured(http.HandlerFunc(notFound)))
}

// pathEnd anchors a path ending in a slash, which would otherwise match
// every path under it.
func pathEnd(path string) string {
	if path[len(path)-1] == '/' {
		return "{$}"
	}
	return ""
}

// redirect sends the browser to the dashboard.
var redirect = http.RedirectHandler(Path, http.StatusFound)

// notFound answers a path under /dashboard/ that is no page.
func notFound(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusNotFound)
	_, _ = w.Write([]byte("404 page not found\n"))
}

// navigation returns the navigation of page current.
func navigation(current page) []navGroup {
	var out []navGroup
	for _, g := range groups {
		ng := navGroup{Title: g}
		for _, q := range pages {
			if q.Group == g {
				ng.Items = append(ng.Items, navItem{Path: q.Path, Title: q.Title, Perm: q.Perm, Current: q.Name == current.Name})
			}
		}
		if len(ng.Items) > 0 {
			out = append(out, ng)
		}
	}
	return out
}

// render serves page p.
func (h *Handler) render(p page) http.Handler {
	v := view{Page: p, Asset: Path + "static/", Nav: navigation(p)}
	if _, err := fs.Stat(assets, "assets/static/pages/"+p.Name+".css"); err == nil {
		v.CSS = true
	}
	t := h.pages[p.Name]
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var buf bytes.Buffer
		if err := t.ExecuteTemplate(&buf, "layout", v); err != nil {
			h.log.ErrorContext(r.Context(), "dashboard: render page", "page", p.Name, "err", err)
			http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(buf.Bytes())
	})
}

// secured sets the security headers of every dashboard response.
func secured(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", ContentSecurityPolicy)
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "same-origin")
		hd.Set("Cross-Origin-Opener-Policy", "same-origin")
		next.ServeHTTP(w, r)
	})
}
