// Package appview is Lexview's public entry point: a lexicon-driven atproto
// AppView as an embeddable library. New builds an App from a Config; the App
// is an http.Handler, starts its background work with Start (or serves
// everything with Run), and stops gracefully with Shutdown.
//
// The App hands out its parts: Writer, the batch writer every record
// change goes through; Lexicons, which uploads and removes lexicons as
// POST /admin/lexicons does; Clients, the API clients as
// /admin/api-clients manages them; Indexes, the declared field indexes as
// /admin/indexes manages them; and Store, for reading. A failure their
// callers can act on is an *Error with a kind (ErrNotFound, ErrInvalid,
// ErrConflict...), for errors.Is and errors.As. docs/embedding.md walks
// through all of it.
//
// The package's files have one job each: app.go builds the App (New) and
// hands out its parts; config.go is the Config; writer.go, lexicons.go,
// clients.go and indexes.go are the public faces of the writer and the
// services, and
// errors.go their error kinds; lifecycle.go is the component contract and the
// ordered start and stop; components.go lists the App's components;
// serve.go serves HTTP; routes.go assembles the HTTP surfaces; sources.go
// connects event sources to the writer; validation.go keeps the validation
// modes (instance-wide and per collection); revalidate.go re-validates stored
// records after a lexicon revision.
package appview

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/lexview/lexview/appview/ingest"
	"github.com/lexview/lexview/appview/internal/core/cluster"
	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/history"
	"github.com/lexview/lexview/appview/internal/core/indexer"
	"github.com/lexview/lexview/appview/internal/core/labelsub"
	"github.com/lexview/lexview/appview/internal/core/metrics"
	"github.com/lexview/lexview/appview/internal/core/scripthost"
	"github.com/lexview/lexview/appview/internal/core/serviceauth"
	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/service/backlinks"
	"github.com/lexview/lexview/appview/internal/service/clientkeys"
	"github.com/lexview/lexview/appview/internal/service/fieldindexes"
	"github.com/lexview/lexview/appview/internal/service/linkedrepos"
	"github.com/lexview/lexview/appview/internal/service/oauthclient"
	"github.com/lexview/lexview/appview/internal/service/plugins"
	"github.com/lexview/lexview/appview/internal/service/plugins/wasm"
	"github.com/lexview/lexview/appview/internal/service/scripts"
	"github.com/lexview/lexview/appview/internal/service/writepath"
	"github.com/lexview/lexview/appview/internal/web/server"
	"github.com/lexview/lexview/appview/internal/web/sessioncookie"
	"github.com/lexview/lexview/appview/internal/web/userauth"
	"github.com/lexview/lexview/backfill"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/oauth"
	"github.com/lexview/lexview/script"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/postgres"
	"github.com/lexview/lexview/storage/sqlite"
)

// Version is the Lexview release.
const Version = "0.1.0"

// On PostgreSQL the batch writer commits postgresBulkWriters batches of
// bulk work (backfill) at once, beside the live batch, each of up to
// postgresBulkBatch changes: the backfill's default concurrency (8
// repositories, 8 pages of 100 each in flight) keeps them filling. Bigger
// statements cost PostgreSQL less per record (a backfill into a 1,000,000
// record database: 16,700 -> 19,000 records/s going from 1,000 to 2,000,
// scripts/bench-ingest's backfill phase).
const (
	postgresBulkWriters = 2
	postgresBulkBatch   = 2000
)

// App is a running Lexview instance.
type App struct {
	cfg       Config
	log       *slog.Logger
	store     storage.Store
	ownsStore bool

	// Services.
	lexicons      *lexicon.Registry
	clients       *apiclients.Registry
	clientManager *apiclients.Manager
	events        *eventlog.Log
	metrics       *metrics.Metrics // nil when metrics are off
	validation    *validationToggles
	live          liveState // the settings read at use time (settings.go)
	writer        *indexer.Writer
	scripts       *scripthost.Runtime
	backlinks     *backlinks.Service    // backlink queries, for the XRPC methods and scripts
	fieldIndexes  *fieldindexes.Service // declared field indexes, their build and the index suggestions
	backfill      *backfill.Manager
	resyncSlots   chan struct{}     // bounds the repositories fetched again after gaps (sources.go)
	labelSubs     *labelsub.Manager // one subscription per active labeler
	sources       []ingest.Source   // live event sources; none when ingestion is off
	sealer        *oauth.Sealer     // seals secrets at rest
	pluginRuntime *wasm.Runtime
	plugins       *plugins.Manager
	users         *userauth.Authenticator
	oauthClient   *oauthclient.Client // the instance as an OAuth client (dashboard sign-in)
	pds           *oauth.Client       // acts on users' PDSes with their DPoP sessions
	calls         *history.Calls      // the XRPC calls answered, by method, for the history
	history       *history.History    // the dashboard's charts and status indicator (history.go)
	svc           *server.Services    // the service line under the front ends
	surfaces      *server.Surfaces    // the front ends

	leadership *cluster.Leadership // the election among instances sharing the database (cluster.go)
	leader     *leaderWork         // the singleton work the leader runs

	life  lifecycle // the background work, started and stopped in order
	state appState

	claimToken string // lets an admin request claim a fresh instance (ClaimWithToken)

	appFolder atomic.Pointer[AppFolderStatus] // the app folder applied to the App, if any (appfolderstatus.go)
}

