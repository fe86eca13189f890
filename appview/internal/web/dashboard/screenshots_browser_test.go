package dashboard_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/ingest"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
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
	for _, p := range []struct{ path, wait, file string }{
		{"/dashboard/", "#charts", "dashboard-overview.png"},
		{"/dashboard/lexicons", "#main", "dashboard-lexicons.png"},
	} {
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
