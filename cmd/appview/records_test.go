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
	"github.com/lexview/lexview/internal/repocar"
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

// TestImportRecords: records are imported in batches; a malformed line is
// reported with its number and skipped, and the rest imported, unless
// --strict stops there.
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
		tally, err := importRecords(context.Background(), app.Writer(), strings.NewReader(b.String()), false, &report)
		if err != nil || tally != (importTally{Stored: 2500}) || report.Len() != 0 || tally.String() != "imported 2500 records" {
			t.Fatalf("import: %+v %v %q", tally, err, report.String())
		}
		if c, _ := store.CountRecords(context.Background(), "app.test.post"); c != 2500 {
			t.Fatalf("stored %d", c)
		}
		// Without a cid, a record gets the one its value has in a
		// repository.
		noCID := `{"uri":"at://did:plc:imp/app.test.post/nocid","record":{"$type":"app.test.post","n":7}}` + "\n"
		if tally, err := importRecords(context.Background(), app.Writer(), strings.NewReader(noCID), false, io.Discard); err != nil || tally.Stored != 1 {
			t.Fatalf("no cid: %+v %v", tally, err)
		}
		want, _ := repocar.RecordCID([]byte(`{"$type":"app.test.post","n":7}`))
		if r, err := store.GetRecord(context.Background(), "at://did:plc:imp/app.test.post/nocid"); err != nil || r.CID != want || !strings.HasPrefix(want, "bafyrei") {
			t.Fatalf("no cid: stored %+v %v, want the CID %s", r, err, want)
		}
		good := func(rkey string) string {
			return `{"uri":"at://did:plc:x/app.test.post/` + rkey + `","cid":"` + testCID + `","record":{"$type":"app.test.post","n":1}}`
		}
		for _, bad := range []string{
			`not json`,
			`{"uri":"at://did:plc:x/app.test.post","cid":"` + testCID + `","record":{}}`,
			`{"uri":"at://alice.test/app.test.post/k","cid":"` + testCID + `","record":{}}`,
			`{"uri":"at://did:plc:x/app.test.post/k","cid":"nope","record":{}}`,
			`{"uri":"at://did:plc:x/app.test.post/k","cid":"` + testCID + `","record":[1]}`,
			`{"uri":"at://did:plc:x/app.test.post/k","record":{"$type":"app.test.post","n":1.5}}`, // no CID: floats are no atproto data
		} {
			in := good("before") + "\n" + bad + "\n" + good("after") + "\n"
			var report strings.Builder
			tally, err := importRecords(context.Background(), app.Writer(), strings.NewReader(in), false, &report)
			if err == nil || err.Error() != "not imported: 0 records and 1 malformed line (listed above)" ||
				tally != (importTally{Stored: 2, Malformed: 1}) || !strings.HasPrefix(report.String(), "line 2: malformed, skipped: ") {
				t.Errorf("%s: %+v %v %q", bad, tally, err, report.String())
			}
			tally, err = importRecords(context.Background(), app.Writer(), strings.NewReader(in), true, io.Discard)
			if err == nil || !strings.HasPrefix(err.Error(), "line 2: ") || !strings.Contains(err.Error(), "--strict") || tally.Stored != 1 {
				t.Errorf("%s, strict: %+v %v", bad, tally, err)
			}
		}
	})
}

