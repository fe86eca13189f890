// Package pluginroutes serves the public routes of external-account
// plugins, /plugins/{id}/*, over the pluginaccounts service.
package pluginroutes

import (
	"log/slog"
	"net/http"

	"github.com/lexview/lexview/appview/internal/core/caller"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/service/pluginaccounts"
	"github.com/lexview/lexview/appview/internal/web/respond"
	"github.com/lexview/lexview/appview/internal/web/userauth"
	"github.com/lexview/lexview/appview/internal/web/xrpc"
)

// Handler serves the public routes of external-account plugins
// (docs/plugins.md#external-account-sign-in):
//
//	POST   /plugins/{id}/connect   start (DPoP): {authorize_url, state, redirect_uri, expires_at}
//	GET    /plugins/{id}/callback  the redirect_uri: finishes the connection and syncs
//	POST   /plugins/{id}/sync      sync now (DPoP)
//	GET    /plugins/{id}/account   the caller's connection
//	DELETE /plugins/{id}/account   disconnect: the tokens are deleted
type Handler struct {
	svc      *pluginaccounts.Service
	users    *userauth.Authenticator
	clientMW func(http.Handler) http.Handler
	log      *slog.Logger
}

// Options configure a Handler.
type Options struct {
	Service *pluginaccounts.Service
	// Users authenticates the user.
	Users *userauth.Authenticator
	// ClientMiddleware identifies the API client (as on XRPC routes); nil
	// identifies none.
	ClientMiddleware func(http.Handler) http.Handler
	Logger           *slog.Logger
}

// New returns the handler.
func New(o Options) *Handler {
	if o.ClientMiddleware == nil {
		o.ClientMiddleware = func(h http.Handler) http.Handler { return h }
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Handler{svc: o.Service, users: o.Users, clientMW: o.ClientMiddleware, log: o.Logger}
}

// Mount adds the routes to mux.
func (h *Handler) Mount(mux *http.ServeMux) {
	mux.Handle("POST /plugins/{id}/connect", h.user(h.connect))
	mux.HandleFunc("GET /plugins/{id}/callback", h.callback)
	mux.Handle("POST /plugins/{id}/sync", h.user(h.sync))
	mux.Handle("GET /plugins/{id}/account", h.user(h.account))
	mux.Handle("DELETE /plugins/{id}/account", h.user(h.disconnect))
}

// user wraps f like an XRPC route (client identification, then user
// authentication) and refuses anonymous callers.
func (h *Handler) user(f func(http.ResponseWriter, *http.Request, *caller.User)) http.Handler {
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := caller.UserFrom(r.Context())
		if c == nil {
			respond.Fail(w, r, h.log, fail.New(fail.Unauthenticated, "authentication required"))
			return
		}
		f(w, r, c)
	})
	return h.clientMW(xrpc.UserMiddleware(h.users, h.log, inner))
}

func (h *Handler) connect(w http.ResponseWriter, r *http.Request, c *caller.User) {
	clientID := ""
	if cl, ok := apiclients.FromContext(r.Context()); ok {
		clientID = cl.ID
	}
	start, err := h.svc.Connect(r.Context(), c, clientID, r.PathValue("id"))
	if err != nil {
		respond.Fail(w, r, h.log, err)
		return
	}
	respond.JSON(w, http.StatusOK, start)
}

// callback needs no credentials (a browser lands on it from the
// provider): the state names the user. When the request does carry the
// user's credentials, they must be those of the user who started.
func (h *Handler) callback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p, err := h.svc.TakeState(r.Context(), r.PathValue("id"), q.Get("state"))
	if err != nil {
		respond.Fail(w, r, h.log, err)
		return
	}
	user, err := h.users.Authenticate(r, p.ClientID)
	if err != nil {
		respond.Fail(w, r, h.log, err)
		return
	}
	out, err := h.svc.Finish(r.Context(), p, user, q)
	if err != nil {
		respond.Fail(w, r, h.log, err)
		return
	}
	respond.JSON(w, http.StatusOK, out)
}

func (h *Handler) sync(w http.ResponseWriter, r *http.Request, c *caller.User) {
	res, err := h.svc.Sync(r.Context(), r.PathValue("id"), c)
	if err != nil {
		respond.Fail(w, r, h.log, err)
		return
	}
	respond.JSON(w, http.StatusOK, res)
}

func (h *Handler) account(w http.ResponseWriter, r *http.Request, c *caller.User) {
	a, err := h.svc.Get(r.Context(), r.PathValue("id"), c.DID)
	if err != nil {
		respond.Fail(w, r, h.log, err)
		return
	}
	respond.JSON(w, http.StatusOK, a)
}

func (h *Handler) disconnect(w http.ResponseWriter, r *http.Request, c *caller.User) {
	if err := h.svc.Disconnect(r.Context(), r.PathValue("id"), c.DID); err != nil {
		respond.Fail(w, r, h.log, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
