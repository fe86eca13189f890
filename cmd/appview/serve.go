package main

import (
	"context"
	"errors"
	"flag"
	"net"
	"time"

	"github.com/lexview/lexview/appview"
)

func serveCommand() *command {
	return &command{
		name: "serve", scope: scopeServe,
		summary: "apply pending migrations, then serve HTTP until SIGINT or SIGTERM",
		about: "Binds HOST:PORT, applies pending database migrations, then serves HTTP\n" +
			"(the XRPC API, /oauth/*, the admin API and /health) and runs ingestion,\n" +
			"backfill and maintenance until SIGINT or SIGTERM, then shuts down\n" +
			"gracefully within 30 seconds.\n\n" +
			"With --app DIR it applies the app folder DIR at start, as `appview apply\n" +
			"--yes` does, and again each time a file of it changes (see `appview dev`\n" +
			"and docs/apps.md#develop); a folder with a problem changes nothing and\n" +
			"the problem is logged and shown in the dashboard until it is fixed.",
		define: func(fs *flag.FlagSet) func(context.Context, *invocation) int {
			appDir := fs.String("app", "", "apply the app folder `DIR` at start and again as its files change")
			prune := fs.Bool("prune", false, "with --app: remove the lexicons, scripts and indexes the folder does not have")
			return func(ctx context.Context, x *invocation) int {
				var opt serveOptions
				switch {
				case *appDir != "":
					opt.folder = &folderOptions{dir: *appDir, prune: *prune, report: logUpdate(x.log, *appDir)}
				case *prune:
					return x.usageError("--prune needs --app")
				}
				if err := serve(ctx, x.cfg, opt); err != nil {
					return x.failed(err)
				}
				return 0
			}
		},
	}
}

// serveOptions are what serve does besides serving the App.
type serveOptions struct {
	// folder is the app folder applied and watched; nil for none.
	folder *folderOptions
	// built, when set, is called once the App is built, before the folder
	// is applied.
	built func(app *appview.App)
}

// serve binds the listener first and only then builds the App, so that
// the default public URL (PUBLIC_URL unset), against which DPoP proofs
// are checked, names the port actually bound when PORT=0 picks one. An
// app folder is applied before the App serves, and watched while it does.
func serve(ctx context.Context, cfg appview.Config, opt serveOptions) error {
	ln, err := appview.Listen(cfg)
	if err != nil {
		return err
	}
	cfg.Port = ln.Addr().(*net.TCPAddr).Port
	app, err := appview.New(cfg)
	if err != nil {
		ln.Close()
		return err
	}
	if opt.built != nil {
		opt.built(app)
	}
	if opt.folder != nil {
		stop, err := opt.folder.start(ctx, app)
		if err != nil {
			ln.Close()
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			return errors.Join(err, app.Shutdown(sctx))
		}
		defer stop()
	}
	return app.Serve(ctx, ln)
}

func migrateCommand() *command {
	return &command{
		name: "migrate", scope: scopeDatabase,
		summary: "apply pending database migrations and exit",
		about: "Applies the pending database migrations (embedded in the binary,\n" +
			"forward-only, in order) and exits. `serve` does the same at start-up.",
		define: func(*flag.FlagSet) func(context.Context, *invocation) int {
			return func(ctx context.Context, x *invocation) int {
				if err := migrate(ctx, x.cfg); err != nil {
					return x.failed(err)
				}
				return 0
			}
		},
	}
}

func migrate(ctx context.Context, cfg appview.Config) error {
	url := cfg.DatabaseURL
	if url == "" {
		url = appview.DefaultDatabaseURL
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	store, err := appview.OpenStore(ctx, url)
	if err != nil {
		return err
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		return err
	}
	cfg.Logger.Info("migrations applied", "database", store.Dialect())
	return nil
}