// New builds an App: it opens (or adopts) the store, applies migrations,
// lays the stored instance settings that apply at start over cfg (see
// Config), runs a one-time SQLite vacuum if an operator armed one, loads the
// lexicon registry and assembles the HTTP surface. It starts no background
// work; call Start (or StartWriting) or Run.
//
// Files New writes (none with PostgreSQL and a Security.TokenEncryptionKey):
//   - with DatabaseURL sqlite://PATH: the directory of PATH (created 0700
//     with any missing parents), the database file PATH and SQLite's
//     write-ahead log and shared-memory files PATH-wal and PATH-shm;
//   - with SQLite (opened by New or given as Config.Store) and no
//     Security.TokenEncryptionKey: token-encryption.key beside the database file,
//     a generated key (base64 of 32 bytes) readable by the owner only
//     (0600), written once through a temporary .key-*.tmp file in that
//     directory and never rewritten; it seals every secret at rest, so
//     back it up with the database;
//   - with SQLite, when an operator armed the one-time vacuum (POST
//     /admin/database/vacuum/schedule): the database file is rebuilt in
//     place (SQLite uses temporary files in the system's temporary
//     directory meanwhile).
//
// Nothing else is written to the file system, by New or later.
func New(cfg Config) (*App, error) {
	cfg = cfg.withStorageDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	a := &App{store: cfg.Store, resyncSlots: make(chan struct{}, maxResyncs)}
	a.live.purge = make(chan struct{}, 1)
	// The App logs through the level that the setting log_level may set.
	cfg.Logger = slog.New(a.live.level.wrap(cfg.Logger.Handler()))
	a.log = cfg.Logger
	if a.store == nil {
		s, err := OpenStore(ctx, cfg.DatabaseURL)
		if err != nil {
			return nil, err
		}
		a.store, a.ownsStore = s, true
	}
	fail := func(err error) (*App, error) {
		if a.ownsStore {
			_ = a.store.Close()
		}
		return nil, err
	}
	if err := a.store.Migrate(ctx); err != nil {
		return fail(fmt.Errorf("migrate: %w", err))
	}
	// Settings that override the environment at start, then the defaults
	// of what is still unset.
	stored, err := a.store.ListSettings(ctx)
	if err != nil {
		return fail(fmt.Errorf("read settings: %w", err))
	}
	a.cfg = withStartSettings(ctx, stored, cfg).withDefaults()
	if err := a.build(ctx); err != nil {
		return fail(err)
	}
	return a, nil
}

