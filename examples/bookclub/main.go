// Command bookclub is a complete small app built on Lexview with its app
// tools only (docs/apps.md): a book club's shelf of books, with likes and
// reviews.
//
//   - app/ is the app folder: the lexicons (three records, three queries
//     and a procedure), their Lua scripts, an index hook and a
//     record.create script, the field indexes in app.json, and app/tests,
//     the fixtures and tests `appview test` runs;
//   - web/ is a static page (the shelf, a book, search, like counts) that
//     calls the API through web/src/client.ts, the TypeScript client
//     `appview codegen --lang ts` generated from the lexicons, compiled
//     with web/src/bookclub.ts to web/js by tsc;
//   - this program serves both from an embedded instance: it applies the
//     app folder at start (as `appview apply` does), indexes the fixtures'
//     records as the club's shelf, and serves the page at / beside the
//     XRPC API (/xrpc/...) and the dashboard (/dashboard/).
//
// Run it and open the address it prints:
//
//	go run ./examples/bookclub -db /tmp/bookclub.db
//
// With -app examples/bookclub/app it applies the folder on disk instead of
// its embedded copy, and again at every save, as `appview dev` does; with
// -web examples/bookclub/web it serves the page from disk. README.md has
// the rest.
package main

import (
	"bufio"
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/appfolder"
	"github.com/lexview/lexview/appview/appfolder/watch"
	"github.com/lexview/lexview/storage"
)

// The app folder, and the page as it is served: web/src is compiled to
// web/js, which is what the browser loads.
//
//go:embed app
var appFiles embed.FS

//go:embed web/index.html web/style.css web/favicon.svg web/js
var webFiles embed.FS

// fixtures are the records the club's shelf starts with: the ones the
// app's tests start from.
const fixtures = "tests/fixtures/bookclub.jsonl"

// options configure run.
type options struct {
	DB   string // SQLite database file
	Port int    // 0 picks a free one
	// AppDir, when set, is an app folder on disk applied instead of the
	// embedded one, and again at every change.
	AppDir string
	// WebDir, when set, is the page's folder on disk, served instead of
	// the embedded one.
	WebDir string
}

func main() {
	var opt options
	flag.StringVar(&opt.DB, "db", "data/bookclub-example.db", "SQLite database file")
	flag.IntVar(&opt.Port, "port", 3000, "port to listen on (0 picks a free one)")
	flag.StringVar(&opt.AppDir, "app", "", "apply this app folder (examples/bookclub/app) instead of the embedded one, and again at every save")
	flag.StringVar(&opt.WebDir, "web", "", "serve the page from this folder (examples/bookclub/web) instead of the embedded one")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, opt, func(base, _ string) {
		fmt.Printf("the book club is on %s/ (its API on %s/xrpc/, the dashboard on %s/dashboard/)\n", base, base, base)
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "bookclub:", err)
		os.Exit(1)
	}
}

// run starts the app, calls ready with its base URL and the page's API
// client key once it serves, and serves until ctx ends.
func run(ctx context.Context, opt options, ready func(base, key string)) error {
	cfg := appview.Config{
		DatabaseURL: "sqlite://" + opt.DB,
		Port:        opt.Port,
		Ingest:      appview.IngestConfig{JetstreamURL: "off"}, // the shelf is the fixtures' records
		Logger:      slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	if cfg.Port == 0 {
		cfg.Port = -1 // appview.Config: any free port
	}
	// Listen first, so that the instance's public URL names the port.
	ln, err := appview.Listen(cfg)
	if err != nil {
		return err
	}
	defer ln.Close()
	cfg.Port = ln.Addr().(*net.TCPAddr).Port
	app, err := appview.New(cfg)
	if err != nil {
		return err
	}
	defer app.Shutdown(context.Background())

	folder, err := fs.Sub(appFiles, "app")
	if err != nil {
		return err
	}
	if opt.AppDir == "" {
		err = install(ctx, app, folder)
	} else {
		var stop func()
		folder = os.DirFS(opt.AppDir)
		stop, err = watchFolder(ctx, app, opt.AppDir)
		if stop != nil {
			defer stop()
		}
	}
	if err != nil {
		return err
	}
	if err := app.Start(ctx); err != nil {
		return err
	}
	if err := seed(ctx, app, folder); err != nil {
		return err
	}
	building, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := app.Indexes().WaitReady(building, ""); err != nil {
		return err
	}
	base := "http://" + ln.Addr().String()
	client, _, err := app.Clients().Create(ctx, appview.NewClient{
		Name: "book club page", ClientIDURL: base + "/client-metadata.json",
		ClientURI: base, RedirectURIs: []string{base + "/"}, CreatedBy: "did:plc:bookclub",
	})
	if err != nil {
		return fmt.Errorf("create the page's API client: %w", err)
	}
	web, err := fs.Sub(webFiles, "web")
	if err != nil {
		return err
	}
	if opt.WebDir != "" {
		web = os.DirFS(opt.WebDir)
	}
	srv := &http.Server{Handler: handler(app, web, client.Key), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	ready(base, client.Key)
	select {
	case err = <-errc:
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		err = srv.Shutdown(sctx)
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return errors.Join(err, app.Shutdown(context.Background()))
}

// pagePolicy keeps the page to its own origin: its scripts, its styles
// and its calls.
const pagePolicy = "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// handler serves the page at / and its files under /web/ (web/config.json
// gives it its API client key), and everything else, the XRPC API
// included, from the App.
func handler(app *appview.App, web fs.FS, clientKey string) http.Handler {
	config, _ := json.Marshal(map[string]string{"clientKey": clientKey})
	files := http.FileServerFS(web)
	page := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Security-Policy", pagePolicy)
			w.Header().Set("X-Content-Type-Options", "nosniff")
			h.ServeHTTP(w, r)
		})
	}
	mux := http.NewServeMux()
	mux.Handle("GET /{$}", page(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, web, "index.html")
	})))
	mux.Handle("GET /web/", page(http.StripPrefix("/web", files)))
	mux.HandleFunc("GET /web/config.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.Write(config)
	})
	mux.Handle("/", app)
	return mux
}

