// Package invitepage serves the page a linked-repo invite URL opens: it
// shows the grant's reason and scopes and starts the sign-in of whoever
// follows it, when the instance's OAuth client is wired.
package invitepage

import (
	"context"
	"errors"
	"html/template"
	"log/slog"
	"net/http"
	"strings"

	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/service/linkedrepos"
	"github.com/lexview/lexview/appview/internal/web/respond"
)

// Invites is the linked repos service as the page uses it.
type Invites interface {
	OpenInvite(ctx context.Context, token string) (linkedrepos.Opened, error)
	StartInvite(ctx context.Context, token, loginHint string) (string, error)
	SignInAvailable() bool
}

// Handler serves /invite/{token}.
type Handler struct {
	invites Invites
	log     *slog.Logger
}

// New returns a Handler.
func New(invites Invites, log *slog.Logger) *Handler { return &Handler{invites: invites, log: log} }

// Mount registers GET and POST /invite/{token}.
func (h *Handler) Mount(mux *http.ServeMux) {
	mux.HandleFunc("GET "+linkedrepos.InvitePath+"{token}", h.show)
	mux.HandleFunc("POST "+linkedrepos.InvitePath+"{token}", h.start)
}

// maxFormSize bounds the sign-in form.
const maxFormSize = 4 << 10

var page = template.Must(template.New("invite").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>{{.Title}}</title>
</head>
<body>
{{if .Linked}}
<h1>{{.Title}}</h1>
<p>The account <strong>{{.Linked}}</strong> is linked to this instance: its scripts may now write into its repository with the permissions it granted. You can close this page.</p>
<p><a href="{{.Back}}">Back to the dashboard's linked repos</a> (for the instance's admins)</p>
{{else if .Error}}
<h1>{{.Title}}</h1>
<p>{{.Error}}</p>
{{if .Back}}<p><a href="{{.Back}}">Back to the dashboard's linked repos</a> (for the instance's admins)</p>{{end}}
{{else}}
<h1>Link your repository</h1>
<p>This instance asks to write into your atproto repository{{if .Handle}} as <strong>{{.Handle}}</strong>{{end}}.</p>
{{if .Reason}}<h2>Why</h2>
<p class="reason">{{.Reason}}</p>{{end}}
<h2>Permissions requested</h2>
<ul class="scopes">{{range .Scopes}}<li><code>{{.}}</code></li>{{end}}</ul>
{{if .SignIn}}
<form method="post">
{{if not .Handle}}<label>Your handle or DID (optional) <input name="handle" autocomplete="username"></label>{{end}}
<button type="submit">Sign in with your PDS</button>
</form>
{{else}}
<p class="unavailable">Sign-in is not available on this instance yet: its OAuth client is not wired. Keep this link and try again later.</p>
{{end}}
{{end}}
</body>
</html>
`))

type view struct {
	Title  string
	Error  string
	Linked string // the DID of the account just linked (the callback's page)
	Back   string // the dashboard page to go back to; empty for none
	Handle string
	Reason string
	Scopes []string
	SignIn bool
}

func (h *Handler) render(w http.ResponseWriter, status int, v view) {
	hdr := w.Header()
	hdr.Set("Content-Type", "text/html; charset=utf-8")
	hdr.Set("Cache-Control", "no-store")
	// The URL carries the invite token: never send it on.
	hdr.Set("Referrer-Policy", "no-referrer")
	// No form-action: browsers apply it to the redirect the form answers
	// with, and a development PDS is plain http.
	hdr.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'; base-uri 'none'")
	hdr.Set("X-Content-Type-Options", "nosniff")
	if v.Title == "" {
		v.Title = "Link your repository"
		if v.Error != "" {
			v.Title = "Invite unavailable"
		}
	}
	w.WriteHeader(status)
	if err := page.Execute(w, v); err != nil {
		h.log.Error("invite page", "err", err)
	}
}

// DashboardPage is the dashboard's page of linked repos, which the
// callback's pages link back to.
const DashboardPage = "/dashboard/linked-repos"

// Linked answers a browser whose linked-repo authorization succeeded
// with a page saying which account is linked, and the way back to the
// dashboard (oauthcallback.LinkedRepo).
func (h *Handler) Linked(w http.ResponseWriter, _ *http.Request, out linkedrepos.Authorized) {
	h.render(w, http.StatusOK, view{Title: "Repository linked", Linked: out.DID, Back: DashboardPage})
}

// LinkFailed answers a browser whose linked-repo authorization was
// refused (at the authorization server, or the binding) with a page
// saying why, under the refusal's status, and the way back to the
// dashboard.
func (h *Handler) LinkFailed(w http.ResponseWriter, r *http.Request, err error) {
	msg := fail.Message(err)
	if fail.KindOf(err) == fail.Internal {
		h.log.ErrorContext(r.Context(), "linking a repository failed", "err", err)
		msg = "Something went wrong on this instance. Try again later."
	}
	h.render(w, respond.Status(err), view{Title: "Linking failed", Error: "The repository was not linked: " + msg, Back: DashboardPage})
}

// renderError shows a failure as a page: 410 for an invite that ended,
// the failure's status otherwise (500 reveals nothing).
func (h *Handler) renderError(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, linkedrepos.ErrInviteEnded):
		h.render(w, http.StatusGone, view{Error: "This invite was already used, was revoked or has expired. Ask for a new one."})
	case fail.KindOf(err) == fail.NotFound:
		h.render(w, http.StatusNotFound, view{Error: "This invite does not exist. Check the link, or ask for a new one."})
	case fail.KindOf(err) == fail.Internal:
		h.log.ErrorContext(r.Context(), "invite page failed", "err", err)
		h.render(w, http.StatusInternalServerError, view{Error: "Something went wrong on this instance. Try again later."})
	default:
		h.render(w, respond.Status(err), view{Error: fail.Message(err)})
	}
}

func (h *Handler) show(w http.ResponseWriter, r *http.Request) {
	o, err := h.invites.OpenInvite(r.Context(), r.PathValue("token"))
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	h.render(w, http.StatusOK, view{
		Handle: o.Grant.Handle, Reason: o.Grant.Reason, Scopes: strings.Fields(o.Grant.Scopes), SignIn: h.invites.SignInAvailable(),
	})
}

func (h *Handler) start(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormSize)
	if err := r.ParseForm(); err != nil {
		h.render(w, http.StatusBadRequest, view{Error: "The form could not be read."})
		return
	}
	u, err := h.invites.StartInvite(r.Context(), r.PathValue("token"), strings.TrimSpace(r.PostForm.Get("handle")))
	if err != nil {
		h.renderError(w, r, err)
		return
	}
	http.Redirect(w, r, u, http.StatusSeeOther)
}
