package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

const testCID = "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm"

const testTokenKey = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="

const postLexicon = `{"lexicon":1,"id":"app.test.post","defs":{"main":{"type":"record","key":"any","record":{"type":"object","required":["n"],"properties":{"n":{"type":"integer"}}}}}}`

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// writingApp returns an App on store holding app.test.post, its writer
// started.
func writingApp(t *testing.T, store storage.Store) *appview.App {
	t.Helper()
	app, err := appview.New(appview.Config{
		Store:    store,
		Logger:   quiet,
		Ingest:   appview.IngestConfig{JetstreamURL: "off"},
		Security: appview.SecurityConfig{TokenEncryptionKey: testTokenKey},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app.Shutdown(context.Background()) })
	if _, err := app.Lexicons().Put(context.Background(), lexicon.Upload{Document: json.RawMessage(postLexicon)}); err != nil {
		t.Fatal(err)
	}
	if err := app.StartWriting(context.Background()); err != nil {
		t.Fatal(err)
	}
	return app
}

func TestImportRecords(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		store := open(t)
		app := writingApp(t, store)
		var b strings.Builder
		for i := range 2500 {
			fmt.Fprintf(&b, `{"uri":"at://did:plc:imp/app.test.post/k%04d","cid":%q,"record":{"$type":"app.test.post","n":%d}}`+"\n", i, testCID, i)
		}
		var report strings.Builder
		n, err := importRecords(context.Background(), app.Writer(), strings.NewReader(b.String()), &report)
		if err != nil || n != 2500 || report.Len() != 0 {
			t.Fatalf("import: %d %v %q", n, err, report.String())
		}
		if c, _ := store.CountRecords(context.Background(), "app.test.post"); c != 2500 {
			t.Fatalf("stored %d", c)
		}
		for _, bad := range []string{
			`not json`,
			`{"uri":"at://did:plc:x/app.test.post","cid":"` + testCID + `","record":{}}`,
			`{"uri":"at://alice.test/app.test.post/k","cid":"` + testCID + `","record":{}}`,
			`{"uri":"at://did:plc:x/app.test.post/k","cid":"nope","record":{}}`,
			`{"uri":"at://did:plc:x/app.test.post/k","cid":"` + testCID + `","record":[1]}`,
		} {
			if _, err := importRecords(context.Background(), app.Writer(), strings.NewReader(bad), io.Discard); err == nil || !strings.Contains(err.Error(), "line 1") {
				t.Errorf("%s: %v", bad, err)
			}
		}
	})
}

// TestImportValidates: records go through the writer, so a record that
// does not match its lexicon, or has none, is refused and reported, and
// the valid ones are imported.
func TestImportValidates(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		store := open(t)
		app := writingApp(t, store)
		in := strings.Join([]string{
			`{"uri":"at://did:plc:v/app.test.post/good1","cid":"` + testCID + `","record":{"$type":"app.test.post","n":1}}`,
			`{"uri":"at://did:plc:v/app.test.post/bad","cid":"` + testCID + `","record":{"$type":"app.test.post","n":"one"}}`,
			`{"uri":"at://did:plc:v/app.test.unknown/x","cid":"` + testCID + `","record":{"$type":"app.test.unknown"}}`,
			`{"uri":"at://did:plc:v/app.test.post/good2","cid":"` + testCID + `","record":{"$type":"app.test.post","n":2}}`,
		}, "\n")
		var report strings.Builder
		n, err := importRecords(context.Background(), app.Writer(), strings.NewReader(in), &report)
		if n != 2 || err == nil || !strings.Contains(err.Error(), "2 records were rejected") {
			t.Fatalf("import: %d %v", n, err)
		}
		for _, uri := range []string{"at://did:plc:v/app.test.post/bad", "at://did:plc:v/app.test.unknown/x"} {
			if !strings.Contains(report.String(), "rejected "+uri+": ") {
				t.Errorf("report lacks %s:\n%s", uri, report.String())
			}
			if _, err := store.GetRecord(context.Background(), uri); !errors.Is(err, storage.ErrNotFound) {
				t.Errorf("%s was stored: %v", uri, err)
			}
		}
		for _, uri := range []string{"at://did:plc:v/app.test.post/good1", "at://did:plc:v/app.test.post/good2"} {
			if _, err := store.GetRecord(context.Background(), uri); err != nil {
				t.Errorf("%s: %v", uri, err)
			}
		}
	})
}

// TestRecordsImportCommand runs the subcommand's function on a database
// of its own: it opens the App, starts only its writer, imports, reports
// and shuts down, closing the database.
func TestRecordsImportCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dbURL := "sqlite://" + filepath.Join(dir, "appview.db")
	taken, err := net.Listen("tcp", "127.0.0.1:0") // the serving instance's metrics address
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	// Neither ingestion nor the metrics listener may start: the latter
	// would fail on its taken address.
	cfg := appview.Config{
		DatabaseURL: dbURL,
		Logger:      quiet,
		Security:    appview.SecurityConfig{TokenEncryptionKey: testTokenKey},
		Ingest:      appview.IngestConfig{JetstreamURL: "ws://127.0.0.1:1/subscribe"},
		Metrics:     appview.MetricsConfig{Addr: taken.Addr().String()},
	}
	setup, err := appview.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := setup.Lexicons().Put(context.Background(), lexicon.Upload{Document: json.RawMessage(postLexicon)}); err != nil {
		t.Fatal(err)
	}
	if err := setup.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "records.jsonl")
	lines := `{"uri":"at://did:plc:c/app.test.post/a","cid":"` + testCID + `","record":{"$type":"app.test.post","n":1}}` + "\n" +
		`{"uri":"at://did:plc:c/app.test.post/b","cid":"` + testCID + `","record":{"$type":"app.test.post","n":true}}` + "\n"
	if err := os.WriteFile(file, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = recordsImport(ctx, cfg, file, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "1 records were rejected") {
		t.Fatalf("recordsImport = %v", err)
	}
	if stdout.String() != "imported 1 records\n" || !strings.HasPrefix(stderr.String(), "rejected at://did:plc:c/app.test.post/b: ") {
		t.Fatalf("stdout %q, stderr %q", stdout.String(), stderr.String())
	}
	store, err := appview.OpenStore(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if n, err := store.CountRecords(ctx, "app.test.post"); err != nil || n != 1 {
		t.Fatalf("stored %d, %v", n, err)
	}
}
