// Package server assembles Lexview's HTTP front ends over its services:
// the public surface (XRPC, /oauth/*, dev.service.*, the fixed endpoints,
// the dashboard, /health) and the admin API, each also alone. The appview package builds
// the services and hands them here; it imports no front end itself.
package server

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/lexview/lexview/appview/internal/service/plugins"
	"github.com/lexview/lexview/appview/internal/service/xrpcmethods"
	adminplugins "github.com/lexview/lexview/appview/internal/web/adminapi/plugins"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/service/backfilljobs"
	"github.com/lexview/lexview/appview/internal/service/backlinks"
	"github.com/lexview/lexview/appview/internal/service/clientkeys"
	"github.com/lexview/lexview/appview/internal/service/deadletters"
	"github.com/lexview/lexview/appview/internal/service/devicesessions"
	"github.com/lexview/lexview/appview/internal/service/domains"
	"github.com/lexview/lexview/appview/internal/service/fieldindexes"
	"github.com/lexview/lexview/appview/internal/service/instance"
	"github.com/lexview/lexview/appview/internal/service/labelers"
	"github.com/lexview/lexview/appview/internal/service/lexicons"
	"github.com/lexview/lexview/appview/internal/service/linkedrepos"
	"github.com/lexview/lexview/appview/internal/service/netlexicons"
	"github.com/lexview/lexview/appview/internal/service/oauthclient"
	"github.com/lexview/lexview/appview/internal/service/pluginaccounts"
	"github.com/lexview/lexview/appview/internal/service/profiles"
	"github.com/lexview/lexview/appview/internal/service/records"
	"github.com/lexview/lexview/appview/internal/service/scripts"
	"github.com/lexview/lexview/appview/internal/service/serviceentries"
	"github.com/lexview/lexview/appview/internal/service/serviceid"
	"github.com/lexview/lexview/appview/internal/service/writepath"
	"github.com/lexview/lexview/appview/internal/service/xrpcproxy"
	"github.com/lexview/lexview/appview/internal/web/adminapi"
	adminapiclients "github.com/lexview/lexview/appview/internal/web/adminapi/apiclients"
	"github.com/lexview/lexview/appview/internal/web/adminapi/authkeys"
	adminbackfill "github.com/lexview/lexview/appview/internal/web/adminapi/backfilljobs"
	admindeadletters "github.com/lexview/lexview/appview/internal/web/adminapi/deadletters"
	"github.com/lexview/lexview/appview/internal/web/adminapi/events"
	adminfieldindexes "github.com/lexview/lexview/appview/internal/web/adminapi/fieldindexes"
	admininstance "github.com/lexview/lexview/appview/internal/web/adminapi/instance"
	adminlabelers "github.com/lexview/lexview/appview/internal/web/adminapi/labelers"
	adminlexicons "github.com/lexview/lexview/appview/internal/web/adminapi/lexicons"
	adminlinkedrepos "github.com/lexview/lexview/appview/internal/web/adminapi/linkedrepos"
	adminnetlexicons "github.com/lexview/lexview/appview/internal/web/adminapi/netlexicons"
	"github.com/lexview/lexview/appview/internal/web/adminapi/proxysettings"
	adminscripts "github.com/lexview/lexview/appview/internal/web/adminapi/scripts"
	"github.com/lexview/lexview/appview/internal/web/adminapi/scriptvars"
	adminserviceid "github.com/lexview/lexview/appview/internal/web/adminapi/serviceid"
	"github.com/lexview/lexview/appview/internal/web/adminapi/users"
	"github.com/lexview/lexview/appview/internal/web/clientauth"
	"github.com/lexview/lexview/appview/internal/web/dashboard"
	"github.com/lexview/lexview/appview/internal/web/fixed"
	"github.com/lexview/lexview/appview/internal/web/invitepage"
	"github.com/lexview/lexview/appview/internal/web/oauthapi"
	"github.com/lexview/lexview/appview/internal/web/oauthcallback"
	"github.com/lexview/lexview/appview/internal/web/pluginroutes"
	"github.com/lexview/lexview/appview/internal/web/respond"
	"github.com/lexview/lexview/appview/internal/web/signin"
	"github.com/lexview/lexview/appview/internal/web/site"
	"github.com/lexview/lexview/appview/internal/web/thirdparty"
	"github.com/lexview/lexview/appview/internal/web/userauth"
	"github.com/lexview/lexview/appview/internal/web/xrpc"
	"github.com/lexview/lexview/appview/internal/web/xrpcforward"
	"github.com/lexview/lexview/backfill"
	"github.com/lexview/lexview/lexicon"
)

