package appview_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
)

const (
	exampleNoteLexicon = `{"lexicon": 1, "id": "com.example.note", "defs": {"main": {"type": "record", "key": "tid",
		"record": {"type": "object", "required": ["text"], "properties": {"text": {"type": "string", "maxLength": 300}}}}}}`
	exampleListLexicon = `{"lexicon": 1, "id": "com.example.listNotes", "defs": {"main": {"type": "query"}}}`
)

// newExampleApp opens an App on a SQLite database in a fresh directory,
// offline (no live stream), logging nothing.
func newExampleApp(dir string) (*appview.App, error) {
	return appview.New(appview.Config{
		DatabaseURL: "sqlite://" + filepath.Join(dir, "appview.db"),
		Ingest:      appview.IngestConfig{JetstreamURL: "off"},
		Logger:      slog.New(slog.DiscardHandler),
	})
}

// Embed Lexview in a program: register a record lexicon and a query over
// it, create an API client, write a record through the batch writer, and
// serve the generated XRPC query.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "lexview-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	app, err := newExampleApp(dir)
	if err != nil {
		panic(err)
	}
	if err := app.Start(ctx); err != nil {
		panic(err)
	}
	defer app.Shutdown(ctx)

	for _, up := range []lexicon.Upload{
		{Document: json.RawMessage(exampleNoteLexicon), Backfill: new(false)},
		{Document: json.RawMessage(exampleListLexicon), TargetCollection: "com.example.note"},
	} {
		if _, err := app.Lexicons().Put(ctx, up); err != nil {
			panic(err)
		}
	}
	client, _, err := app.Clients().Create(ctx, appview.NewClient{
		Name: "notes", ClientIDURL: "https://notes.example/client-metadata.json",
		ClientURI: "https://notes.example", RedirectURIs: []string{"https://notes.example/callback"},
	})
	if err != nil {
		panic(err)
	}

	// Records normally arrive from the network; an embedder can write its
	// own through the same writer, validated against the lexicon.
	res, err := app.Writer().Write(ctx, "example", []storage.Change{{
		Op: storage.OpCreate, DID: "did:plc:example", Collection: "com.example.note", RKey: "3kexample0001",
		CID:    "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm",
		Record: json.RawMessage(`{"$type":"com.example.note","text":"hello"}`),
	}})
	if err != nil {
		panic(err)
	}
	fmt.Println("accepted:", res.Accepted)

	srv := httptest.NewServer(app)
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL+"/xrpc/com.example.listNotes?limit=10", nil)
	req.Header.Set("X-Client-Key", client.Key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, string(body))
	// Output:
	// accepted: 1
	// 200 {"records":[{"uri":"at://did:plc:example/com.example.note/3kexample0001","cid":"bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm","$type":"com.example.note","text":"hello"}]}
}

// newExample runs fn with an App made by newExampleApp, removed afterwards.
func newExample(fn func(ctx context.Context, app *appview.App)) {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "lexview-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	app, err := newExampleApp(dir)
	if err != nil {
		panic(err)
	}
	defer app.Shutdown(ctx)
	fn(ctx, app)
}

