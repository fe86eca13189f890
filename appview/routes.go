package appview

import (
	"context"
	"net/http"

	"github.com/lexview/lexview/appview/internal/clients"
	"github.com/lexview/lexview/appview/internal/fixed"
	"github.com/lexview/lexview/appview/internal/oauthapi"
	"github.com/lexview/lexview/appview/internal/respond"
	"github.com/lexview/lexview/appview/internal/scripting"
	"github.com/lexview/lexview/appview/internal/thirdparty"
	"github.com/lexview/lexview/appview/internal/xrpc"
	"github.com/lexview/lexview/script"
)

// surfaces are the App's HTTP handlers.
type surfaces struct {
	all    http.Handler // everything: public and admin
	public http.Handler // everything but /admin/
	admin  http.Handler // /admin/ only
}

// ServeHTTP implements http.Handler: the whole HTTP surface of the App.
func (a *App) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.surfaces.all.ServeHTTP(w, r) }

// Handler returns the App's whole HTTP surface: XRPCHandler and
// AdminHandler together.
func (a *App) Handler() http.Handler { return a.surfaces.all }

// XRPCHandler returns the App's public HTTP surface: /xrpc/*, /oauth/*
// and /health, everything but the admin API (answered 404, as any unknown
// path). Serve it publicly and AdminHandler on a private listener to keep
// the admin API off the public network.
func (a *App) XRPCHandler() http.Handler { return a.surfaces.public }

// AdminHandler returns the admin API (/admin/*) alone; other paths are
// answered 404.
func (a *App) AdminHandler() http.Handler { return a.surfaces.admin }

// AdminRoutes lists the mounted admin routes ("METHOD /admin/...").
func (a *App) AdminRoutes() []string { return a.admin.Mounted() }

// routes assembles the HTTP surfaces.
func (a *App) routes() surfaces {
	notFound := func(w http.ResponseWriter, r *http.Request) {
		respond.Error(w, http.StatusNotFound, "not found")
	}
	pub := http.NewServeMux()
	pub.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok"))
	})
	clientMW := clients.Middleware(a.cfg.ClientIdentifier, a.clients, a.log)
	a.xrpc = xrpc.New(xrpc.Options{
		Lexicons:         a.lexicons,
		Reads:            a.svc.reads,
		Identities:       directoryIdentities{a.cfg.Directory},
		ClientMiddleware: clientMW,
		Users:            a.users,
		Procedures:       &xrpc.Proxy{Writer: a.svc.writes, Logger: a.log},
		Scripts:          a.scripts,
		Methods:          a.cfg.XRPCMethods,
		Logger:           a.log,
	})
	pub.Handle("/xrpc/{nsid}", a.xrpc)
	fixed.New(fixed.Options{ClientMiddleware: clientMW, Users: a.users, PDS: a.pds, Profiles: a.svc.profiles,
		Logger: a.log}).Mount(pub)
	oauthapi.New(oauthapi.Options{Store: a.store, Clients: a.clientManager, Sealer: a.sealer, PublicURL: a.cfg.PublicURL,
		Users: a.users, Sessions: a.svc.sessions, Keys: a.svc.clientKeys, Now: a.cfg.Now, Logger: a.log}).Mount(pub)
	thirdparty.New(thirdparty.Options{Manager: a.clientManager, Users: a.users, Logger: a.log}).Mount(pub)
	pub.HandleFunc("/", notFound)

	adm := http.NewServeMux()
	adm.Handle("/admin/", a.admin)
	adm.HandleFunc("/", notFound)

	all := http.NewServeMux()
	all.Handle("/admin/", a.admin)
	all.Handle("/", pub)
	return surfaces{all: respond.Recover(a.log, all), public: respond.Recover(a.log, pub), admin: respond.Recover(a.log, adm)}
}

// localXRPC serves scripts' in-process XRPC calls (script.Invocation's
// xrpc.call) with the App's XRPC handler, one level deeper.
func (a *App) localXRPC(ctx context.Context, inv *script.Invocation, method, nsid string, query map[string][]string, body []byte) (int, []byte, error) {
	status, out := a.xrpc.Call(scripting.WithDepth(ctx, inv.Depth+1), method, nsid, query, body)
	return status, out, nil
}