// Services are the services the front ends call.
type Services struct {
	Admins      *admins.Service
	Lexicons    *lexicons.Service
	Scripts     *scripts.Service
	Variables   *scripts.Variables
	DeadLetters *deadletters.Service
	Instance    *instance.Service
	ClientKeys  *clientkeys.Service
	Backfill    *backfilljobs.Service
	Records     *records.Service
	Sessions    *devicesessions.Service
	Writes      *writepath.Service
	Profiles    *profiles.Service
	Clients     *apiclients.Manager
	Events      *eventlog.Log
	Domains     *domains.Service
	Identity    *serviceid.Service
	Entries     *serviceentries.Service
	// InstanceKeys is the instance's own OAuth client key.
	InstanceKeys *clientkeys.Instance
	// LinkedRepos manages linked repo grants and their invites.
	LinkedRepos *linkedrepos.Service
	// Labelers manages labeler subscriptions.
	Labelers *labelers.Service
	// Plugins manages the WASM plugins.
	Plugins *plugins.Manager
	// PluginAccounts connects users' external accounts through plugins.
	PluginAccounts *pluginaccounts.Service
	// NetworkLexicons manages lexicons fetched from their authorities.
	NetworkLexicons *netlexicons.Service
	// ProxyPolicies holds the XRPC proxy's policy.
	ProxyPolicies *xrpcproxy.Policies
	// Proxy routes calls for NSIDs without a local lexicon; nil: no
	// proxy, such calls answer 404.
	Proxy *xrpcproxy.Router
	// Calls runs XRPC methods (scripts and the default behaviour), for
	// HTTP calls and scripts' in-process calls alike.
	Calls *xrpcmethods.Dispatcher
	// Backlinks answers the built-in blue.microcosm.links.* methods; nil:
	// they are not served.
	Backlinks *backlinks.Service
	// FieldIndexes declares, lists and drops field indexes and holds the
	// index suggestions.
	FieldIndexes *fieldindexes.Service
}

// Parts are the other pieces the front ends are built from.
type Parts struct {
	// Lexicons routes XRPC methods.
	Lexicons *lexicon.Registry
	// ClientIdentifier and ClientRegistry identify API clients and hold
	// their rate-limit buckets for the XRPC middleware.
	ClientIdentifier clientauth.Identifier
	ClientRegistry   *apiclients.Registry
	// Users authenticates users; its service-auth verifier and cookie
	// codec serve the admin API too.
	Users *userauth.Authenticator
	// Methods are Go method handlers.
	Methods map[string]http.Handler
	// OAuthClient is the instance as an OAuth client: dashboard sign-in
	// and the /oauth/callback every flow comes back on.
	OAuthClient *oauthclient.Client
	// Handles resolves the handles linked repo grants are pinned to.
	Handles linkedrepos.Handles
	// HTTPClient makes the XRPC proxy's forwarded calls, with UserAgent.
	HTTPClient *http.Client
	UserAgent  string
	// Ready reports readiness for GET /ready: whether the instance can
	// serve, and what it knows of itself (nil: always ready).
	Ready func(ctx context.Context) (bool, map[string]any)
	// StreamKeepalive paces idle progress streams (0: 15 s).
	StreamKeepalive time.Duration
	// Calls counts the XRPC calls of the methods served (those with a
	// local lexicon and the fixed endpoints), for the dashboard's
	// history; nil counts nothing.
	Calls  xrpc.Observer
	Now    func() time.Time
	Logger *slog.Logger
}

// Surfaces are the assembled HTTP handlers.
type Surfaces struct {
	All    http.Handler // everything: public and admin
	Public http.Handler // everything but /admin/
	Admin  http.Handler // /admin/ only
	// AdminRoutes lists the mounted admin routes ("METHOD /admin/...").
	AdminRoutes []string
	xrpc        *xrpc.Handler
}

// Call runs a local XRPC method in-process, for scripts' xrpc.* calls
// (xrpc.Handler.Call).
func (s *Surfaces) Call(ctx context.Context, c xrpc.LocalCall) (int, []byte) {
	return s.xrpc.Call(ctx, c)
}