// Register lexicons and read what each upload did, as POST /admin/lexicons
// answers it: the revision, the backfill job of a record lexicon, the
// warnings, and the compile errors of attached scripts. Routes exist at
// once.
func ExampleLexicons_Put() {
	newExample(func(ctx context.Context, app *appview.App) {
		// A record lexicon with backfill on gets a network backfill job of
		// its collection (it runs once the App is started).
		res, err := app.Lexicons().Put(ctx, lexicon.Upload{Document: json.RawMessage(exampleNoteLexicon), Backfill: new(true)})
		if err != nil {
			panic(err)
		}
		fmt.Println(res.Lexicon.ID, "revision", res.Lexicon.Revision, "created", res.Created)
		fmt.Println("backfill job:", res.Backfill.Job.Collection, "new", res.Backfill.Created, "warnings", len(res.Warnings))

		// Uploaded again with backfill unset, on an App without live
		// ingestion: a new revision, no job, and a warning saying why.
		res, err = app.Lexicons().Put(ctx, lexicon.Upload{Document: json.RawMessage(exampleNoteLexicon)})
		if err != nil {
			panic(err)
		}
		fmt.Println(res.Lexicon.ID, "revision", res.Lexicon.Revision, "created", res.Created, "job", res.Backfill != nil)
		fmt.Println(strings.SplitN(res.Warnings[0], ":", 2)[0])

		// A script that does not compile is stored all the same, and
		// reported.
		res, err = app.Lexicons().Put(ctx, lexicon.Upload{
			Document: json.RawMessage(exampleListLexicon), TargetCollection: "com.example.note", Script: "return {",
		})
		if err != nil {
			panic(err)
		}
		_, routed := app.Lexicons().Snapshot().Get("com.example.listNotes")
		fmt.Println(res.Lexicon.ID, res.Lexicon.Kind, "routed", routed, "script error", res.ScriptErrors["script"] != "")
	})
	// Output:
	// com.example.note revision 1 created true
	// backfill job: com.example.note new true warnings 1
	// com.example.note revision 2 created false job false
	// no backfill job was started
	// com.example.listNotes query routed true script error true
}

// Classify the errors of the App's operations by their kind, and show
// their message: it is safe to show, worded as the admin API's errors.
func ExampleError() {
	newExample(func(ctx context.Context, app *appview.App) {
		err := app.Lexicons().Delete(ctx, "com.example.missing")
		fmt.Println("not found:", errors.Is(err, appview.ErrNotFound))

		_, err = app.Lexicons().Put(ctx, lexicon.Upload{Document: json.RawMessage(`{"lexicon": 1, "defs": {}}`)})
		var e *appview.Error
		if errors.As(err, &e) {
			fmt.Printf("%s: %s\n", e.Kind, e.Message)
		}
		var parse *lexicon.ParseError
		fmt.Println("invalid:", errors.Is(err, appview.ErrInvalid), "parse error:", errors.As(err, &parse))

		nc := appview.NewClient{Name: "notes", ClientIDURL: "https://notes.example/client-metadata.json",
			ClientURI: "https://notes.example", RedirectURIs: []string{"https://notes.example/callback"}}
		if _, _, err := app.Clients().Create(ctx, nc); err != nil {
			panic(err)
		}
		_, _, err = app.Clients().Create(ctx, nc)
		switch {
		case errors.Is(err, appview.ErrConflict):
			fmt.Println("conflict:", err)
		case err != nil:
			panic(err) // internal: log it, show nothing
		}
	})
	// Output:
	// not found: true
	// invalid: lexicon id is required
	// invalid: true parse error: true
	// conflict: client_id_url already registered
}

// Write records through the App's batch writer: each is checked against
// its record lexicon. In the default validation mode (hide) a record its
// lexicon refuses is stored with its validation error, reported as
// flagged, and not served by default; in the mode reject (the setting
// validation.mode) it would be refused and not stored.
func ExampleWriter() {
	newExample(func(ctx context.Context, app *appview.App) {
		if _, err := app.Lexicons().Put(ctx, lexicon.Upload{Document: json.RawMessage(exampleNoteLexicon), Backfill: new(false)}); err != nil {
			panic(err)
		}
		_, err := app.Writer().Write(ctx, "example", nil)
		fmt.Println("before Start:", errors.Is(err, appview.ErrNotStarted))
		if err := app.Start(ctx); err != nil {
			panic(err)
		}

		w := app.Writer()
		fmt.Println("check:", w.CheckRecord("com.example.note", json.RawMessage(`{"$type":"com.example.note"}`)) != nil)
		note := func(rkey, record string) storage.Change {
			return storage.Change{Op: storage.OpCreate, DID: "did:plc:example", Collection: "com.example.note", RKey: rkey,
				CID: "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm", Record: json.RawMessage(record)}
		}
		res, err := w.Write(ctx, "example", []storage.Change{
			note("3kexample0001", `{"$type":"com.example.note","text":"hello"}`),
			note("3kexample0002", `{"$type":"com.example.note"}`), // no text: flagged
		})
		if err != nil {
			panic(err)
		}
		fmt.Println("accepted:", res.Accepted)
		for _, r := range res.Flagged {
			fmt.Println("flagged:", r.URI)
		}
		fmt.Println("committed:", w.Stats().Committed)
	})
	// Output:
	// before Start: true
	// check: true
	// accepted: 2
	// flagged: at://did:plc:example/com.example.note/3kexample0002
	// committed: 2
}

