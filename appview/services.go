package appview

import (
	"github.com/lexview/lexview/appview/internal/admin"
	"github.com/lexview/lexview/appview/internal/admin/apiclients"
	"github.com/lexview/lexview/appview/internal/admin/authkeys"
	"github.com/lexview/lexview/appview/internal/admin/backfill"
	"github.com/lexview/lexview/appview/internal/admin/deadletters"
	"github.com/lexview/lexview/appview/internal/admin/events"
	adminlexicons "github.com/lexview/lexview/appview/internal/admin/lexicons"
	"github.com/lexview/lexview/appview/internal/admin/operator"
	"github.com/lexview/lexview/appview/internal/admin/scripts"
	"github.com/lexview/lexview/appview/internal/admin/scriptvars"
	"github.com/lexview/lexview/appview/internal/admin/users"
	"github.com/lexview/lexview/appview/internal/admins"
	"github.com/lexview/lexview/appview/internal/clients"
	"github.com/lexview/lexview/appview/internal/lexicons"
)

// services is the service line: every operation the front ends (admin
// API, XRPC, the command, the library API) call exists once, here.
type services struct {
	admins   *admins.Service
	lexicons *lexicons.Service
}

// newServices builds the services over the App's parts.
func (a *App) newServices() *services {
	return &services{
		admins: admins.New(a.store, a.events, a.cfg.Now, a.log),
		lexicons: lexicons.New(lexicons.Options{
			Registry: a.lexicons, Scripts: a.scripts, Backfill: a.backfill, Events: a.events, Logger: a.log,
		}),
	}
}

// adminAPI assembles the admin API: authentication, the permission gate
// and every handler module.
func (a *App) adminAPI(limits clients.Limits) *admin.Mux {
	auth := admin.NewAuthenticator(a.store, a.users.ServiceAuth, a.users.Cookies, a.svc.admins, a.cfg.Now, a.log)
	m := admin.NewMux(auth, a.log)
	deps := admin.Deps{
		Store: a.store, Lexicons: a.lexicons, Clients: a.clients, ClientManager: a.clientManager, Events: a.events,
		Defaults: limits, Now: a.cfg.Now, Log: a.log, SyncStatus: a.syncStatus, Backfill: a.backfill,
		Sealer: a.sealer, PublicURL: a.cfg.PublicURL, HTTPClient: a.cfg.HTTPClient, Scripts: a.scripts,
		StreamKeepalive: a.cfg.StreamKeepalive,
		Features: map[string]bool{
			"jetstream":        a.cfg.JetstreamURL != "off",
			"metrics":          a.cfg.MetricsAddr != "",
			"token_encryption": a.sealer != nil,
		},
	}
	adminlexicons.Mount(m, a.svc.lexicons)
	users.Mount(m, a.svc.admins)
	for _, mount := range []func(*admin.Mux, admin.Deps){
		events.Mount,
		operator.Mount,
		apiclients.Mount,
		backfill.Mount,
		authkeys.Mount,
		scripts.Mount, scriptvars.Mount, deadletters.Mount,
	} {
		mount(m, deps)
	}
	return m
}