// TestImportValidates: records go through the writer, so a record that
// does not match its lexicon is stored with its validation error and
// reported (the default validation mode, hide), one of a collection
// without a lexicon is refused and reported, and the valid ones are
// imported.
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
		tally, err := importRecords(context.Background(), app.Writer(), strings.NewReader(in), false, &report)
		if tally != (importTally{Stored: 3, Flagged: 1, Refused: 1}) || err == nil || !strings.Contains(err.Error(), "not imported: 1 record") {
			t.Fatalf("import: %+v %v", tally, err)
		}
		if !strings.Contains(tally.String(), "stored with a validation error: 1") {
			t.Errorf("summary %q does not count the flagged record", tally.String())
		}
		for line, want := range map[int]string{
			2: "at://did:plc:v/app.test.post/bad stored with a validation error: ",
			3: "at://did:plc:v/app.test.unknown/x refused: ",
		} {
			if !strings.Contains(report.String(), fmt.Sprintf("line %d: %s", line, want)) {
				t.Errorf("report lacks line %d:\n%s", line, report.String())
			}
		}
		if _, err := store.GetRecord(context.Background(), "at://did:plc:v/app.test.unknown/x"); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("the record without a lexicon was stored: %v", err)
		}
		if rec, err := store.GetRecord(context.Background(), "at://did:plc:v/app.test.post/bad"); err != nil || rec.Invalid == "" {
			t.Errorf("the invalid record: %+v, %v; want it stored with its error", rec, err)
		}
		for _, uri := range []string{"at://did:plc:v/app.test.post/good1", "at://did:plc:v/app.test.post/good2"} {
			if rec, err := store.GetRecord(context.Background(), uri); err != nil || rec.Invalid != "" {
				t.Errorf("%s: %+v, %v", uri, rec, err)
			}
		}
	})
}

// TestRecordsImportCommand runs the subcommand's function on a database
// of its own: it opens the App, starts only its writer, imports, reports
// and shuts down, closing the database. The record script of the
// collection runs: a record it fails is not stored but kept for a retry,
// one it skips is counted apart, one its lexicon refuses is stored with its
// validation error (the default mode, hide); the summary counts each
// outcome, stderr lists by line what was not imported and what was
// flagged, and the command fails.
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
	var logs strings.Builder
	cfg := appview.Config{
		DatabaseURL: dbURL,
		Logger:      slog.New(slog.NewTextHandler(&logs, nil)),
		Security:    appview.SecurityConfig{TokenEncryptionKey: testTokenKey},
		Ingest:      appview.IngestConfig{JetstreamURL: "ws://127.0.0.1:1/subscribe"},
		Metrics:     appview.MetricsConfig{Addr: taken.Addr().String()},
	}
	setup, err := appview.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := setup.Lexicons().Put(context.Background(), lexicon.Upload{Document: json.RawMessage(postLexicon),
		IndexHook: `function handle()
			if record.n == 13 then error("unlucky") end
			if record.n == 7 then return nil end
			return record
		end`}); err != nil {
		t.Fatal(err)
	}
	if err := setup.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "records.jsonl")
	post := func(rkey, n string) string {
		return `{"uri":"at://did:plc:c/app.test.post/` + rkey + `","cid":"` + testCID + `","record":{"$type":"app.test.post","n":` + n + `}}` + "\n"
	}
	lines := post("a", "1") + post("b", "true") + post("c", "13") + post("d", "7") + "{not json\n" + post("e", "2")
	if err := os.WriteFile(file, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = recordsImport(ctx, cfg, file, false, &stdout, &stderr)
	if err == nil || err.Error() != "not imported: 1 record and 1 malformed line (listed above)" {
		t.Fatalf("recordsImport = %v", err)
	}
	want := "imported 3 records; not imported: script failed 1, malformed lines 1 " +
		"(failed scripts are retried automatically, then kept as dead letters); skipped by their record script: 1; " +
		"stored with a validation error: 1 (not served by default, see docs/ingestion.md#validation)\n"
	if stdout.String() != want {
		t.Errorf("stdout %q\nwant   %q", stdout.String(), want)
	}
	report := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if len(report) != 3 || !strings.HasPrefix(report[0], "line 5: malformed, skipped: ") ||
		!strings.HasPrefix(report[1], "line 2: at://did:plc:c/app.test.post/b stored with a validation error: ") ||
		!strings.HasPrefix(report[2], "line 3: at://did:plc:c/app.test.post/c failed its record script: ") || !strings.Contains(report[2], "unlucky") {
		t.Errorf("stderr:\n%s", stderr.String())
	}
	if strings.Contains(logs.String(), "lexview stopped") {
		t.Errorf("the import logged that lexview stopped:\n%s", logs.String())
	}
	store, err := appview.OpenStore(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if n, err := store.CountRecords(ctx, "app.test.post"); err != nil || n != 3 {
		t.Fatalf("stored %d, %v", n, err)
	}
	if _, err := store.NextScriptRetryDue(ctx); err != nil {
		t.Fatalf("the failed script's record is not kept for a retry: %v", err)
	}
}
