package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/appfolder"
	"github.com/lexview/lexview/appview/appfolder/watch"
)

// devDatabaseURL is dev's database when none is configured: in the
// working directory, kept between runs (the admin, the records).
const devDatabaseURL = "sqlite://.lexview/dev.db"

func devCommand() *command {
	return &command{
		name: "dev", synopsis: "DIR", nargs: 1, scope: scopeServe,
		defaults: map[string]string{"DATABASE_URL": devDatabaseURL},
		summary:  "serve an app folder and apply each change of it as it is saved",
		about: "Serves the app folder DIR (docs/apps.md) for its developer: `serve --app\n" +
			"DIR --prune` with a database of its own. It applies the folder at start,\n" +
			"as `appview apply --yes --prune` does, then watches lexicons/, scripts/ and\n" +
			"app.json: a saved change is live within a second, and what the folder no\n" +
			"longer has is removed from the instance (--prune=false keeps it). A\n" +
			"lexicon or script with a problem changes nothing: the problem is printed\n" +
			"here, by file and line, and shown on the dashboard's overview, the\n" +
			"instance keeps serving what it had, and the next save that fixes it\n" +
			"clears it.\n\n" +
			"Unless DATABASE_URL (or --database-url) says otherwise, the database is\n" +
			devDatabaseURL + " in the working directory, kept between runs. It\n" +
			"prints the URLs to use; while the instance has no admin, its log says\n" +
			"how to claim it, as serve's does.",
		define: func(fs *flag.FlagSet) func(context.Context, *invocation) int {
			prune := fs.Bool("prune", true, "remove the lexicons, scripts and indexes the folder no longer has (--prune=false keeps them)")
			return func(ctx context.Context, x *invocation) int {
				dir := x.args[0]
				opt := serveOptions{
					folder: &folderOptions{dir: dir, prune: *prune, report: printUpdate(x.stdout, dir)},
					built:  func(app *appview.App) { devBanner(x.stdout, app, dir, *prune) },
				}
				if err := serve(ctx, x.cfg, opt); err != nil {
					return x.failed(err)
				}
				return 0
			}
		},
	}
}

// devBanner says where the dev instance is and what it does.
func devBanner(w io.Writer, app *appview.App, dir string, prune bool) {
	cfg := app.Config()
	base := strings.TrimRight(cfg.PublicURL, "/")
	removed := "what the folder no longer has is removed"
	if !prune {
		removed = "what the folder no longer has is kept"
	}
	fmt.Fprintf(w, "Lexview dev: the app folder %s on %s\n"+
		"  XRPC       %s/xrpc/<nsid>\n"+
		"  dashboard  %s/dashboard\n"+
		"Watching %s: saved changes to lexicons/, scripts/ and app.json are applied at once;\n"+
		"%s. Ctrl-C stops.\n", dir, cfg.DatabaseURL, base, base, dir, removed)
}

// folderOptions are the app folder serve applies and watches.
type folderOptions struct {
	dir    string
	prune  bool
	report func(watch.Update) // tells of an update besides the App's status
}

// start applies the folder to app and watches it until ctx is done or
// stop is called (stop waits for the watching to end). Each update is
// the App's app-folder status (GET /admin/stats, the dashboard) and is
// reported. A folder with a problem is not an error: it is reported and
// watched; a folder that cannot be watched (it does not exist) is.
func (f *folderOptions) start(ctx context.Context, app *appview.App) (stop func(), err error) {
	w, err := watch.New(watch.Options{Dir: f.dir, Target: appfolder.Local(app), Prune: f.prune,
		Report: func(u watch.Update) {
			app.SetAppFolderStatus(u.Status)
			f.report(u)
		}})
	if err != nil {
		return nil, fmt.Errorf("app folder: %w", err)
	}
	w.Apply(ctx)
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = w.Run(ctx) })
	return func() { cancel(); wg.Wait() }, nil
}

// printUpdate reports the updates of the folder dir to a developer's
// terminal: the first; then each that changed the instance, failed, or
// applied once more after a failure.
func printUpdate(w io.Writer, dir string) func(watch.Update) {
	first := true
	return func(u watch.Update) {
		if !first && u.Err == nil && !u.Fixed && u.Plan.Empty() {
			return
		}
		first = false
		// One write per update, so that a reader never sees half of one.
		var b strings.Builder
		at := u.At.Format(time.TimeOnly)
		switch {
		case u.Err != nil && u.Plan != nil:
			fmt.Fprintf(&b, "%s %s: applied in part, then failed:\n", at, dir)
		case u.Err != nil:
			fmt.Fprintf(&b, "%s %s: not applied; the instance keeps what it had:\n", at, dir)
		case u.Plan.Empty():
			fmt.Fprintf(&b, "%s %s: applied, no changes\n", at, dir)
		default:
			fmt.Fprintf(&b, "%s %s: applied\n", at, dir)
		}
		if u.Err != nil {
			for _, p := range u.Status.Problems {
				fmt.Fprintf(&b, "  %s\n", problemLine(p))
			}
		} else {
			for _, line := range u.Plan.Steps() {
				fmt.Fprintf(&b, "  %s\n", line)
			}
			for _, warning := range u.Warnings {
				fmt.Fprintf(&b, "  warning: %s\n", warning)
			}
			for _, v := range u.Plan.UnsetVariables {
				fmt.Fprintf(&b, "  note: script variable %s is not set (POST /admin/script-variables sets it)\n", v)
			}
		}
		_, _ = io.WriteString(w, b.String())
	}
}

// problemLine is a problem as a compiler writes it: FILE:LINE: message.
func problemLine(p appview.AppFolderProblem) string {
	switch {
	case p.File == "":
		return p.Message
	case p.Line > 0:
		return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Message)
	}
	return p.File + ": " + p.Message
}

// logUpdate logs the updates of the folder dir (serve --app): the
// first; then each that changed the instance, failed, or applied once
// more after a failure.
func logUpdate(log *slog.Logger, dir string) func(watch.Update) {
	first := true
	return func(u watch.Update) {
		defer func() { first = false }()
		switch {
		case u.Err != nil:
			problems := make([]string, len(u.Status.Problems))
			for i, p := range u.Status.Problems {
				problems[i] = problemLine(p)
			}
			log.Error("app folder not applied; the instance keeps what it had", "dir", dir, "problems", problems,
				"applied_in_part", u.Plan != nil)
		case first || !u.Plan.Empty() || u.Fixed:
			log.Info("app folder applied", "dir", dir, "changes", u.Plan.Steps(), "warnings", u.Warnings)
		}
	}
}
