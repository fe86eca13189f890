package appview

import (
	"github.com/lexview/lexview/appview/internal/admin"
	"github.com/lexview/lexview/appview/internal/admin/apiclients"
	"github.com/lexview/lexview/appview/internal/admin/authkeys"
	"github.com/lexview/lexview/appview/internal/admin/backfill"
	admindeadletters "github.com/lexview/lexview/appview/internal/admin/deadletters"
	"github.com/lexview/lexview/appview/internal/admin/events"
	adminlexicons "github.com/lexview/lexview/appview/internal/admin/lexicons"
	"github.com/lexview/lexview/appview/internal/admin/operator"
	adminscripts "github.com/lexview/lexview/appview/internal/admin/scripts"
	"github.com/lexview/lexview/appview/internal/admin/scriptvars"
	"github.com/lexview/lexview/appview/internal/admin/users"
	"github.com/lexview/lexview/appview/internal/admins"
	"github.com/lexview/lexview/appview/internal/backfilljobs"
	"github.com/lexview/lexview/appview/internal/clientkeys"
	"github.com/lexview/lexview/appview/internal/deadletters"
	"github.com/lexview/lexview/appview/internal/instance"
	"github.com/lexview/lexview/appview/internal/lexicons"
	"github.com/lexview/lexview/appview/internal/profiles"
	"github.com/lexview/lexview/appview/internal/reads"
	"github.com/lexview/lexview/appview/internal/records"
	"github.com/lexview/lexview/appview/internal/scripts"
	"github.com/lexview/lexview/appview/internal/sessions"
	"github.com/lexview/lexview/appview/internal/writepath"
)

// services is the service line: every operation the front ends (admin
// API, XRPC, the command, the library API) call exists once, here.
type services struct {
	admins      *admins.Service
	lexicons    *lexicons.Service
	scripts     *scripts.Service
	variables   *scripts.Variables
	deadLetters *deadletters.Service
	instance    *instance.Service
	clientKeys  *clientkeys.Service
	backfill    *backfilljobs.Service
	records     *records.Service
	sessions    *sessions.Service
	writes      *writepath.Service
	reads       *reads.Service
	profiles    *profiles.Service
}

// newServices builds the services over the App's parts.
func (a *App) newServices() *services {
	return &services{
		admins: admins.New(a.store, a.events, a.cfg.Now, a.log),
		lexicons: lexicons.New(lexicons.Options{
			Registry: a.lexicons, Scripts: a.scripts, Backfill: a.backfill, Events: a.events, Logger: a.log,
		}),
		scripts:     scripts.New(a.store, a.scripts, a.events, a.log),
		variables:   scripts.NewVariables(a.store, a.sealer, a.scripts, a.events, a.cfg.Now),
		deadLetters: deadletters.New(a.store, a.scripts, a.events, a.cfg.Now, a.log),
		instance: instance.New(instance.Options{
			Store: a.store, Lexicons: a.lexicons, Events: a.events, SyncStatus: a.syncStatus, Now: a.cfg.Now, Logger: a.log,
			Features: map[string]bool{
				"jetstream":        a.cfg.JetstreamURL != "off",
				"metrics":          a.cfg.MetricsAddr != "",
				"token_encryption": a.sealer != nil,
			},
		}),
		backfill: backfilljobs.New(a.backfill, a.events),
		records:  records.New(a.store, a.events),
		sessions: sessions.New(a.store, a.sealer, a.events, a.cfg.Now),
		writes:   writepath.New(a.pds, a.writer, a.log),
		reads:    reads.New(a.store, directoryIdentities{a.cfg.Directory}),
		profiles: profiles.New(a.cfg.Directory, a.cfg.HTTPClient, 0, 0, a.log),
		clientKeys: clientkeys.New(clientkeys.Options{
			Store: a.store, Sealer: a.sealer, PublicURL: a.cfg.PublicURL, HTTPClient: a.cfg.HTTPClient, Events: a.events, Now: a.cfg.Now,
		}),
	}
}

// adminAPI assembles the admin API: authentication, the permission gate
// and every handler module.
func (a *App) adminAPI() *admin.Mux {
	auth := admin.NewAuthenticator(a.users.ServiceAuth, a.users.Cookies, a.svc.admins, a.log)
	m := admin.NewMux(auth, a.log)
	adminlexicons.Mount(m, a.svc.lexicons)
	users.Mount(m, a.svc.admins)
	adminscripts.Mount(m, a.svc.scripts)
	scriptvars.Mount(m, a.svc.variables)
	admindeadletters.Mount(m, a.svc.deadLetters)
	events.Mount(m, a.events)
	operator.Mount(m, a.svc.instance, a.svc.records)
	apiclients.Mount(m, a.clientManager)
	authkeys.Mount(m, a.svc.clientKeys)
	backfill.Mount(m, a.svc.backfill, a.cfg.StreamKeepalive)
	return m
}