// Create, edit, list and delete API clients, as /admin/api-clients does.
func ExampleClientManager() {
	newExample(func(ctx context.Context, app *appview.App) {
		clients := app.Clients()
		c, secret, err := clients.Create(ctx, appview.NewClient{
			Name: "notes", ClientIDURL: "https://notes.example/client-metadata.json",
			ClientURI: "https://notes.example", RedirectURIs: []string{"https://notes.example/callback"},
			CreatedBy: "did:plc:operator",
		})
		if err != nil {
			panic(err)
		}
		fmt.Println(strings.HasPrefix(c.Key, "hvc_"), strings.HasPrefix(secret, "hvs_"), c.IsActive)

		// Edit a copy and save it whole, or patch single fields.
		c.Name = "Notes"
		if c, err = clients.Update(ctx, "did:plc:operator", c.ID, appview.FullClientPatch(c)); err != nil {
			panic(err)
		}
		capacity := 10
		if c, err = clients.Update(ctx, "did:plc:operator", c.ID, appview.ClientPatch{
			RateLimitCapacity: appview.ClientPatchField[int]{Set: true, Value: &capacity},
		}); err != nil {
			panic(err)
		}
		fmt.Println(c.Name, *c.RateLimitCapacity)

		all, err := clients.List(ctx, "")
		if err != nil {
			panic(err)
		}
		fmt.Println("clients:", len(all))
		if _, err := clients.Delete(ctx, "did:plc:operator", c.ID); err != nil {
			panic(err)
		}
		_, err = clients.Get(ctx, c.ID)
		fmt.Println("deleted:", errors.Is(err, appview.ErrNotFound))
	})
	// Output:
	// true true true
	// Notes 10
	// clients: 1
	// deleted: true
}

