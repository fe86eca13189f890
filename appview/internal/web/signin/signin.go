// Package signin serves the dashboard's sign-in: GET /auth/login starts
// an OAuth flow with the account's PDS (the instance's OAuth client), the
// callback sets the session cookie, POST /auth/login-key sets it for the
// holder of an admin API key (instances that cannot reach a PDS), and
// POST /auth/logout clears it.
package signin

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/bluesky-social/indigo/atproto/syntax"
	"golang.org/x/time/rate"

	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/service/oauthclient"
	"github.com/lexview/lexview/appview/internal/web/oauthcallback"
	"github.com/lexview/lexview/appview/internal/web/respond"
	"github.com/lexview/lexview/appview/internal/web/sessioncookie"
)

// PurposeAdminSignIn is the purpose of a dashboard sign-in flow.
const PurposeAdminSignIn = "admin_signin"

// DefaultCookieTTL is how long a session cookie is valid.
const DefaultCookieTTL = 12 * time.Hour

// Flows starts and ends the instance's OAuth flows (oauthclient.Client).
type Flows interface {
	Authorize(ctx context.Context, req oauthclient.Request) (string, error)
	EndSession(ctx context.Context, did syntax.DID, sessionID string) error
}

// Keys authenticates admin API keys (admins.Service).
type Keys interface {
	ByKey(ctx context.Context, secret string) (*admins.Principal, error)
}

// Pages answers, inside the dashboard, a browser whose sign-in failed
// (*dashboard.Handler).
type Pages interface {
	SignInFailed(w http.ResponseWriter, r *http.Request, status int, message string)
}

// Options configure a Handler.
type Options struct {
	Flows   Flows
	Keys    Keys
	Cookies *sessioncookie.Codec
	Domains sessioncookie.DomainMatcher
	// Pages answers a browser's failed sign-in with the dashboard's
	// sign-in page and the reason; nil answers every client in JSON.
	Pages Pages
	// CookieTTL is the cookie's lifetime (DefaultCookieTTL when zero).
	CookieTTL time.Duration
	// StartRate and StartBurst bound how fast sign-in flows start, for
	// the whole instance (DefaultStartRate and DefaultStartBurst when
	// zero): each start resolves an account, calls its authorization
	// server and stores a pending request, for anyone who asks.
	StartRate  rate.Limit
	StartBurst int
	// SignedIn, when set, is called with the DID of each account that
	// signs in through its PDS (the on-demand backfill of its
	// repository); it must not wait.
	SignedIn func(did string)
	Now      func() time.Time
	Logger   *slog.Logger
}

// The default bound on starting sign-in flows: 2 a second, 20 at once.
const (
	DefaultStartRate  rate.Limit = 2
	DefaultStartBurst int        = 20
)

// Handler serves the sign-in endpoints.
type Handler struct {
	opt    Options
	starts *rate.Limiter
}

// New returns a Handler.
func New(opt Options) *Handler {
	if opt.CookieTTL <= 0 {
		opt.CookieTTL = DefaultCookieTTL
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.StartRate <= 0 {
		opt.StartRate = DefaultStartRate
	}
	if opt.StartBurst <= 0 {
		opt.StartBurst = DefaultStartBurst
	}
	return &Handler{opt: opt, starts: rate.NewLimiter(opt.StartRate, opt.StartBurst)}
}

// Mount registers the sign-in routes on mux (the callback is mounted by
// whoever dispatches every purpose; Finisher is this package's part).
func (h *Handler) Mount(mux *http.ServeMux) {
	mux.HandleFunc("GET /auth/login", h.login)
	mux.HandleFunc("POST /auth/login-key", h.loginKey)
	mux.HandleFunc("POST /auth/logout", h.logout)
}

var (
	errUnknownHost = fail.New(fail.Invalid, "this host is not a registered domain of the instance")
	errNoHandle    = fail.New(fail.Invalid, "the handle query parameter (a handle or a DID) is required")
	errNoKey       = fail.New(fail.Unauthenticated, "an admin API key is required: Authorization: Bearer hv_...")
	errLimitedKey  = fail.New(fail.Forbidden, "this key holds fewer permissions than its user, and the session cookie "+
		"would carry all of them: sign in with a key that holds every permission of its user")
	errCrossSite = fail.New(fail.Forbidden, "cross-site request refused: the request must carry an Origin (or Referer) "+
		"header naming a registered domain of this instance")
)

// login starts the OAuth flow on the domain the request came in on and
// redirects to the account's authorization server.
func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	d, ok := h.opt.Domains.Match(r.Context(), r.Host)
	if !ok {
		h.fail(w, r, errUnknownHost)
		return
	}
	handle := strings.TrimSpace(r.URL.Query().Get("handle"))
	if handle == "" {
		h.fail(w, r, errNoHandle)
		return
	}
	if !h.starts.Allow() {
		h.fail(w, r, fail.RateLimit("too many sign-ins are starting: try again in a few seconds", time.Second))
		return
	}
	to, err := h.opt.Flows.Authorize(r.Context(), oauthclient.Request{
		DomainOrigin: d.URL, Identifier: handle, Scopes: []string{"atproto"}, Purpose: PurposeAdminSignIn,
	})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, to, http.StatusFound)
}

