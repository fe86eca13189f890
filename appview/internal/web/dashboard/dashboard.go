// Package dashboard serves the web dashboard: server-rendered pages from
// templates and small JavaScript modules and a stylesheet, all embedded in
// the binary, under /dashboard. The pages call the admin API from the
// browser with the session cookie that /auth/login and /auth/login-key set
// (package signin); this package holds no credentials and reads no data
// but whether the instance has an admin yet, for the sign-in page. It also
// renders the sign-in page of a failed sign-in (SignInFailed).
package dashboard

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"

	"github.com/lexview/lexview/appview/internal/web/respond"
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
	// Claim is set on the sign-in page of an instance with no admin yet:
	// how to claim it.
	Claim *claimView
	// Failure is why a sign-in failed, on the sign-in page that answers
	// it (SignInFailed).
	Failure string
	// Missing is the path of the page not found (the not-found page).
	Missing string
}

// claimView says how to claim an instance with no admin yet.
type claimView struct {
	// Command is the shell command that claims it; empty when the
	// program embedding Lexview does (through its Go API).
	Command string
}

// Claims says whether the instance still has no admin, and how to claim
// it (*admins.Service).
type Claims interface {
	Unclaimed(ctx context.Context) (bool, error)
	ClaimCommand() string
}

// Options configure a Handler.
type Options struct {
	// Claims lets the sign-in page of an instance with no admin yet say
	// how to claim it; nil says nothing.
	Claims Claims
	Logger *slog.Logger
}

// Handler serves the dashboard.
type Handler struct {
	pages  map[string]*template.Template // by page Name, notFoundPage's included
	static http.Handler
	claims Claims
	log    *slog.Logger
}

// signInPage is the sign-in page's Name.
const signInPage = "signin"

// New returns a Handler over the embedded files. The templates are part
// of the binary, so a template that does not parse is a programming error
// (the package's tests parse every page): New panics on it.
func New(opt Options) *Handler {
	log := opt.Logger
	if log == nil {
		log = slog.Default()
	}
	h := &Handler{pages: map[string]*template.Template{}, claims: opt.Claims, log: log}
	for _, p := range pages {
		h.pages[p.Name] = template.Must(template.ParseFS(assets, "assets/layout.html", "assets/"+p.Name+".html"))
	}
	h.pages[notFoundPage.Name] = template.Must(template.ParseFS(assets, "assets/layout.html", "assets/"+notFoundPage.Name+".html"))
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
	mux.Handle(Path, secured(http.HandlerFunc(h.notFound)))
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

// notFoundPage is the page of a path under /dashboard/ that is no page:
// outside the navigation, like the sign-in page.
var notFoundPage = page{Name: "notfound", Title: "Page not found"}

// notFound answers a path under /dashboard/ that is no page: a browser
// gets a page saying so with the way back to the overview, in the
// dashboard; another client (a static file's fetch) plain text.
func (h *Handler) notFound(w http.ResponseWriter, r *http.Request) {
	if !respond.AcceptsHTML(r) {
		http.NotFound(w, r)
		return
	}
	v := pageView(notFoundPage)
	v.Missing = r.URL.Path
	h.write(w, r, http.StatusNotFound, v)
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

// pageView is the view of page p, before what a request adds.
func pageView(p page) view {
	v := view{Page: p, Asset: Path + "static/", Nav: navigation(p)}
	if _, err := fs.Stat(assets, "assets/static/pages/"+p.Name+".css"); err == nil {
		v.CSS = true
	}
	return v
}

// render serves page p.
func (h *Handler) render(p page) http.Handler {
	base := pageView(p)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := base
		if p.Name == signInPage {
			v.Claim = h.claim(r.Context())
		}
		h.write(w, r, http.StatusOK, v)
	})
}

// SignInFailed answers a browser whose sign-in failed (the handle
// sign-in's start or its OAuth callback) with the sign-in page, the
// failure's message at its top, so that the browser stays in the
// dashboard with a way to try again. status is the failure's.
func (h *Handler) SignInFailed(w http.ResponseWriter, r *http.Request, status int, message string) {
	v := pageView(pageNamed(signInPage))
	v.Claim, v.Failure = h.claim(r.Context()), message
	secured(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.write(w, r, status, v) })).ServeHTTP(w, r)
}

// pageNamed returns the page called name, which must exist.
func pageNamed(name string) page {
	for _, p := range pages {
		if p.Name == name {
			return p
		}
	}
	panic("dashboard: no page " + name)
}

// claim is how to claim the instance when it has no admin yet, else nil
// (and when that cannot be read: the page says nothing then).
func (h *Handler) claim(ctx context.Context) *claimView {
	if h.claims == nil {
		return nil
	}
	unclaimed, err := h.claims.Unclaimed(ctx)
	if err != nil {
		h.log.WarnContext(ctx, "dashboard: reading whether the instance is claimed failed", "err", err)
		return nil
	}
	if !unclaimed {
		return nil
	}
	return &claimView{Command: h.claims.ClaimCommand()}
}

// write renders v's page with status.
func (h *Handler) write(w http.ResponseWriter, r *http.Request, status int, v view) {
	var buf bytes.Buffer
	if err := h.pages[v.Page.Name].ExecuteTemplate(&buf, "layout", v); err != nil {
		h.log.ErrorContext(r.Context(), "dashboard: render page", "page", v.Page.Name, "err", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if w.Header().Get("Cache-Control") == "" { // a failed sign-in's answer is no-store
		w.Header().Set("Cache-Control", "no-cache")
	}
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
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
