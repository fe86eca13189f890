// Package appview is Lexview's public entry point: a lexicon-driven atproto
// AppView as an embeddable library. New builds an App from a Config; the App
// is an http.Handler, starts its background work with Start (or serves
// everything with Run), and stops gracefully with Shutdown.
package appview

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lexview/lexview/appview/ingest"
	"github.com/lexview/lexview/appview/internal/admin"
	"github.com/lexview/lexview/appview/internal/clients"
	"github.com/lexview/lexview/appview/internal/eventlog"
	"github.com/lexview/lexview/appview/internal/fixed"
	"github.com/lexview/lexview/appview/internal/indexer"
	"github.com/lexview/lexview/appview/internal/metrics"
	"github.com/lexview/lexview/appview/internal/oauthapi"
	"github.com/lexview/lexview/appview/internal/respond"
	"github.com/lexview/lexview/appview/internal/scripting"
	"github.com/lexview/lexview/appview/internal/serviceauth"
	"github.com/lexview/lexview/appview/internal/session"
	"github.com/lexview/lexview/appview/internal/thirdparty"
	"github.com/lexview/lexview/appview/internal/userauth"
	"github.com/lexview/lexview/appview/internal/xrpc"
	backfilljobs "github.com/lexview/lexview/backfill"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/oauth"
	"github.com/lexview/lexview/script"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/postgres"
	"github.com/lexview/lexview/storage/sqlite"
)

// Version is the Lexview release.
const Version = "0.1.0"

// App is a running Lexview instance.
type App struct {
	cfg           Config
	log           *slog.Logger
	store         storage.Store
	ownsStore     bool
	lexicons      *lexicon.Registry
	clients       *clients.Registry
	clientManager *clients.Manager
	events        *eventlog.Log
	admin         *admin.Mux
	metrics       *metrics.Metrics
	writer        *indexer.Writer
	backfill      *backfilljobs.Manager // backfill jobs; its worker runs from Start
	validation    *validationToggles
	source        ingest.Source // nil when live ingestion is off
	sealer        *oauth.Sealer // seals secrets at rest
	users         *userauth.Authenticator
	pds           *oauth.Client // acts on users' PDSes with their DPoP sessions
	scripts       *scripting.Runtime
	svc           *services // the service line under the front ends
	handler       http.Handler
	sessionSecret []byte

	mu      sync.Mutex
	started bool
	stopped bool
	bg      context.Context // lives from Start to Shutdown
	cancel  context.CancelFunc
	workers sync.WaitGroup
	server  *http.Server
}