// Identify the API clients of XRPC requests your own way, for example
// behind a gateway of your own that already checked them.
func ExampleClientIdentifierFunc() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "lexview-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	// Trust the keys a gateway of your own checked; refuse the others.
	identify := appview.ClientIdentifierFunc(func(ctx context.Context, key string, r *http.Request) (*appview.Client, error) {
		if key != "gateway-checked" {
			return nil, appview.ErrInvalidClient
		}
		return &appview.Client{ID: "gateway", Key: key, Name: "gateway"}, nil
	})
	app, err := appview.New(appview.Config{
		DatabaseURL: "sqlite://" + filepath.Join(dir, "appview.db"),
		Ingest:      appview.IngestConfig{JetstreamURL: "off"},
		Clients:     appview.ClientConfig{Identifier: identify},
		Logger:      slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	defer app.Shutdown(ctx)
	for _, up := range []lexicon.Upload{
		{Document: json.RawMessage(exampleNoteLexicon), Backfill: new(false)},
		{Document: json.RawMessage(exampleListLexicon), TargetCollection: "com.example.note"},
	} {
		if _, err := app.Lexicons().Put(ctx, up); err != nil {
			panic(err)
		}
	}

	srv := httptest.NewServer(app)
	defer srv.Close()
	for _, key := range []string{"gateway-checked", "someone-else"} {
		req, _ := http.NewRequest("GET", srv.URL+"/xrpc/com.example.listNotes", nil)
		req.Header.Set("X-Client-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		fmt.Println(key, resp.StatusCode)
	}
	// Output:
	// gateway-checked 200
	// someone-else 401
}

// Configure an App: the common fields at the top, the others in their
// groups. What is left unset takes its default, and App.Config shows the
// configuration in effect.
func ExampleConfig() {
	dir, err := os.MkdirTemp("", "lexview-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	app, err := appview.New(appview.Config{
		DatabaseURL: "sqlite://" + filepath.Join(dir, "appview.db"),
		Logger:      slog.New(slog.DiscardHandler),
		Security: appview.SecurityConfig{
			SessionSecret: "an-example-secret-of-32-bytes-or-more",
			AdminClaim:    appview.ClaimByCommand, // only `appview admin bootstrap` makes the super user
		},
		Ingest:  appview.IngestConfig{JetstreamURL: "off"},
		Clients: appview.ClientConfig{DefaultRateLimitCapacity: 10},
		Scripts: appview.ScriptConfig{Retry: appview.RetryPolicy{Attempts: 5}},
	})
	if err != nil {
		panic(err)
	}
	defer app.Shutdown(context.Background())

	cfg := app.Config()
	fmt.Println("rate limit:", cfg.Clients.DefaultRateLimitCapacity, "tokens,", cfg.Clients.DefaultRateLimitRefillRate, "per second")
	fmt.Println("relay:", cfg.Ingest.RelayURL)
	fmt.Println("PLC:", cfg.Network.PLCURL)
	fmt.Println("claim:", cfg.Security.AdminClaim, "token:", app.ClaimToken() != "")
	// Output:
	// rate limit: 10 tokens, 2 per second
	// relay: https://bsky.network
	// PLC: https://plc.directory
	// claim: command token: false
}

// Declare a value index on a record field: the App keeps it current as
// records are written, builds it in the background for the records stored
// before, and db.query and db.count use it once it is ready.
func ExampleIndexes() {
	newExample(func(ctx context.Context, app *appview.App) {
		if err := app.Start(ctx); err != nil { // the build runs in the background
			panic(err)
		}
		if _, err := app.Lexicons().Put(ctx, lexicon.Upload{Document: json.RawMessage(exampleNoteLexicon), Backfill: new(false)}); err != nil {
			panic(err)
		}
		var notes []storage.Change
		for i, text := range []string{"hello", "world"} {
			notes = append(notes, storage.Change{Op: storage.OpCreate, DID: "did:plc:example", Collection: "com.example.note",
				RKey: fmt.Sprintf("3kexample000%d", i), CID: "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm",
				Record: json.RawMessage(fmt.Sprintf(`{"$type":"com.example.note","text":%q}`, text))})
		}
		if _, err := app.Writer().Write(ctx, "example", notes); err != nil {
			panic(err)
		}

		idx, created, err := app.Indexes().Declare(ctx, storage.FieldIndexSpec{Collection: "com.example.note", Path: "text"})
		if err != nil {
			panic(err)
		}
		fmt.Println(idx.Collection, idx.Path, idx.Kind, idx.State, "created", created)
		for idx.State == storage.FieldIndexBuilding {
			time.Sleep(10 * time.Millisecond)
			if idx, err = app.Indexes().Get(ctx, idx.ID); err != nil {
				panic(err)
			}
		}
		fmt.Println(idx.State, "after", idx.Done, "records")

		// Declaring it again changes nothing; a bad path is refused.
		_, created, _ = app.Indexes().Declare(ctx, storage.FieldIndexSpec{Collection: "com.example.note", Path: "text"})
		fmt.Println("created", created)
		_, _, err = app.Indexes().Declare(ctx, storage.FieldIndexSpec{Collection: "com.example.note", Path: "text."})
		fmt.Println(errors.Is(err, appview.ErrInvalid), err)

		if err := app.Indexes().Drop(ctx, idx.ID); err != nil {
			panic(err)
		}
		list, _ := app.Indexes().List(ctx, "com.example.note")
		fmt.Println("indexes after the drop:", len(list))
	})
	// Output:
	// com.example.note text value building created true
	// ready after 2 records
	// created false
	// true path "text." is not a field path: ends with a dot
	// indexes after the drop: 0
}