// build makes the App's services and front ends, each from the ones built
// before it; a.cfg has its defaults and the store is migrated.
func (a *App) build(ctx context.Context) error {
	cfg := a.cfg
	var err error
	if a.sealer, err = a.newSealer(); err != nil {
		return err
	}
	sessionSecret := []byte(cfg.Security.SessionSecret)
	if len(sessionSecret) == 0 {
		sessionSecret = make([]byte, 32)
		_, _ = rand.Read(sessionSecret)
		a.log.Info("SESSION_SECRET is not set: session cookies are signed with a random per-process secret and end at restart")
	}
	a.metrics = newMetrics(cfg)
	if a.sources, err = eventSources(cfg); err != nil {
		return err
	}
	a.metrics.WatchSources(a.sourceStates)
	a.metrics.WatchLinkIndex(a.linkIndexState)
	a.metrics.WatchValidation(a.validationState)
	a.lexicons = lexicon.NewRegistry(a.store)
	if err := a.lexicons.Load(ctx); err != nil {
		return err
	}
	a.events = eventlog.New(eventlog.Options{Store: a.store, Now: cfg.Now, Logger: a.log})
	a.fieldIndexes = a.newFieldIndexes()
	a.metrics.WatchFieldIndexes(a.fieldIndexStates)
	a.pds = oauth.NewClient(writepath.NewSessionSource(writepath.SessionSourceOptions{Store: a.store, Sealer: a.sealer, Now: cfg.Now}),
		oauth.ClientOptions{HTTPClient: cfg.Network.HTTPClient, Now: cfg.Now, UserAgent: "lexview/" + Version})

	if a.pluginRuntime, err = wasm.New(ctx, wasm.Options{Limits: wasm.Limits{
		CallTimeout: cfg.Plugins.CallTimeout, MemoryPages: cfg.Plugins.MemoryPages, MaxMemory: cfg.Plugins.MaxMemory}}); err != nil {
		return err
	}
	a.metrics.WatchPluginMemory(func() metrics.PluginMemory {
		return metrics.PluginMemory{ByPlugin: a.pluginRuntime.MemoryByPlugin(), Limit: a.pluginRuntime.MaxMemory()}
	})
	a.plugins = plugins.New(plugins.Options{Store: a.store, Runtime: a.pluginRuntime, Sealer: a.sealer,
		Fetch: cfg.Network.HTTPClient, Plugin: cfg.Network.HTTPClient, Events: a.events, RegistryURL: cfg.Plugins.RegistryURL,
		Dir: cfg.Plugins.Dir, Now: cfg.Now, Logger: a.log})

	// Two cycles are closed here. The writer runs record-event scripts,
	// and scripts write through the writer; scripts call local XRPC
	// methods, served by the XRPC handler that runs scripts. The script
	// runtime gets links to the writer and the XRPC handler, both built
	// below, before New returns: nothing runs before Start, and no request
	// arrives before New returns.
	a.backlinks = backlinks.New(a.store)
	a.validation = newValidationToggles()
	a.scripts = scripthost.New(scripthost.Options{
		Engine: cfg.Scripts.Engine, Retry: scripthost.RetryPolicy(cfg.Scripts.Retry), Store: a.store, Lexicons: a.lexicons,
		Events: a.events, PDS: a.pds, Directory: cfg.Network.Directory, HTTPClient: cfg.Network.HTTPClient,
		Logger: a.log, Now: cfg.Now, Variables: a.scriptVariables(), SessionExpired: writepath.SessionExpired,
		Writer: writerLink{a}, LocalXRPC: a.localXRPC, LinkedRepos: linkedReposLink{a}, Labels: a.store, Plugins: a.plugins,
		Backlinks: a.backlinks, OnScan: a.fieldIndexes.ObserveScan, HidesInvalid: a.validation.hidden,
	})
	if err := a.scripts.Reload(ctx); err != nil {
		return err
	}
	// PostgreSQL writes on several connections at once: bulk work
	// (backfill) is committed in batches of its own beside live changes.
	// SQLite has one writer.
	bulkWriters, bulkBatch := 0, 0
	if a.store.Dialect() == "postgres" {
		bulkWriters, bulkBatch = postgresBulkWriters, postgresBulkBatch
	}
	a.newLeadership()
	a.writer = indexer.New(indexer.Options{Store: a.store, Lexicons: a.lexicons,
		Fence: a.leadership.Fence, Validation: a.validation.mode, Hook: withGoHooks(a.scripts, a.cfg.RecordHooks), Metrics: a.metrics, Logger: a.log, Now: cfg.Now,
		BulkWriters: bulkWriters, BulkMaxBatch: bulkBatch,
	})
	// Backfill: the job manager writes through the one batch writer.
	bcfg := backfill.Options{
		Store: a.store, Writer: bulkWriter{a.writer}, Lexicons: a.lexicons, Directory: cfg.Network.Directory, HTTPClient: cfg.Network.HTTPClient,
		RelayURL: cfg.Ingest.RelayURL, RelayHTTPClient: cfg.sourceHTTPClient(cfg.Ingest.RelayURL), Events: backfillAudit{a.events}, Logger: a.log, Now: cfg.Now, Instance: a.cfg.Cluster.InstanceID,
	}
	if a.metrics != nil {
		bcfg.Metrics = a.metrics
	}
	if a.backfill, err = backfill.New(bcfg); err != nil {
		return err
	}
	a.labelSubs = labelsub.New(labelsub.Options{
		Store: a.store, Directory: cfg.Network.Directory, HTTPClient: cfg.Network.HTTPClient, AllowHTTP: cfg.Network.AllowPrivateNetworks,
		Events: a.events, Metrics: a.metrics, Logger: a.log, Now: cfg.Now, Hook: a.scripts,
	})
	limits := apiclients.Limits{Capacity: cfg.Clients.DefaultRateLimitCapacity, RefillRate: cfg.Clients.DefaultRateLimitRefillRate}
	a.clients = apiclients.NewRegistry(apiclients.RegistryOptions{Store: a.store, Defaults: limits, Now: cfg.Now, Logger: a.log})
	a.clients.SetInstances(a.leadership.Live)
	a.clientManager = apiclients.NewManager(apiclients.ManagerOptions{Store: a.store, Registry: a.clients, Events: a.events, Now: cfg.Now})
	a.calls, a.history = history.NewCalls(), a.newHistory()
	if cfg.Security.AdminClaim == ClaimWithToken {
		a.claimToken = a.deriveClaimToken()
	}
	a.svc = a.newServices()
	if err := a.applySettings(ctx); err != nil {
		return err
	}
	if err := a.svc.Instance.RunScheduledVacuum(ctx); err != nil {
		return fmt.Errorf("scheduled vacuum: %w", err)
	}
	if err := a.svc.Domains.EnsurePrimary(ctx); err != nil {
		return fmt.Errorf("primary domain: %w", err)
	}
	if a.sealer != nil {
		if _, err := a.svc.InstanceKeys.Ensure(ctx); err != nil {
			return fmt.Errorf("instance OAuth key: %w", err)
		}
	}
	a.users = &userauth.Authenticator{
		Store: a.store, Sealer: a.sealer, PublicURL: cfg.PublicURL, Domains: a.svc.Domains, Now: cfg.Now,
		DPoP: oauth.NewVerifier(oauth.VerifierOptions{Now: cfg.Now, Shared: a.sharedReplays()}),
		ServiceAuth: &serviceauth.Verifier{Directory: cfg.Network.Directory, Now: cfg.Now,
			Audiences: cfg.Security.ServiceAuthAudiences, Self: a.instanceDID},
		Cookies: sessioncookie.NewCodec(sessionSecret, cfg.Now),
	}
	a.oauthClient = oauthclient.New(oauthclient.Options{
		Store: a.store, Sealer: a.sealer, Key: a.svc.InstanceKeys,
		PrivateKey: func(k storage.ClientAuthKey) (*ecdsa.PrivateKey, error) { return clientkeys.PrivateKey(a.sealer, k) },
		HTTPClient: cfg.Network.HTTPClient, Directory: cfg.Network.Directory, AllowHTTP: cfg.Network.AllowPrivateNetworks,
		UserAgent: "lexview/" + Version, Now: cfg.Now, Logger: a.log,
		Leases: a.store, Holder: a.cfg.Cluster.InstanceID,
	})
	a.surfaces = a.routes()
	a.life = lifecycle{parts: a.components()}
	a.leader.life = lifecycle{parts: a.leaderComponents()}
	if a.metrics != nil && cfg.Metrics.Registerer != nil {
		// Last: nothing can fail after it, so New never leaves collectors
		// registered for an App it did not return.
		if err := a.metrics.Register(cfg.Metrics.Registerer); err != nil {
			return fmt.Errorf("register metrics: %w", err)
		}
	}
	return nil
}

