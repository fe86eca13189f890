package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/appfolder"
)

// stdin is where apply reads its confirmation.
var stdin io.Reader = os.Stdin

func applyCommand() *command {
	return &command{
		name: "apply", synopsis: "DIR", nargs: 1, scope: scopeApp,
		summary: "make the instance's lexicons, scripts and indexes those of an app folder",
		about: "Loads the app folder DIR (lexicons/**/*.json, scripts/, app.json; see\n" +
			"docs/apps.md), checks every lexicon and compiles every script, compares it\n" +
			"with the instance of DATABASE_URL and prints the plan: lexicons, scripts\n" +
			"and indexes added (+), changed (~) or removed (-). Then it asks before\n" +
			"applying it (--yes does not ask, --dry-run stops after the plan). A folder\n" +
			"with any problem fails before anything changes. What the instance has and\n" +
			"the folder does not is kept unless --prune is given. Applying the same\n" +
			"folder again prints \"no changes\". It may run beside a serving instance,\n" +
			"which picks the changes up within 5 seconds.\n\n" + remoteHelp,
		define: func(fs *flag.FlagSet) func(context.Context, *invocation) int {
			yes := fs.Bool("yes", false, "apply without asking")
			dryRun := fs.Bool("dry-run", false, "print the plan and change nothing")
			prune := fs.Bool("prune", false, "remove the lexicons, scripts and indexes the folder does not have")
			remoteURL := fs.String("url", "", "apply to the instance at `URL` through its admin API (ADMIN_KEY) instead of DATABASE_URL")
			return func(ctx context.Context, x *invocation) int {
				if *yes && *dryRun {
					return x.usageError("--yes and --dry-run exclude each other")
				}
				if *remoteURL != "" && os.Getenv(adminKeyEnv) == "" {
					return x.usageError("--url needs an admin API key in %s", adminKeyEnv)
				}
				err := withTarget(ctx, x.cfg, *remoteURL, func(t appfolder.Target) error {
					return applyFolder(ctx, t, x.args[0], applyOptions{yes: *yes, dryRun: *dryRun, prune: *prune}, x.stdout)
				})
				if err != nil {
					fmt.Fprintf(x.stderr, "appview apply: %v\n", err)
					return 1
				}
				return 0
			}
		},
	}
}

func exportCommand() *command {
	return &command{
		name: "export", synopsis: "DIR", nargs: 1, scope: scopeApp,
		summary: "write the instance's lexicons, scripts and indexes as an app folder",
		about: "Writes the definition of the instance of DATABASE_URL to the app folder DIR\n" +
			"(created when absent; see docs/apps.md): its lexicons with their settings\n" +
			"and scripts, its trigger-keyed scripts, its declared indexes and the names\n" +
			"of its script variables (never their values). A lexicon the folder already\n" +
			"holds is written to the same file; the folder's other lexicon documents\n" +
			"and scripts are removed, and files outside lexicons/ and scripts/ other than\n" +
			"app.json are left alone. Applying the folder to the same instance then\n" +
			"changes nothing.\n\n" + remoteHelp,
		define: func(fs *flag.FlagSet) func(context.Context, *invocation) int {
			remoteURL := fs.String("url", "", "export the instance at `URL` through its admin API (ADMIN_KEY) instead of DATABASE_URL")
			return func(ctx context.Context, x *invocation) int {
				if *remoteURL != "" && os.Getenv(adminKeyEnv) == "" {
					return x.usageError("--url needs an admin API key in %s", adminKeyEnv)
				}
				err := withTarget(ctx, x.cfg, *remoteURL, func(t appfolder.Target) error {
					def, err := t.Read(ctx)
					if err != nil {
						return err
					}
					if err := appfolder.Write(x.args[0], def); err != nil {
						return err
					}
					indexes := "1 declared index"
					if n := len(def.Indexes); n != 1 {
						indexes = fmt.Sprintf("%d declared indexes", n)
					}
					fmt.Fprintf(x.stdout, "exported %s, %s and %s to %s\n", plural(len(def.Lexicons), "lexicon"),
						plural(len(def.Scripts), "trigger script"), indexes, x.args[0])
					return nil
				})
				if err != nil {
					fmt.Fprintf(x.stderr, "appview export: %v\n", err)
					return 1
				}
				return 0
			}
		},
	}
}

// adminKeyEnv is the environment variable holding the admin API key of
// --url. It has no flag, so that the key never shows in process listings.
const adminKeyEnv = "ADMIN_KEY"

// remoteHelp ends the help of apply and export.
const remoteHelp = "With --url URL it works on a running instance through its admin API\n" +
	"instead, with the admin API key (hv_...) in the environment variable\n" +
	"ADMIN_KEY (or .env). The key needs lexicons:read, lexicons:create,\n" +
	"lexicons:delete, scripts:read, scripts:manage, indexes:read, indexes:manage\n" +
	"and script-variables:read."

// remoteTimeout bounds each admin API call of --url.
const remoteTimeout = time.Minute

// withTarget runs fn with the Target the command works on: the instance
// at remoteURL through its admin API, or, when remoteURL is "", the App
// of cfg (built without starting its background work, then shut down).
func withTarget(ctx context.Context, cfg appview.Config, remoteURL string, fn func(appfolder.Target) error) (err error) {
	if remoteURL != "" {
		return fn(appfolder.Remote(remoteURL, os.Getenv(adminKeyEnv), &http.Client{Timeout: remoteTimeout}))
	}
	app, err := appview.New(cfg)
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		err = errors.Join(err, app.Shutdown(sctx))
	}()
	return fn(appfolder.Local(app))
}

// applyOptions are apply's flags.
type applyOptions struct{ yes, dryRun, prune bool }

// errDeclined is apply's answer when the plan was not confirmed.
var errDeclined = errors.New("not applied")

// applyFolder prints the plan of the folder dir on t and applies it when
// confirmed.
func applyFolder(ctx context.Context, t appfolder.Target, dir string, opt applyOptions, out io.Writer) error {
	_, p, err := appfolder.Prepare(ctx, dir, t, opt.prune)
	if err != nil {
		return err
	}
	p.Print(out)
	if p.Empty() || opt.dryRun {
		return nil
	}
	if !opt.yes {
		fmt.Fprint(out, "Apply these changes? [y/N] ")
		answer, _ := bufio.NewReader(stdin).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			return errDeclined
		}
	}
	warnings, err := appfolder.Apply(ctx, t, p)
	for _, w := range warnings {
		fmt.Fprintf(out, "warning: %s\n", w)
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "applied")
	return nil
}
