// Command appview runs a Lexview instance.
//
//	appview serve     run migrations, then serve HTTP until SIGINT/SIGTERM
//	appview migrate   apply pending migrations and exit
//	appview records import FILE   store records from a JSON-lines file
//	appview admin bootstrap --did DID [--force-new-key]
//	                  make DID the super user and print an admin API key
//	appview version   print the version
//
// Configuration comes from the environment (and a .env file in the working
// directory); see docs/configuration.md.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/lexview/lexview/appview"
)

const usage = `usage: appview <command>

commands:
  serve     run migrations, then serve HTTP until SIGINT or SIGTERM
  migrate   apply pending database migrations and exit
  records import FILE
            store records from a JSON-lines file ("-" for stdin), one
            {"uri", "cid", "record"} object per line, validated against
            their record lexicons like ingested records
  admin bootstrap --did DID [--force-new-key]
            make DID the super user (when no admin user exists yet) and
            print an admin API key holding every permission
  version   print the version
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmd := args[0]
	switch cmd {
	case "version", "--version", "-v":
		fmt.Fprintf(stdout, "lexview %s\n", appview.Version)
		return 0
	case "help", "--help", "-h":
		fmt.Fprint(stdout, usage)
		return 0
	case "serve", "migrate", "admin":
	case "records":
		if len(args) != 3 || args[1] != "import" {
			fmt.Fprint(stderr, "usage: appview records import FILE\n")
			return 2
		}
	default:
		fmt.Fprintf(stderr, "appview: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	if err := loadDotEnv(".env"); err != nil {
		fmt.Fprintf(stderr, "appview: .env: %v\n", err)
		return 1
	}
	log, err := newLogger(os.Getenv)
	if err != nil {
		fmt.Fprintf(stderr, "appview: %v\n", err)
		return 1
	}
	cfg, err := configFromEnv(os.Getenv)
	if err != nil {
		fmt.Fprintf(stderr, "appview: configuration: %v\n", err)
		return 1
	}
	cfg.Logger = log

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch cmd {
	case "admin":
		return adminCommand(ctx, cfg, args[1:], stdout, stderr)
	case "migrate":
		err = migrate(ctx, cfg)
	case "serve":
		err = serve(ctx, cfg)
	case "records":
		err = recordsImport(ctx, cfg, args[2], stdout, stderr)
	}
	if err != nil {
		log.Error("appview "+cmd+" failed", "err", err)
		return 1
	}
	return 0
}

func serve(ctx context.Context, cfg appview.Config) error {
	app, err := appview.New(cfg)
	if err != nil {
		return err
	}
	return app.Run(ctx)
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