// New builds an App: it opens (or adopts) the store, applies migrations,
// loads the lexicon registry and assembles the HTTP surface. It starts no
// background work; call Start or Run.
func New(cfg Config) (*App, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	a := &App{cfg: cfg, log: cfg.Logger, store: cfg.Store}
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
	sealer, err := a.newSealer()
	if err != nil {
		return fail(err)
	}
	a.sealer = sealer
	a.sessionSecret = []byte(cfg.SessionSecret)
	if len(a.sessionSecret) == 0 {
		a.sessionSecret = make([]byte, 32)
		_, _ = rand.Read(a.sessionSecret)
		a.log.Warn("SESSION_SECRET is not set; using a random per-process secret, dashboard sessions end on restart")
	}
	if _, ok := cfg.ClientIdentifier.(clients.Unverified); ok {
		a.log.Warn("API client keys are not verified: any non-empty X-Client-Key is accepted")
	}
	a.lexicons = lexicon.NewRegistry(a.store)
	if err := a.lexicons.Load(ctx); err != nil {
		return fail(err)
	}
	a.events = eventlog.New(a.store, cfg.Now, a.log)
	if cfg.MetricsAddr != "" {
		a.metrics = metrics.New()
	}
	a.pds = oauth.NewClient(&sessionSource{store: a.store, sealer: a.sealer, now: cfg.Now},
		oauth.ClientOptions{HTTPClient: cfg.HTTPClient, Now: cfg.Now, UserAgent: "lexview/" + Version})
	a.scripts = scripting.New(scripting.Options{
		Engine: cfg.ScriptEngine, Store: a.store, Lexicons: a.lexicons, Events: a.events, Sealer: a.sealer, PDS: a.pds,
		Directory: cfg.Directory, HTTPClient: cfg.HTTPClient, Logger: a.log, Now: cfg.Now, Retry: cfg.ScriptRetry,
	})
	if err := a.scripts.Reload(ctx); err != nil {
		return fail(err)
	}
	a.writer = a.newWriter()
	a.scripts.SetWriter(a.writer)
	// Backfill: the job manager writes through the one batch writer.
	bcfg := backfilljobs.Config{
		Store: a.store, Writer: bulkWriter{a.writer}, Lexicons: a.lexicons, Directory: cfg.Directory, HTTPClient: cfg.HTTPClient,
		RelayURL: cfg.RelayURL, Events: backfillAudit{a.events}, Logger: a.log, Now: cfg.Now,
	}
	if a.metrics != nil {
		bcfg.Metrics = a.metrics
	}
	if a.backfill, err = backfilljobs.New(bcfg); err != nil {
		return fail(err)
	}
	a.source = cfg.EventSource
	if a.source == nil && cfg.JetstreamURL != "off" {
		a.source = &ingest.Jetstream{URL: cfg.JetstreamURL, HTTPClient: cfg.HTTPClient, Metrics: a.metrics, Logger: a.log, Now: cfg.Now}
	}
	a.svc = a.newServices()
	if err := a.svc.instance.RunScheduledVacuum(ctx); err != nil {
		return fail(fmt.Errorf("scheduled vacuum: %w", err))
	}
	limits := clients.Limits{Capacity: cfg.DefaultRateLimitCapacity, RefillRate: cfg.DefaultRateLimitRefillRate}
	a.clients = clients.NewRegistry(a.store, limits, cfg.Now, a.log)
	a.clientManager = clients.NewManager(a.store, a.clients, a.events, cfg.Now)
	if cfg.ClientIdentifier == nil {
		cfg.ClientIdentifier = a.clients
		a.cfg.ClientIdentifier = a.clients
	}
	a.users = &userauth.Authenticator{
		Store: a.store, Sealer: a.sealer, PublicURL: cfg.PublicURL, Now: cfg.Now,
		DPoP:        oauth.NewVerifier(oauth.VerifierOptions{Now: cfg.Now}),
		ServiceAuth: &serviceauth.Verifier{Directory: cfg.Directory, Now: cfg.Now, Audiences: cfg.ServiceAuthAudiences},
		Cookies:     session.NewCodec(a.sessionSecret, cfg.Now),
	}
	a.admin = a.adminAPI()
	a.handler = a.routes()
	return a, nil
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

func (a *App) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok"))
	})
	clientMW := clients.Middleware(a.cfg.ClientIdentifier, a.clients, a.log)
	xh := xrpc.New(xrpc.Options{
		Lexicons:         a.lexicons,
		Records:          a.store,
		Identities:       directoryIdentities{a.cfg.Directory},
		ClientMiddleware: clientMW,
		Users:            a.users,
		Procedures:       &xrpc.Proxy{PDS: a.pds, Indexer: a.writer, Logger: a.log},
		Scripts:          a.scripts,
		Methods:          a.cfg.XRPCMethods,
		Logger:           a.log,
	})
	a.scripts.SetLocalXRPC(func(ctx context.Context, inv *script.Invocation, method, nsid string, query map[string][]string, body []byte) (int, []byte, error) {
		status, out := xh.Call(scripting.WithDepth(ctx, inv.Depth+1), method, nsid, query, body)
		return status, out, nil
	})
	mux.Handle("/xrpc/{nsid}", xh)
	fixed.New(fixed.Options{ClientMiddleware: clientMW, Users: a.users, PDS: a.pds, Directory: a.cfg.Directory,
		HTTPClient: a.cfg.HTTPClient, Logger: a.log}).Mount(mux)
	mux.Handle("/admin/", a.admin)
	oauthapi.New(oauthapi.Options{Store: a.store, Clients: a.clients, Sealer: a.sealer, PublicURL: a.cfg.PublicURL,
		Users: a.users, Sessions: a.svc.sessions, Now: a.cfg.Now, Logger: a.log}).Mount(mux)
	thirdparty.New(thirdparty.Options{Manager: a.clientManager, Registry: a.clients, Users: a.users, Logger: a.log}).Mount(mux)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		respond.Error(w, http.StatusNotFound, "not found")
	})
	return respond.Recover(a.log, mux)
}

