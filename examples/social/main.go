// Command social is a small social app built on Lexview: posts with
// topics and replies, likes and follows, defined as an app folder (app:
// lexicons, scripts and app.json; see docs/apps.md) and served by an
// embedded instance. Its queries are answered from indexes, never by
// scanning a collection:
//
//   - com.example.social.getPost: a post with its like and reply counts
//     and its latest likers (the link index, db.backlinkCount and
//     db.backlinks);
//   - com.example.social.getReplies: a post's replies, newest first (the
//     link index at reply.parent.uri);
//   - com.example.social.getFollowers: an account's followers (the link
//     index at a follow's subject);
//   - com.example.social.listTopic: the posts of a topic (a declared value
//     index on topic, used by db.query);
//   - com.example.social.searchPosts: full-text search of the posts' text
//     (a declared text index, db.search);
//   - and, built in, Constellation's blue.microcosm.links.getBacklinks and
//     getBacklinksCount over the same link index.
//
// Run it, then query it with the client key it prints:
//
//	go run ./examples/social -db /tmp/social.db
//	curl -H 'X-Client-Key: hvc_...' 'http://127.0.0.1:3000/xrpc/com.example.social.searchPosts?q=lexicon'
//
// The records are written through the App's writer at start; a real app
// would index them from the network (Jetstream or a relay) instead. The
// app's tests (app/tests: fixtures and the queries' expected answers) run
// with `go run ./cmd/appview test examples/social/app`, and in this
// example's Go test.
package main

import (
	"context"
	"embed"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/appfolder"
	"github.com/lexview/lexview/storage"
)

//go:embed app
var appFiles embed.FS

func main() {
	db := flag.String("db", "data/social-example.db", "SQLite database file")
	port := flag.Int("port", 3000, "port to listen on (0 picks a free one)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, *db, *port, func(base, key string) {
		fmt.Printf("client key: %s\n", key)
		fmt.Printf("serving on %s\n", base)
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "social:", err)
		os.Exit(1)
	}
}

// run starts the app on dbPath, calls ready with its base URL and an API
// client key once it serves, and serves until ctx ends.
func run(ctx context.Context, dbPath string, port int, ready func(base, key string)) error {
	if port == 0 {
		port = -1 // appview.Config: any free port
	}
	app, err := appview.New(appview.Config{
		DatabaseURL: "sqlite://" + dbPath,
		Port:        port,
		Ingest:      appview.IngestConfig{JetstreamURL: "off"}, // this example indexes only what it writes itself
		Logger:      slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return err
	}
	defer app.Shutdown(context.Background())
	if err := install(ctx, app); err != nil {
		return err
	}
	if err := app.Start(ctx); err != nil {
		return err
	}
	if err := seed(ctx, app); err != nil {
		return err
	}
	building, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := app.Indexes().WaitReady(building, ""); err != nil {
		return err
	}
	client, _, err := app.Clients().Create(ctx, appview.NewClient{
		Name: "social example", ClientIDURL: "https://example.com/client-metadata.json",
		ClientURI: "https://example.com", RedirectURIs: []string{"https://example.com/callback"},
		CreatedBy: "did:plc:example",
	})
	if err != nil {
		return fmt.Errorf("create API client: %w", err)
	}
	ln, err := app.Listen()
	if err != nil {
		return err
	}
	ready("http://"+ln.Addr().String(), client.Key)
	return app.Serve(ctx, ln)
}

// install applies the app folder (app/: lexicons, the queries' scripts
// app/scripts/<nsid>.lua, the indexes declared in app/app.json; see
// docs/apps.md), as `appview apply examples/social/app` would. It is
// idempotent: a restart on the same database changes nothing.
func install(ctx context.Context, app *appview.App) error {
	folder, err := fs.Sub(appFiles, "app")
	if err != nil {
		return err
	}
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

// The seed's accounts and posts.
const (
	alice = "did:plc:alice0000000000000000000"
	bob   = "did:plc:bob000000000000000000000"
	carol = "did:plc:carol0000000000000000000"
	cid   = "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm"
)

// seedPosts are alice's posts, by record key.
var seedPosts = []struct{ rkey, topic, text string }{
	{"3kseedpost001", "lexicons", "Writing a lexicon is the first step of an app on the AT Protocol"},
	{"3kseedpost002", "lexicons", "Lexicons describe records, queries and procedures"},
	{"3kseedpost003", "gardening", "The tomatoes are finally ripe"},
}

// PostURI is the AT URI of one of alice's seeded posts.
func postURI(rkey string) string { return "at://" + alice + "/com.example.social.post/" + rkey }

// seed writes the example's records through the App's writer: alice's
// posts, a reply by bob, likes by bob and carol, and follows of alice.
func seed(ctx context.Context, app *appview.App) error {
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	var changes []storage.Change
	add := func(did, collection, rkey string, record map[string]any) {
		at = at.Add(time.Minute)
		record["$type"] = collection
		record["createdAt"] = at.Format(time.RFC3339)
		value, _ := json.Marshal(record)
		changes = append(changes, storage.Change{Op: storage.OpCreate, DID: did, Collection: collection, RKey: rkey, CID: cid, Record: value})
	}
	ref := func(rkey string) map[string]any { return map[string]any{"uri": postURI(rkey), "cid": cid} }
	for _, p := range seedPosts {
		add(alice, "com.example.social.post", p.rkey, map[string]any{"text": p.text, "topic": p.topic})
	}
	add(bob, "com.example.social.post", "3kseedreply01", map[string]any{
		"text": "Which lexicon did you start with?", "topic": "lexicons",
		"reply": map[string]any{"root": ref("3kseedpost001"), "parent": ref("3kseedpost001")},
	})
	for i, liker := range []string{bob, carol} {
		add(liker, "com.example.social.like", fmt.Sprintf("3kseedlike%03d", i), map[string]any{"subject": ref("3kseedpost001")})
		add(liker, "com.example.social.follow", fmt.Sprintf("3kseedfollow%02d", i), map[string]any{"subject": alice})
	}
	res, err := app.Writer().Write(ctx, "social-example", changes)
	if err != nil {
		return fmt.Errorf("write records: %w", err)
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
