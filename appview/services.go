package appview

import (
	"context"
	"strings"

	"github.com/lexview/lexview/appview/internal/core/plc"
	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/service/backfilljobs"
	"github.com/lexview/lexview/appview/internal/service/backlinks"
	"github.com/lexview/lexview/appview/internal/service/clientkeys"
	"github.com/lexview/lexview/appview/internal/service/deadletters"
	"github.com/lexview/lexview/appview/internal/service/devicesessions"
	"github.com/lexview/lexview/appview/internal/service/domains"
	"github.com/lexview/lexview/appview/internal/service/instance"
	"github.com/lexview/lexview/appview/internal/service/labelers"
	"github.com/lexview/lexview/appview/internal/service/lexicons"
	"github.com/lexview/lexview/appview/internal/service/linkedrepos"
	"github.com/lexview/lexview/appview/internal/service/netlexicons"
	"github.com/lexview/lexview/appview/internal/service/pluginaccounts"
	"github.com/lexview/lexview/appview/internal/service/profiles"
	"github.com/lexview/lexview/appview/internal/service/reads"
	"github.com/lexview/lexview/appview/internal/service/records"
	"github.com/lexview/lexview/appview/internal/service/scripts"
	"github.com/lexview/lexview/appview/internal/service/serviceentries"
	"github.com/lexview/lexview/appview/internal/service/serviceid"
	"github.com/lexview/lexview/appview/internal/service/writepath"
	"github.com/lexview/lexview/appview/internal/service/xrpcmethods"
	"github.com/lexview/lexview/appview/internal/service/xrpcproxy"
	"github.com/lexview/lexview/appview/internal/web/server"
	"github.com/lexview/lexview/backfill"
)

