package main

import (
	"context"
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
			"gracefully within 30 seconds.",
		define: func(*flag.FlagSet) func(context.Context, *invocation) int {
			return func(ctx context.Context, x *invocation) int {
				if err := serve(ctx, x.cfg); err != nil {
					return x.failed(err)
				}
				return 0
			}
		},
	}
}

// serve binds the listener first and only then builds the App, so that
// the default public URL (PUBLIC_URL unset), against which DPoP proofs
// are checked, names the port actually bound when PORT=0 picks one.
func serve(ctx context.Context, cfg appview.Config) error {
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