// install applies the embedded app folder, as `appview apply
// examples/bookclub/app` would. It is idempotent: a restart on the same
// database changes nothing.
func install(ctx context.Context, app *appview.App, folder fs.FS) error {
	def, err := appfolder.LoadFS(folder)
	if err != nil {
		return err
	}
	target := appfolder.Local(app)
	plan, err := appfolder.Compare(ctx, target, def, false)
	if err != nil {
		return err
	}
	_, err = appfolder.Apply(ctx, target, plan)
	return err
}

// watchFolder applies the app folder dir, and again at each change of it
// until ctx ends or stop is called, as `appview dev` does (without
// pruning). A folder that does not apply at start is an error; later, its
// problems are printed and the instance keeps what it had.
func watchFolder(ctx context.Context, app *appview.App, dir string) (stop func(), err error) {
	w, err := watch.New(watch.Options{Dir: dir, Target: appfolder.Local(app), Report: func(u watch.Update) {
		app.SetAppFolderStatus(u.Status) // the dashboard's overview shows it
		switch {
		case u.Err != nil:
			fmt.Fprintf(os.Stderr, "%s: not applied; the instance keeps what it had:\n", dir)
			for _, p := range appfolder.Problems(u.Err) {
				fmt.Fprintf(os.Stderr, "  %s\n", p.Error())
			}
		case !u.Plan.Empty():
			fmt.Fprintf(os.Stderr, "%s: applied\n  %s\n", dir, strings.Join(u.Plan.Steps(), "\n  "))
		}
	}})
	if err != nil {
		return nil, err
	}
	if up := w.Apply(ctx); up.Err != nil {
		w.Close()
		return nil, up.Err
	}
	ctx, cancel := context.WithCancel(ctx)
	var running sync.WaitGroup
	running.Go(func() { _ = w.Run(ctx) })
	return func() { cancel(); running.Wait() }, nil
}

// seed indexes the fixtures' records through the App's writer, as
// records from the network are: checked against their lexicon, run
// through the index hook and the record.create script, their links and
// field indexes written. A real app would follow the network instead
// (Jetstream or a relay).
func seed(ctx context.Context, app *appview.App, folder fs.FS) error {
	raw, err := fs.ReadFile(folder, fixtures)
	if err != nil {
		return err
	}
	var changes []storage.Change
	lines := bufio.NewScanner(bytes.NewReader(raw))
	for n := 1; lines.Scan(); n++ {
		line := strings.TrimSpace(lines.Text())
		if line == "" || strings.HasPrefix(line, "//") {
			continue
		}
		var fx struct {
			URI    string         `json:"uri"`
			Record map[string]any `json:"record"`
		}
		if err := json.Unmarshal([]byte(line), &fx); err != nil {
			return fmt.Errorf("%s:%d: %w", fixtures, n, err)
		}
		did, rest, _ := strings.Cut(strings.TrimPrefix(fx.URI, "at://"), "/")
		collection, rkey, _ := strings.Cut(rest, "/")
		fx.Record["$type"] = collection
		value, err := json.Marshal(fx.Record)
		if err != nil {
			return err
		}
		changes = append(changes, storage.Change{Op: storage.OpCreate, DID: did, Collection: collection, RKey: rkey,
			CID: "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm", Record: value})
	}
	res, err := app.Writer().Write(ctx, "bookclub-example", changes)
	if err != nil {
		return fmt.Errorf("write the shelf's records: %w", err)
	}
	if len(res.Rejected) > 0 {
		var why []string
		for _, r := range res.Rejected {
			why = append(why, r.URI+": "+r.Err.Error())
		}
		return fmt.Errorf("records refused: %s", strings.Join(why, "; "))
	}
	return nil
}