// sharedReplays is where DPoP proofs are remembered for every instance
// sharing the database, so that a proof accepted by one is refused by the
// others: the database itself on PostgreSQL. On SQLite, the database of
// one instance, none: the in-process cache catches every replay, and a
// shared check would wait for the single writer behind ingestion batches.
func (a *App) sharedReplays() oauth.ReplayStore {
	if a.store.Dialect() != "postgres" {
		return nil
	}
	return a.store
}

// newMetrics creates the collectors when metrics are served (Metrics.Addr)
// or registered with the embedder's registerer; otherwise nil.
func newMetrics(cfg Config) *metrics.Metrics {
	if cfg.Metrics.Addr == "" && cfg.Metrics.Registerer == nil {
		return nil
	}
	return metrics.New()
}

// eventSources returns the configured live event sources: Config.Ingest.EventSource,
// else the firehose at Ingest.RelayURL when Ingest.EventStream is "firehose",
// else Jetstream at Ingest.JetstreamURL unless it is "off". Their names must be valid
// and distinct.
func eventSources(cfg Config) ([]ingest.Source, error) {
	var out []ingest.Source
	switch {
	case cfg.Ingest.EventSource != nil:
		out = append(out, cfg.Ingest.EventSource)
	case cfg.Ingest.EventStream == EventStreamFirehose:
		out = append(out, &ingest.Firehose{URL: cfg.Ingest.RelayURL, Directory: cfg.Network.Directory, HTTPClient: cfg.sourceHTTPClient(cfg.Ingest.RelayURL),
			Logger: cfg.Logger, Now: cfg.Now})
	case cfg.Ingest.EventStream != EventStreamJetstream:
		return nil, fmt.Errorf("unknown event source %q: use %q or %q", cfg.Ingest.EventStream, EventStreamJetstream, EventStreamFirehose)
	case cfg.Ingest.JetstreamURL != "off":
		out = append(out, &ingest.Jetstream{URL: cfg.Ingest.JetstreamURL, HTTPClient: cfg.sourceHTTPClient(cfg.Ingest.JetstreamURL),
			Logger: cfg.Logger, Now: cfg.Now})
	}
	seen := map[string]bool{}
	for _, s := range out {
		name := s.Name()
		if err := ingest.CheckName(name); err != nil {
			return nil, err
		}
		if seen[name] {
			return nil, fmt.Errorf("two event sources are named %q", name)
		}
		seen[name] = true
	}
	return out, nil
}

