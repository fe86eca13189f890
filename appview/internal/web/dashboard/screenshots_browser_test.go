package dashboard_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/ingest"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// ScreenshotsEnv names a directory: when set, TestScreenshots saves a
// picture of each signed-in page there (docs/images is refreshed with
// LEXVIEW_SCREENSHOTS=$PWD/docs/images go test -run TestScreenshots
// ./appview/internal/web/dashboard/).
const ScreenshotsEnv = "LEXVIEW_SCREENSHOTS"

// TestScreenshots pictures the dashboard's pages on a seeded instance,
// for the documentation. It runs only when $LEXVIEW_SCREENSHOTS is set.
func TestScreenshots(t *testing.T) {
	dir := os.Getenv(ScreenshotsEnv)
	if dir == "" {
		t.Skipf("set $%s to a directory to save the pages' pictures", ScreenshotsEnv)
	}
	ctx := browser(t, 60*time.Second)
	// A stand-in event source and XRPC calls give the overview's charts
	// something to show, sampled every 100 ms.
	src := &standIn{}
	src.set(ingest.StateConnected, 0, 0.4)
	env, key := startInstanceWith(t, appview.Config{Ingest: appview.IngestConfig{EventSource: src},
		Metrics: appview.MetricsConfig{HistoryInterval: 100 * time.Millisecond}})
	for _, id := range []string{"com.example.notes.note", "com.example.notes.like"} {
		r := env.Do(t, "POST", "/admin/lexicons", map[string]any{"backfill": false, "lexicon_json": map[string]any{
			"lexicon": 1, "id": id, "defs": map[string]any{"main": map[string]any{"type": "record", "key": "tid",
				"record": map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}}}}}},
			testenv.Bearer(key)...)
		if r.Status != 201 {
			t.Fatalf("upload %s: %d %s", id, r.Status, r.Raw)
		}
	}
	seed(t, env.Store, "com.example.notes.note", 42)
	seed(t, env.Store, "com.example.notes.like", 7)
	// Recent records of real-looking accounts, for the records page's
	// relative times and identifiers.
	var ops []storage.RecordOp
	for i, did := range []string{"did:plc:ewvi7nxzyoun6zhxrhs64oiz", "did:web:notes.a-rather-long-host-name.example.com",
		"did:plc:z72i7hdynmk6r22z27h6tvur"} {
		ops = append(ops, storage.RecordOp{Record: storagetest.Rec(did, "com.example.notes.note", fmt.Sprintf("3l%03d", i),
			time.Now().Add(-time.Duration(i*7+2)*time.Minute), map[string]any{"text": "hello"})})
	}
	if err := env.Store.ApplyBatch(context.Background(), storage.Batch{Ops: ops}); err != nil {
		t.Fatal(err)
	}
	r := env.Do(t, "POST", "/admin/lexicons", map[string]any{"backfill": false, "lexicon_json": map[string]any{"lexicon": 1,
		"id": "com.example.notes.listNotes", "defs": map[string]any{"main": map[string]any{"type": "query"}}}}, testenv.Bearer(key)...)
	if r.Status != 201 {
		t.Fatalf("upload the query: %d %s", r.Status, r.Raw)
	}
	for i := range 40 {
		src.set(ingest.StateConnected, int64(i*i*3), 0.3+float64(i%7)/10)
		for range i % 5 {
			env.Do(t, "GET", "/xrpc/com.example.notes.listNotes", nil)
		}
		time.Sleep(100 * time.Millisecond)
	}
	signIn(t, ctx, env, key)
	for _, p := range []struct{ path, wait, file, scheme string }{
		{"/dashboard/", "#charts", "dashboard-overview.png", "light"},
		{"/dashboard/lexicons", "#main", "dashboard-lexicons.png", "light"},
		{"/dashboard/records?limit=25", "#records", "dashboard-records.png", "light"},
		{"/dashboard/", "#charts", "dashboard-overview-dark.png", "dark"},
	} {
		if err := chromedp.Do(ctx, colorScheme(p.scheme)); err != nil {
			t.Fatal(err)
		}
		open(t, ctx, env, p.path, p.wait)
		time.Sleep(300 * time.Millisecond) // let the page's data settle
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p.file), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