// ServeHTTP implements http.Handler: the whole HTTP surface of the App.
func (a *App) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.handler.ServeHTTP(w, r) }

// Handler returns the App's HTTP surface.
func (a *App) Handler() http.Handler { return a.handler }

// Store is the App's storage backend.
func (a *App) Store() storage.Store { return a.store }

// AdminRoutes lists the mounted admin routes ("METHOD /admin/...").
func (a *App) AdminRoutes() []string { return a.admin.Mounted() }

// Writer is the App's batch writer: every record change (live, backfill,
// procedures, or an embedder's own) should go through it.
func (a *App) Writer() *indexer.Writer { return a.writer }

// Clients manages the instance's API clients (the admin API uses the same
// code).
func (a *App) Clients() *clients.Manager { return a.clientManager }

// Config returns the effective configuration, defaults filled in.
func (a *App) Config() Config { return a.cfg }

// Start launches background work. It returns at once; the work runs until
// Shutdown (or until ctx ends).
func (a *App) Start(ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopped {
		return errors.New("appview: Start after Shutdown")
	}
	if a.started {
		return errors.New("appview: already started")
	}
	a.started = true
	a.bg, a.cancel = context.WithCancel(ctx)
	a.startSync()
	a.goWorker(a.backfill.Run) // backfill worker: one job at a time
	a.goWorker(func(ctx context.Context) { a.scripts.Run(ctx, scriptRefresh) })
	a.goWorker(func(ctx context.Context) {
		a.lexicons.RunRefresh(ctx, lexiconRefresh, func(err error) {
			a.log.Warn("re-reading lexicons changed through other instances failed", "err", err)
		})
	})
	if days := a.cfg.EventLogRetentionDays; days > 0 {
		a.goWorker(func(ctx context.Context) {
			a.events.RunPurge(ctx, time.Duration(days)*24*time.Hour, time.Hour)
		})
	}
	return nil
}

// goWorker runs fn in the background until Shutdown; the caller holds mu.
func (a *App) goWorker(fn func(ctx context.Context)) {
	a.workers.Add(1)
	go func() {
		defer a.workers.Done()
		fn(a.bg)
	}()
}

// Listen opens the listener on the configured host and port.
func (a *App) Listen() (net.Listener, error) {
	port := a.cfg.Port
	if port < 0 {
		port = 0
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(a.cfg.Host, strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	return ln, nil
}

// Run starts background work and serves HTTP on the configured address until
// ctx ends, then shuts down gracefully within shutdownTimeout.
func (a *App) Run(ctx context.Context) error {
	ln, err := a.Listen()
	if err != nil {
		return err
	}
	return a.Serve(ctx, ln)
}

// shutdownTimeout bounds the graceful stop after Run's context ends.
const shutdownTimeout = 30 * time.Second

// Serve is Run on a listener of the caller's choosing.
func (a *App) Serve(ctx context.Context, ln net.Listener) error {
	if err := a.Start(ctx); err != nil {
		ln.Close()
		return err
	}
	srv := &http.Server{
		Handler:           a.handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(a.log.Handler(), slog.LevelWarn),
	}
	a.mu.Lock()
	a.server = srv
	a.mu.Unlock()
	a.log.Info("lexview listening", "addr", "http://"+ln.Addr().String(), "public_url", a.cfg.PublicURL, "version", Version)

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		_ = a.shutdown(context.Background())
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	return a.Shutdown(sctx)
}

// Shutdown stops serving (finishing in-flight requests), stops background
// work and closes the store if the App opened it. It is safe to call more
// than once.
func (a *App) Shutdown(ctx context.Context) error { return a.shutdown(ctx) }

func (a *App) shutdown(ctx context.Context) error {
	a.mu.Lock()
	if a.stopped {
		a.mu.Unlock()
		return nil
	}
	a.stopped = true
	srv, cancel := a.server, a.cancel
	a.mu.Unlock()

	var errs []error
	if srv != nil {
		if err := srv.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("http shutdown: %w", err))
		}
	}
	if cancel != nil {
		cancel()
	}
	done := make(chan struct{})
	go func() { a.workers.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("background work did not stop: %w", ctx.Err()))
	}
	if a.ownsStore {
		if err := a.store.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close store: %w", err))
		}
	}
	a.log.Info("lexview stopped")
	return errors.Join(errs...)
}