// OpenStore opens the backend named by a database URL: sqlite://PATH or
// postgres://... (also postgresql://). It does not migrate.
func OpenStore(ctx context.Context, databaseURL string) (storage.Store, error) {
	switch {
	case strings.HasPrefix(databaseURL, "sqlite://"):
		return sqlite.OpenURL(ctx, databaseURL)
	case strings.HasPrefix(databaseURL, "postgres://"), strings.HasPrefix(databaseURL, "postgresql://"):
		return postgres.Open(ctx, databaseURL, postgres.Options{})
	}
	return nil, fmt.Errorf("unsupported DATABASE_URL %q: use sqlite://PATH or a postgres:// URL", databaseURL)
}

// Store is the App's storage backend.
func (a *App) Store() storage.Store { return a.store }

// Writer is the App's batch writer: every record change (live, backfill,
// procedures, or an embedder's own) should go through it, to be validated
// against its lexicon and run through record-event scripts. It accepts
// changes once the App is started (Start, StartWriting).
func (a *App) Writer() *Writer { return &Writer{a.writer} }

// InstanceDID is the instance's DID now: did:web of the primary domain's
// host (the primary domain is PUBLIC_URL's origin on first boot, and can be
// changed with POST /admin/domains/{id}/primary); "" when there is none.
// Service-auth JWTs naming it (or it with a service fragment) in `aud` are
// accepted.
func (a *App) InstanceDID(ctx context.Context) string { return a.svc.Identity.DID(ctx) }

func (a *App) instanceDID() string { return a.InstanceDID(context.Background()) }

// Config returns the effective configuration: defaults filled in, and the
// instance settings that apply at start laid over it. The settings that
// apply live are not in it (their fields keep the configured values);
// the Logger is the App's, which follows the setting log_level.
func (a *App) Config() Config { return a.cfg }

// writerLink lets the script runtime, built before the writer, write
// through it.
type writerLink struct{ a *App }

func (l writerLink) Write(ctx context.Context, source string, changes []storage.Change) (indexer.Result, error) {
	return l.a.writer.Write(ctx, source, changes)
}

// linkedReposLink lets the script runtime, built before the services and
// the OAuth client, write into linked repositories through them.
type linkedReposLink struct{ a *App }

func (l linkedReposLink) List(ctx context.Context) ([]storage.LinkedRepoGrant, error) {
	return l.a.svc.LinkedRepos.List(ctx)
}

func (l linkedReposLink) Write(ctx context.Context, w script.LinkedWrite, actorDID, trigger string) (scripthost.LinkedWritten, error) {
	res, err := l.a.svc.LinkedRepos.Write(ctx, l.a.oauthClient, linkedrepos.ScriptWrite(w, actorDID, trigger))
	return scripthost.LinkedWritten(res), err
}

// scriptVariables opens the script variables for the script runtime
// (nil without token encryption: no variables).
func (a *App) scriptVariables() func(ctx context.Context) (map[string]string, error) {
	if a.sealer == nil {
		return nil
	}
	return func(ctx context.Context) (map[string]string, error) { return scripts.Open(ctx, a.store, a.sealer) }
}
