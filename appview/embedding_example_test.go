package appview_test

// The examples of docs/embedding.md: each snippet of the page is the
// region of this file (or of another Go file of the module) between
// "// doc-snippet: NAME" and "// doc-snippet: end", and
// TestEmbeddingDocSnippets checks that the page shows exactly that code.
// So every snippet compiles, and most run here with their output checked.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
)

// productionConfig is the configuration of a production instance.
func productionConfig() appview.Config {
	// doc-snippet: config
	cfg := appview.Config{
		DatabaseURL: "postgres://lexview@db/lexview",
		PublicURL:   "https://appview.example.com",
		Security: appview.SecurityConfig{
			SessionSecret:      os.Getenv("SESSION_SECRET"),
			TokenEncryptionKey: os.Getenv("TOKEN_ENCRYPTION_KEY"),
		},
		Ingest:  appview.IngestConfig{EventStream: appview.EventStreamFirehose},
		Network: appview.NetworkConfig{PLCURL: "https://plc.example.com"},
		Cluster: appview.ClusterConfig{InstanceID: "appview-1"},
		Metrics: appview.MetricsConfig{Registerer: prometheus.DefaultRegisterer},
	}
	// doc-snippet: end
	return cfg
}

// Configure a production instance: PostgreSQL, its secrets from the
// environment, the verified firehose, a PLC directory of its own, a name
// among the instances sharing the database, and metrics registered with
// the program's own registerer.
func Example_productionConfig() {
	cfg := productionConfig()
	fmt.Println(cfg.PublicURL, cfg.Ingest.EventStream, cfg.Cluster.InstanceID)
	// Output: https://appview.example.com firehose appview-1
}

// Register a query lexicon over a record collection, delete it, and read
// the registry's snapshot.
func Example_lexicons() {
	newExample(func(ctx context.Context, app *appview.App) {
		if _, err := app.Lexicons().Put(ctx, lexicon.Upload{Document: json.RawMessage(exampleNoteLexicon), Backfill: new(false)}); err != nil {
			panic(err)
		}
		doc := exampleListLexicon
		// doc-snippet: lexicons
		res, err := app.Lexicons().Put(ctx, lexicon.Upload{
			Document:         json.RawMessage(doc), // the lexicon JSON
			TargetCollection: "com.example.note",   // for queries and procedures
		})
		// res.Lexicon (with its Revision), res.Created, res.Backfill (the job of a
		// record lexicon), res.Warnings, res.ScriptErrors: what POST /admin/lexicons answers
		err = app.Lexicons().Delete(ctx, "com.example.listNotes")
		snap := app.Lexicons().Snapshot() // immutable, lock-free
		// doc-snippet: end
		_, listed := snap.Get("com.example.listNotes")
		fmt.Println(res.Lexicon.ID, res.Created, err, listed)
	})
	// Output: com.example.listNotes true <nil> false
}

// Write a record and delete another through the batch writer.
func Example_records() {
	newExample(func(ctx context.Context, app *appview.App) {
		if _, err := app.Lexicons().Put(ctx, lexicon.Upload{Document: json.RawMessage(exampleNoteLexicon), Backfill: new(false)}); err != nil {
			panic(err)
		}
		if err := app.StartWriting(ctx); err != nil {
			panic(err)
		}
		did, coll, rkey, otherRKey := "did:plc:example", "com.example.note", "3kexample0001", "3kexample0002"
		cid := "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm"
		raw := json.RawMessage(`{"$type":"com.example.note","text":"hello"}`)
		// doc-snippet: records
		res, err := app.Writer().Write(ctx, "my-importer", []storage.Change{
			{Op: storage.OpCreate, DID: did, Collection: coll, RKey: rkey, CID: cid, Record: raw},
			{Op: storage.OpDelete, DID: did, Collection: coll, RKey: otherRKey},
		})
		// err: appview.ErrNotStarted before Start/StartWriting, appview.ErrStopped
		// once Shutdown began; res.Rejected lists the changes validation refused
		// (they are not stored), res.Accepted counts the others, committed when
		// Write returns but for res.Skipped (a record script or RecordHook chose
		// not to store them) and res.ScriptFailed (their record script failed:
		// retried automatically, then dead letters); res.Flagged lists those
		// stored with a validation error (the validation modes hide and flag).
		// doc-snippet: end
		fmt.Println(res.Accepted, len(res.Rejected), res.Skipped, len(res.ScriptFailed), err)
	})
	// Output: 2 0 0 0 <nil>
}

// Declare a field index, list, drop it, read the index suggestions, and
// search a collection (which needs a ready text index).
func Example_fieldIndexes() {
	newExample(func(ctx context.Context, app *appview.App) {
		if _, err := app.Lexicons().Put(ctx, lexicon.Upload{Document: json.RawMessage(exampleNoteLexicon), Backfill: new(false)}); err != nil {
			panic(err)
		}
		// doc-snippet: indexes
		idx, created, err := app.Indexes().Declare(ctx, storage.FieldIndexSpec{
			Collection: "com.example.note", Path: "text", // Kind: storage.FieldIndexValue by default
		})
		// idx.State is storage.FieldIndexBuilding: the leader builds it in the
		// background (the App must be started); Get(ctx, idx.ID) shows Done of
		// Total, and State storage.FieldIndexReady once the planner uses it.
		list, err := app.Indexes().List(ctx, "") // every collection
		err = app.Indexes().Drop(ctx, idx.ID)
		sugg, err := app.Indexes().Suggestions(ctx) // scans that an index would have served
		// doc-snippet: end
		fmt.Println(idx.State, created, len(list), len(sugg), err)

		// doc-snippet: search
		page, err := app.Store().SearchRecords(ctx, storage.SearchQuery{
			Collection: "com.example.note", Query: `"atproto appview" OR lexview -spam`, Limit: 20,
		})
		// page.Hits[i].Record (served columns, as QueryRecords reads them) and
		// .Rank, best first; page.Cursor continues. A malformed query, or a
		// collection without a ready text index, wraps storage.ErrInvalidQuery.
		// doc-snippet: end
		fmt.Println(len(page.Hits), errors.Is(err, storage.ErrInvalidQuery))
	})
	// Output:
	// building true 1 0 <nil>
	// 0 true
}

