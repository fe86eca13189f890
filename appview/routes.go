package appview

import (
	"context"
	"net/http"
	"slices"

	"github.com/lexview/lexview/appview/internal/core/caller"
	"github.com/lexview/lexview/appview/internal/core/scripthost"
	"github.com/lexview/lexview/appview/internal/service/domains"
	"github.com/lexview/lexview/appview/internal/web/server"
	"github.com/lexview/lexview/appview/internal/web/xrpc"
	"github.com/lexview/lexview/script"
)

// ServeHTTP implements http.Handler: the whole HTTP surface of the App.
func (a *App) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.surfaces.All.ServeHTTP(w, r) }

// Handler returns the App's whole HTTP surface: XRPCHandler and
// AdminHandler together.
func (a *App) Handler() http.Handler { return a.surfaces.All }

// XRPCHandler returns the App's public HTTP surface: /xrpc/*, /oauth/*,
// /auth/* (dashboard sign-in), /.well-known/did.json,
// /oauth-client-metadata.json, /config, /settings/logo, the linked-repo
// invite page (/invite/{token}), the dashboard (/dashboard/, where / redirects)
// and /health, everything but the admin API
// (answered 404, as any unknown path). Serve it publicly and AdminHandler
// on a private listener to keep
// the admin API off the public network.
func (a *App) XRPCHandler() http.Handler { return a.surfaces.Public }

// AdminHandler returns the admin API (/admin/*) alone; other paths are
// answered 404.
func (a *App) AdminHandler() http.Handler { return a.surfaces.Admin }

// AdminRoutes lists the mounted admin routes ("METHOD /admin/...").
func (a *App) AdminRoutes() []string { return slices.Clone(a.surfaces.AdminRoutes) }

// routes assembles the HTTP front ends over the services.
func (a *App) routes() *server.Surfaces {
	return server.New(*a.svc, server.Parts{
		Lexicons: a.lexicons, ClientIdentifier: a.clientIdentifier(), ClientRegistry: a.clients, Users: a.users,
		Methods:     a.cfg.XRPCMethods,
		OAuthClient: a.oauthClient, Handles: a.cfg.Network.Directory, StreamKeepalive: a.cfg.StreamKeepalive,
		Ready: a.readiness, HTTPClient: a.cfg.Network.HTTPClient, UserAgent: "lexview/" + Version, Calls: a.calls,
		Now: a.cfg.Now, Logger: a.log,
	})
}

// isSelf reports whether host (host[:port]) is this instance's: the host
// of PUBLIC_URL or of a registered domain. The XRPC proxy does not
// forward there.
func (a *App) isSelf(ctx context.Context, host string) bool {
	if domains.NormalHost(host) == domains.NormalHost(domains.Host(a.cfg.PublicURL)) {
		return true
	}
	_, ok := a.svc.Domains.Match(ctx, host)
	return ok
}

// localXRPC serves scripts' in-process XRPC calls (xrpc.query and
// xrpc.procedure), one level deeper, as the invocation's caller: the
// XRPC front end hands them to the same dispatcher as HTTP calls, as plain
// values.
func (a *App) localXRPC(ctx context.Context, inv *script.Invocation, method, nsid string, query map[string][]string, body []byte) (int, []byte, error) {
	c := xrpc.LocalCall{Method: method, NSID: nsid, Params: query, Input: body}
	if inv.Caller != nil {
		c.User = &caller.User{DID: inv.Caller.DID, SessionID: inv.Caller.SessionID}
		c.ClientID = inv.Caller.ClientID
	}
	status, out := a.surfaces.Call(scripthost.WithDepth(ctx, inv.Depth+1), c)
	return status, out, nil
}