// New assembles the front ends.
func New(svc Services, p Parts) *Surfaces {
	log := p.Logger
	notFound := func(w http.ResponseWriter, r *http.Request) {
		respond.Error(w, http.StatusNotFound, "not found")
	}
	pub := http.NewServeMux()
	pub.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok"))
	})
	pub.HandleFunc("GET /ready", func(w http.ResponseWriter, r *http.Request) {
		ready, report := true, map[string]any{"status": "ready"}
		if p.Ready != nil {
			ready, report = p.Ready(r.Context())
		}
		status := http.StatusOK
		if !ready {
			status = http.StatusServiceUnavailable
		}
		respond.JSON(w, status, report)
	})
	clientMW := clientauth.Middleware(p.ClientIdentifier, p.ClientRegistry, log)
	var forward http.Handler
	if svc.Proxy != nil {
		forward = xrpcforward.New(xrpcforward.Options{Router: svc.Proxy, HTTP: p.HTTPClient, ClientMiddleware: clientMW,
			UserAgent: p.UserAgent, Logger: log})
	}
	xh := xrpc.New(xrpc.Options{
		Lexicons: p.Lexicons, Calls: svc.Calls, ClientMiddleware: clientMW, Users: p.Users, Methods: p.Methods, Logger: log,
		Proxied: svc.Entries, Forward: forward, Observer: p.Calls,
	})
	pub.Handle("/xrpc/{nsid}", xh)
	fixedOpts := fixed.Options{ClientMiddleware: clientMW, Users: p.Users, Blobs: svc.Writes, Profiles: svc.Profiles,
		Observer: p.Calls, Logger: log}
	if svc.Backlinks != nil {
		fixedOpts.Backlinks = svc.Backlinks
	}
	fixed.New(fixedOpts).Mount(pub)
	oauthapi.New(oauthapi.Options{Clients: svc.Clients, Users: p.Users, Sessions: svc.Sessions, Keys: svc.ClientKeys,
		Logger: log}).Mount(pub)
	thirdparty.New(thirdparty.Options{Manager: svc.Clients, Users: p.Users, Logger: log}).Mount(pub)
	pub.HandleFunc("GET /.well-known/did.json", func(w http.ResponseWriter, r *http.Request) {
		doc, err := svc.Identity.DocumentFor(r.Context(), r.Host)
		if err != nil {
			respond.Fail(w, r, log, err)
			return
		}
		respond.JSON(w, http.StatusOK, doc)
	})
	site.New(site.Options{Domains: svc.Domains, Branding: svc.Instance, Keys: svc.InstanceKeys, DID: svc.Identity.DID,
		Scopes: svc.LinkedRepos.Scopes, Logger: log}).Mount(pub)
	dash := dashboard.New(dashboard.Options{Claims: svc.Admins, Logger: log})
	si := signin.New(signin.Options{Flows: p.OAuthClient, Keys: svc.Admins, Cookies: p.Users.Cookies, Domains: svc.Domains,
		Pages: dash, SignedIn: svc.Backfill.Trigger(backfill.TriggerSignIn), Now: p.Now, Logger: log})
	si.Mount(pub)
	// The callback of every flow the instance runs as an OAuth client,
	// dispatched by the flow's purpose. A browser coming back from a flow
	// nobody knows any more (a used or expired state) is most likely
	// signing in to the dashboard: it is answered as a failed sign-in.
	signInFlows := si.Finisher()
	invites := invitepage.New(svc.LinkedRepos, log)
	pub.Handle("GET "+domains.CallbackPath, oauthcallback.New(oauthcallback.Options{Flows: p.OAuthClient, Logger: log,
		Finishers: map[string]oauthcallback.Finisher{
			signin.PurposeAdminSignIn: signInFlows,
			linkedrepos.PurposeLinkedRepo: oauthcallback.LinkedRepo{Service: svc.LinkedRepos, Flows: p.OAuthClient,
				Handles: p.Handles, Pages: invites, Logger: log},
		},
		Unknown: signInFlows}))
	invites.Mount(pub)
	pluginroutes.New(pluginroutes.Options{Service: svc.PluginAccounts, Users: p.Users, ClientMiddleware: clientMW, Logger: log}).Mount(pub)
	// The dashboard, and GET / redirecting to it.
	dash.Mount(pub)
	pub.HandleFunc("/", notFound)

	am := adminAPI(svc, p)
	adm := http.NewServeMux()
	adm.Handle("/admin/", am)
	adm.HandleFunc("/", notFound)

	all := http.NewServeMux()
	all.Handle("/admin/", am)
	all.Handle("/", pub)
	wrap := func(h http.Handler) http.Handler { return securityHeaders(limitHeaders(respond.Recover(log, h))) }
	return &Surfaces{
		All: wrap(all), Public: wrap(pub), Admin: wrap(adm),
		AdminRoutes: am.Mounted(), xrpc: xh,
	}
}

// adminAPI assembles the admin API: authentication, the permission gate
// and every handler module.
func adminAPI(svc Services, p Parts) *adminapi.Mux {
	m := adminapi.NewMux(adminapi.NewAuthenticator(adminapi.AuthenticatorOptions{ServiceAuth: p.Users.ServiceAuth,
		Cookies: p.Users.Cookies, Domains: svc.Domains, Admins: svc.Admins, Logger: p.Logger}), p.Logger)
	adminlexicons.Mount(m, svc.Lexicons)
	users.Mount(m, svc.Admins)
	adminscripts.Mount(m, svc.Scripts)
	scriptvars.Mount(m, svc.Variables)
	admindeadletters.Mount(m, svc.DeadLetters)
	events.Mount(m, svc.Events)
	admininstance.Mount(m, svc.Instance, svc.Records)
	adminapiclients.Mount(m, svc.Clients)
	authkeys.Mount(m, svc.ClientKeys)
	adminbackfill.Mount(m, svc.Backfill, p.StreamKeepalive)
	adminserviceid.MountDomains(m, svc.Domains)
	adminserviceid.MountIdentity(m, svc.Identity)
	adminserviceid.MountServiceEntries(m, svc.Entries)
	authkeys.MountInstance(m, svc.InstanceKeys, svc.Domains)
	adminlinkedrepos.Mount(m, svc.LinkedRepos)
	adminlabelers.Mount(m, svc.Labelers)
	adminplugins.Mount(m, svc.Plugins)
	adminnetlexicons.Mount(m, svc.NetworkLexicons)
	proxysettings.Mount(m, svc.ProxyPolicies)
	adminfieldindexes.Mount(m, svc.FieldIndexes)
	return m
}