// newServices builds the service line: every operation the front ends
// (admin API, XRPC, the command, the library API) call exists once, in
// one of these services.
func (a *App) newServices() *server.Services {
	lexSvc := lexicons.New(lexicons.Options{
		Registry: a.lexicons, Scripts: a.scripts, Backfill: a.backfill, Events: a.events, Logger: a.log,
		LiveIngestion: len(a.sources) > 0, BuiltinMethods: backlinks.Methods, Indexes: a.fieldIndexes,
	})
	doms := domains.New(domains.Options{Store: a.store, Events: a.events, PublicURL: a.cfg.PublicURL, Now: a.cfg.Now, Logger: a.log})
	writes := writepath.New(writepath.Options{PDS: a.pds, Indexer: a.writer, Lexicons: a.lexicons, Records: a.store,
		Events: a.events, Logger: a.log, Now: a.cfg.Now})
	policies := xrpcproxy.NewPolicies(xrpcproxy.PoliciesOptions{Store: a.store, Events: a.events, Now: a.cfg.Now})
	var proxy *xrpcproxy.Router
	if a.cfg.Network.LexiconResolver != nil {
		proxy = xrpcproxy.New(xrpcproxy.Options{Policies: policies, Resolver: a.cfg.Network.LexiconResolver, Directory: a.cfg.Network.Directory,
			Events: a.events, Metrics: a.metrics, Self: a.isSelf, Logger: a.log})
	}
	bf := backfilljobs.New(a.backfill, a.events)
	return &server.Services{
		Clients: a.clientManager,
		Events:  a.events,
		Admins: admins.New(admins.Options{Store: a.store, Events: a.events, Claim: a.claimPolicy(), Now: a.cfg.Now,
			Logger: a.log}),
		Lexicons: lexSvc,
		NetworkLexicons: netlexicons.New(netlexicons.Options{Store: a.store, Lexicons: lexSvc, Resolver: a.cfg.Network.LexiconResolver,
			Events: a.events, Metrics: a.metrics, Now: a.cfg.Now, Logger: a.log}),
		ProxyPolicies: policies,
		Proxy:         proxy,
		Scripts:       scripts.New(scripts.Options{Store: a.store, Runtime: a.scripts, Events: a.events, Logger: a.log}),
		Variables: scripts.NewVariables(scripts.VariablesOptions{Store: a.store, Sealer: a.sealer, Runtime: a.scripts,
			Events: a.events, Now: a.cfg.Now}),
		DeadLetters: deadletters.New(deadletters.Options{Store: a.store, Runtime: a.scripts, Events: a.events,
			Now: a.cfg.Now, Logger: a.log}),
		Instance: instance.New(instance.Options{
			Store: a.store, Lexicons: a.lexicons, Events: a.events, SyncStatus: a.syncStatus, History: a.history, Now: a.cfg.Now, Logger: a.log,
			ValidationModes: a.validation.report,
			Check:           checkSetting, Changed: a.settingsChanged,
			Features: map[string]bool{
				"jetstream":        a.cfg.Ingest.JetstreamURL != "off" && a.cfg.Ingest.EventStream != EventStreamFirehose,
				"firehose":         a.cfg.Ingest.EventSource == nil && a.cfg.Ingest.EventStream == EventStreamFirehose,
				"metrics":          a.cfg.Metrics.Addr != "",
				"token_encryption": a.sealer != nil,
			},
		}),
		Backfill: bf,
		Records:  records.New(records.Options{Store: a.store, Writer: a.writer, Events: a.events, Labels: a.store}),
		Sessions: devicesessions.New(devicesessions.Options{Store: a.store, Sealer: a.sealer,
			Verifier: &devicesessions.Verifier{Directory: a.cfg.Network.Directory, PDS: a.pds}, Events: a.events, Now: a.cfg.Now,
			SignedIn: bf.Trigger(backfill.TriggerOAuthSession)}),
		Writes: writes,
		Calls: xrpcmethods.New(xrpcmethods.Options{
			Reads: reads.New(a.store, directoryIdentities{a.cfg.Network.Directory}).OnMiss(queryMisses{a.backfill}).HideInvalid(a.validation.hidden), Writes: writes, Scripts: a.scripts,
			Identities: directoryIdentities{a.cfg.Network.Directory}, Labels: a.store, Now: a.cfg.Now, Logger: a.log,
		}),
		Backlinks:    a.backlinks,
		FieldIndexes: a.fieldIndexes,
		Profiles:     profiles.New(profiles.Options{Directory: a.cfg.Network.Directory, HTTPClient: a.cfg.Network.HTTPClient, Logger: a.log}),
		ClientKeys: clientkeys.New(clientkeys.Options{
			Store: a.store, Sealer: a.sealer, PublicURL: a.cfg.PublicURL, HTTPClient: a.cfg.Network.HTTPClient, Events: a.events, Now: a.cfg.Now,
		}),
		Domains: doms,
		Identity: serviceid.New(serviceid.Options{Store: a.store, Domains: doms, Sealer: a.sealer, Events: a.events,
			PLC:       &plc.Client{URL: a.cfg.Network.PLCURL, HTTP: a.cfg.sourceHTTPClient(a.cfg.Network.PLCURL)},
			Directory: a.cfg.Network.Directory, HTTP: a.cfg.Network.HTTPClient, Now: a.cfg.Now}),
		Entries: serviceentries.New(serviceentries.Options{Store: a.store, Lexicons: a.lexicons, Events: a.events, Now: a.cfg.Now}),
		InstanceKeys: clientkeys.NewInstance(clientkeys.InstanceOptions{
			Store: a.store, Sealer: a.sealer, Events: a.events, Now: a.cfg.Now,
		}),
		// Grants are authorized on the primary domain through the
		// instance's OAuth client, which is built after the services.
		LinkedRepos: linkedrepos.New(linkedrepos.Options{Store: a.store, Events: a.events, Now: a.cfg.Now, Logger: a.log,
			Linked:  bf.Trigger(backfill.TriggerLinkedRepo),
			BaseURL: func(ctx context.Context) string { return inviteBase(ctx, doms, a.cfg.PublicURL) },
			Authorizer: linkedrepos.OAuthAuthorizer{
				Flows:  func() linkedrepos.Flows { return a.oauthClient },
				Origin: func(ctx context.Context) string { return inviteBase(ctx, doms, a.cfg.PublicURL) },
			}}),
		Labelers: labelers.New(labelers.Options{Store: a.store, Events: a.events, Now: a.cfg.Now, OnChange: a.labelSubs.Changed}),
		Plugins:  a.plugins,
		PluginAccounts: pluginaccounts.New(pluginaccounts.Options{Plugins: a.plugins, Store: a.store, Writer: writes,
			Sealer: a.sealer, Events: a.events, PublicURL: a.cfg.PublicURL, Now: a.cfg.Now, Logger: a.log}),
	}
}

// inviteBase is the origin invite URLs are built on, and grants'
// authorizations run on: the primary domain, else PUBLIC_URL.
func inviteBase(ctx context.Context, doms *domains.Service, publicURL string) string {
	if d, ok := doms.Primary(ctx); ok {
		return strings.TrimRight(d.URL, "/")
	}
	return strings.TrimRight(publicURL, "/")
}
