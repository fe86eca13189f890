// Command embed shows Lexview embedded in a Go program: it registers a
// record lexicon and a query lexicon, writes a few records through the
// App's writer (validated against their lexicon, as ingested records are),
// and serves the generated XRPC API until interrupted.
//
//	go run ./examples/embed -db /tmp/notes.db
//	curl -H 'X-Client-Key: hvc_...' 'http://127.0.0.1:3000/xrpc/com.example.listNotes?limit=2'
//
// It prints the API client key to use on its first line of output.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
)

const noteLexicon = `{
  "lexicon": 1,
  "id": "com.example.note",
  "defs": {"main": {"type": "record", "key": "tid", "record": {
    "type": "object", "required": ["text", "createdAt"],
    "properties": {"text": {"type": "string", "maxLength": 1000}, "createdAt": {"type": "string", "format": "datetime"}}
  }}}
}`

const listNotesLexicon = `{
  "lexicon": 1,
  "id": "com.example.listNotes",
  "defs": {"main": {"type": "query", "parameters": {"type": "params", "properties": {
    "limit": {"type": "integer", "minimum": 1, "maximum": 100},
    "cursor": {"type": "string"}, "did": {"type": "string", "format": "did"}
  }}}}
}`

func main() {
	db := flag.String("db", "data/embed-example.db", "SQLite database file")
	port := flag.Int("port", 3000, "port to listen on (0 picks a free one)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *db, *port); err != nil {
		fmt.Fprintln(os.Stderr, "embed:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, dbPath string, port int) error {
	if port == 0 {
		port = -1 // appview.Config: any free port
	}
	// doc-snippet: new
	app, err := appview.New(appview.Config{
		DatabaseURL: "sqlite://" + dbPath,
		Port:        port,
		Ingest:      appview.IngestConfig{JetstreamURL: "off"}, // this example indexes only what it stores itself
		Logger:      slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return err
	}
	// Shutdown stops what runs and closes the database; Serve calls it too
	// when ctx ends, and a second call does nothing.
	defer app.Shutdown(context.Background())
	// doc-snippet: end

	// Register the lexicons: routes appear at once.
	for _, up := range []lexicon.Upload{
		{Document: json.RawMessage(noteLexicon), Backfill: new(false)}, // the demo imports its records: no network backfill
		{Document: json.RawMessage(listNotesLexicon), TargetCollection: "com.example.note"},
	} {
		if _, err := app.Lexicons().Put(ctx, up); err != nil {
			return fmt.Errorf("register lexicon: %w", err)
		}
	}

	// Start the background work: from here on the writer takes records.
	// Serve (below) sees that the App runs and does not start it again.
	if err := app.Start(ctx); err != nil {
		return err
	}

	// Write records through the App's writer: each is validated against
	// its record lexicon and committed in a batch; Write returns once they
	// are.
	var changes []storage.Change
	for i, text := range []string{"first note", "second note", "third note"} {
		value, _ := json.Marshal(map[string]any{
			"$type": "com.example.note", "text": text, "createdAt": time.Now().UTC().Format(time.RFC3339),
		})
		changes = append(changes, storage.Change{
			Op: storage.OpCreate, DID: "did:plc:example", Collection: "com.example.note",
			RKey: fmt.Sprintf("3kexample%04d", i), CID: "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm", Record: value,
		})
	}
	res, err := app.Writer().Write(ctx, "embed-example", changes)
	if err != nil {
		return fmt.Errorf("write records: %w", err)
	}
	if len(res.Rejected) > 0 {
		return fmt.Errorf("record %s refused: %w", res.Rejected[0].URI, res.Rejected[0].Err)
	}

	// Every XRPC caller is an API client: create one for this demo.
	client, _, err := app.Clients().Create(ctx, appview.NewClient{
		Name: "embed example", ClientIDURL: "https://example.com/client-metadata.json",
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
	fmt.Printf("client key: %s\n", client.Key)
	fmt.Printf("serving on http://%s\n", ln.Addr())
	return app.Serve(ctx, ln)
}