// signedIn is the answer to a sign-in.
type signedIn struct {
	DID       string    `json:"did"`
	ExpiresAt time.Time `json:"expires_at"`
}

// fail answers a refused sign-in: a browser (Options.Pages set) gets the
// dashboard's sign-in page with the reason, any other client the JSON
// error.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	if h.opt.Pages == nil || !respond.AcceptsHTML(r) {
		respond.Fail(w, r, h.opt.Logger, err)
		return
	}
	status, msg := respond.Describe(w, r, h.opt.Logger, err)
	w.Header().Set("Cache-Control", "no-store")
	h.opt.Pages.SignInFailed(w, r, status, msg)
}

// Finisher finishes the sign-in flows at the OAuth callback: it sets the
// session cookie for the account a flow authenticated, and answers a
// refused callback as a refused sign-in (a browser stays in the
// dashboard). The OAuth session itself is not kept: the cookie is the
// dashboard's credential, so the tokens are revoked and deleted.
func (h *Handler) Finisher() CallbackFinisher { return CallbackFinisher{h} }

// CallbackFinisher is the oauthcallback.Finisher and oauthcallback.Failer
// of sign-in flows.
type CallbackFinisher struct{ h *Handler }

var (
	_ oauthcallback.Finisher = CallbackFinisher{}
	_ oauthcallback.Failer   = CallbackFinisher{}
)

// Finish implements oauthcallback.Finisher.
func (f CallbackFinisher) Finish(w http.ResponseWriter, r *http.Request, res oauthclient.Result) {
	h := f.h
	if err := h.opt.Flows.EndSession(r.Context(), res.DID, res.SessionID); err != nil {
		h.opt.Logger.WarnContext(r.Context(), "ending the sign-in's OAuth session failed", "did", res.DID, "err", err)
	}
	secure := strings.HasPrefix(res.DomainOrigin, "https://")
	h.opt.Logger.InfoContext(r.Context(), "dashboard sign-in", "did", res.DID, "via", "oauth")
	if h.opt.SignedIn != nil {
		h.opt.SignedIn(res.DID.String())
	}
	if respond.AcceptsHTML(r) {
		// A browser: the dashboard is where the sign-in leads.
		http.SetCookie(w, h.opt.Cookies.Cookie(res.DID, h.opt.CookieTTL, secure))
		w.Header().Set("Cache-Control", "no-store")
		http.Redirect(w, r, DashboardPath, http.StatusSeeOther)
		return
	}
	h.setCookie(w, res.DID, secure)
}

// Fail implements oauthcallback.Failer.
func (f CallbackFinisher) Fail(w http.ResponseWriter, r *http.Request, err error) {
	f.h.fail(w, r, err)
}

// DashboardPath is where a browser's OAuth sign-in ends.
const DashboardPath = "/dashboard/"

// loginKey sets the session cookie for the admin user whose API key the
// request carries. The key must hold every permission of its user (the
// cookie carries the user's): a limited key is refused.
func (h *Handler) loginKey(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Origin") != "" && !sessioncookie.SameSite(r, h.opt.Domains) {
		respond.Fail(w, r, h.opt.Logger, errCrossSite)
		return
	}
	scheme, cred, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "Bearer") || !strings.HasPrefix(cred, admins.KeyPrefix) {
		respond.Fail(w, r, h.opt.Logger, errNoKey)
		return
	}
	p, err := h.opt.Keys.ByKey(r.Context(), cred)
	if err != nil {
		respond.Fail(w, r, h.opt.Logger, err)
		return
	}
	// The cookie stands for the user: a limited key must not become one.
	if len(p.Perms) != len(admins.EffectivePermissions(p.User)) {
		respond.Fail(w, r, h.opt.Logger, errLimitedKey)
		return
	}
	did, err := syntax.ParseDID(p.User.DID)
	if err != nil {
		respond.Internal(w, r, h.opt.Logger, err)
		return
	}
	h.setCookie(w, did, h.secure(r))
	h.opt.Logger.InfoContext(r.Context(), "dashboard sign-in", "did", did, "via", "admin_api_key", "key_id", p.KeyID)
}

// logout clears the session cookie.
func (h *Handler) logout(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{
		Name: sessioncookie.CookieName, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: h.secure(r), SameSite: http.SameSiteLaxMode,
	})
	w.WriteHeader(http.StatusNoContent)
}

func (h *Handler) setCookie(w http.ResponseWriter, did syntax.DID, secure bool) {
	http.SetCookie(w, h.opt.Cookies.Cookie(did, h.opt.CookieTTL, secure))
	w.Header().Set("Cache-Control", "no-store")
	respond.JSON(w, http.StatusOK, signedIn{DID: did.String(), ExpiresAt: h.opt.Now().Add(h.opt.CookieTTL).UTC().Truncate(time.Second)})
}

// secure reports whether the cookie set in answer to r is Secure: r came
// over TLS, or on a registered https domain (TLS ended at a proxy).
func (h *Handler) secure(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	d, ok := h.opt.Domains.Match(r.Context(), r.Host)
	return ok && strings.HasPrefix(d.URL, "https://")
}