// uploadLexicon is an HTTP handler of an embedding program that stores
// the lexicon its request carries, telling the caller what went wrong.
func uploadLexicon(app *appview.App) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		doc, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		// doc-snippet: errors
		res, err := app.Lexicons().Put(ctx, lexicon.Upload{Document: doc, Backfill: new(false)})
		var e *appview.Error
		switch {
		case err == nil:
			fmt.Fprintln(w, res.Lexicon.ID, "revision", res.Lexicon.Revision)
		case errors.Is(err, appview.ErrInvalid) && errors.As(err, &e):
			http.Error(w, e.Message, http.StatusBadRequest) // a *lexicon.ParseError (errors.As) has the path
		case errors.As(err, &e):
			http.Error(w, e.Message, http.StatusConflict) // e.Kind: ErrConflict, ErrForbidden, ...
		default:
			log.Print(err) // internal: log it, show nothing
			http.Error(w, "internal error", http.StatusInternalServerError)
		}
		// doc-snippet: end
	}
}

// Tell the errors of the App's operations apart in an HTTP handler of
// the embedding program.
func Example_errors() {
	newExample(func(ctx context.Context, app *appview.App) {
		h := uploadLexicon(app)
		for _, doc := range []string{exampleNoteLexicon, `{"lexicon": 1, "defs": {}}`} {
			w := httptest.NewRecorder()
			h(w, httptest.NewRequest("POST", "/lexicons", strings.NewReader(doc)))
			fmt.Println(w.Code, strings.TrimSpace(w.Body.String()))
		}
	})
	// Output:
	// 200 com.example.note revision 1
	// 400 lexicon id is required
}

// Answer an XRPC method in Go, and keep spam out of the index with a
// record hook.
func Example_goMethodsAndHooks() {
	dir, err := os.MkdirTemp("", "lexview-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	cfg := appview.Config{DatabaseURL: "sqlite://" + filepath.Join(dir, "appview.db"), Ingest: appview.IngestConfig{JetstreamURL: "off"},
		Logger: slog.New(slog.DiscardHandler)}
	timelineHandler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		did, signedIn := appview.CallerDID(r)
		fmt.Fprintf(w, "timeline of %q (%v)", did, signedIn)
	})
	isSpam := func(record json.RawMessage) bool { return strings.Contains(string(record), "buy now") }
	// doc-snippet: hooks
	cfg.XRPCMethods = map[string]http.Handler{
		"com.example.getTimeline": timelineHandler, // needs its query lexicon
	}
	cfg.RecordHooks = []appview.RecordHook{
		func(ctx context.Context, c *storage.Change) bool {
			return !isSpam(c.Record) // false: do not store it
		},
	}
	app, err := appview.New(cfg)
	// doc-snippet: end
	if err != nil {
		panic(err)
	}
	defer app.Shutdown(context.Background())
	fmt.Println(len(app.Config().XRPCMethods), len(app.Config().RecordHooks))
	// Output: 1 1
}

// Create an API client and edit it, as /admin/api-clients does.
func Example_apiClients() {
	newExample(func(ctx context.Context, app *appview.App) {
		// doc-snippet: clients
		c, secret, err := app.Clients().Create(ctx, appview.NewClient{
			Name: "my app", ClientIDURL: "https://app.example/client-metadata.json",
			ClientURI: "https://app.example", RedirectURIs: []string{"https://app.example/cb"},
			CreatedBy: "did:plc:me",
		})
		// c.Key is the hvc_ key; secret (hvs_) is shown only now.

		c.IsActive = false // edit a copy, then save it:
		c, err = app.Clients().Update(ctx, "did:plc:me", c.ID, appview.FullClientPatch(c))
		// doc-snippet: end
		fmt.Println(strings.HasPrefix(c.Key, "hvc_"), strings.HasPrefix(secret, "hvs_"), c.IsActive, err)
	})
	// Output: true true false <nil>
}

// Make the first admin of an embedded instance: the super user, with an
// admin API key to sign in to the dashboard or call the admin API with.
func ExampleApp_Bootstrap() {
	newExample(func(ctx context.Context, app *appview.App) {
		// doc-snippet: bootstrap
		if unclaimed, err := app.Unclaimed(ctx); err == nil && unclaimed {
			key, err := app.Bootstrap(ctx, "did:plc:you", false)
			if err != nil {
				panic(err) // appview.ErrBootstrapRefused: another DID was first
			}
			fmt.Println(strings.HasPrefix(key, "hv_")) // shown only now: keep it safe
		}
		// doc-snippet: end
		_, err := app.Bootstrap(ctx, "did:plc:someoneelse", false)
		fmt.Println(errors.Is(err, appview.ErrBootstrapRefused))
	})
	// Output:
	// true
	// true
}
