package appview_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

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
		DatabaseURL:  "sqlite://" + filepath.Join(dir, "appview.db"),
		JetstreamURL: "off",
		Logger:       slog.New(slog.DiscardHandler),
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
		if _, _, err := app.Lexicons().Put(ctx, up); err != nil {
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

// Register a lexicon: its routes exist at once, and the upload is audited
// as through POST /admin/lexicons.
func ExampleLexicons_Put() {
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

	l, created, err := app.Lexicons().Put(ctx, lexicon.Upload{
		Document: json.RawMessage(exampleListLexicon), TargetCollection: "com.example.note",
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(l.ID, l.Kind, "revision", l.Revision, "created", created)

	_, ok := app.Lexicons().Snapshot().Get("com.example.listNotes")
	fmt.Println("routed:", ok)

	_, _, err = app.Lexicons().Put(ctx, lexicon.Upload{Document: json.RawMessage(`{"lexicon": 1, "defs": {}}`)})
	fmt.Println("invalid document refused:", err != nil)
	// Output:
	// com.example.listNotes query revision 1 created true
	// routed: true
	// invalid document refused: true
}
