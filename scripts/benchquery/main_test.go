package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"testing"

	"github.com/lexview/lexview/scripts/internal/benchkit"
)

// cursorField matches the cursor of a list answer: the one part of the
// answers where the baseline and Lexview may differ (each has its own
// encoding).
var cursorField = regexp.MustCompile(`,"cursor":"[^"]*"`)

// TestBaselineAnswersAsLexview: for every kind of request the load
// generator sends, the baseline's answer is Lexview's, byte for byte but
// for the cursor, on both backends; following each server's own cursors
// walks the same pages. Otherwise the benchmark would compare different
// work.
func TestBaselineAnswersAsLexview(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			if backend == "postgres" && os.Getenv("APPVIEW_TEST_POSTGRES_URL") == "" {
				if os.Getenv("CI") == "true" {
					t.Fatal("APPVIEW_TEST_POSTGRES_URL is not set")
				}
				t.Skip("APPVIEW_TEST_POSTGRES_URL is not set")
			}
			ctx := context.Background()
			db, _, err := benchkit.CreateDatabase(ctx, backend, t.TempDir(), "benchquery", "test", "")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(db.Cleanup)
			n, err := prepare(ctx, db.URL, true, seedSpec{records: 430, small: 45, shape: "reply"})
			if err != nil {
				t.Fatal(err)
			}
			s, err := sampleRecords(ctx, db.URL, benchCollection, 25)
			if err != nil {
				t.Fatal(err)
			}
			lv, bl := serve(t, ctx, benchkit.NewLexviewHandler, db.URL), serve(t, ctx, newBaselineHandler, db.URL)

			var firsts []string // first pages, walked to the end
			for _, nsid := range []string{benchQuery, smallQuery} {
				firsts = append(firsts, nsid+"?limit=50", nsid+"?limit=1", nsid+"?limit=100", nsid)
			}
			for _, d := range s.dids[:5] {
				firsts = append(firsts, benchQuery+"?limit=1&did="+url.QueryEscape(d))
			}
			for _, first := range firsts {
				walk(t, ctx, lv, bl, first)
			}
			for _, u := range append(s.uris, s.uris[0]+"x") {
				same(t, ctx, lv+"/xrpc/"+benchQuery+"?uri="+url.QueryEscape(u), bl+"/xrpc/"+benchQuery+"?uri="+url.QueryEscape(u))
			}
			if n != 430 {
				t.Fatalf("seeded %d records, want 430", n)
			}
		})
	}
}

// serve starts a server of factory over dbURL.
func serve(t *testing.T, ctx context.Context, factory benchkit.HandlerFactory, dbURL string) string {
	t.Helper()
	h, release, err := factory(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); release() })
	return srv.URL
}

// walk follows both servers' cursors from the first page (a method and
// query string) and compares every page.
func walk(t *testing.T, ctx context.Context, lv, bl, first string) {
	t.Helper()
	lu, bu := lv+"/xrpc/"+first, bl+"/xrpc/"+first
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatalf("%s: pagination does not end", first)
		}
		same(t, ctx, lu, bu)
		var lp, bp struct {
			Cursor string `json:"cursor"`
		}
		if err := benchkit.GetJSON(ctx, lu, &lp); err != nil {
			t.Fatal(err)
		}
		if err := benchkit.GetJSON(ctx, bu, &bp); err != nil {
			t.Fatal(err)
		}
		if (lp.Cursor == "") != (bp.Cursor == "") {
			t.Fatalf("%s page %d: Lexview's cursor %q, the baseline's %q", first, pages, lp.Cursor, bp.Cursor)
		}
		if lp.Cursor == "" {
			return
		}
		sep := "&"
		if !regexp.MustCompile(`\?`).MatchString(first) {
			sep = "?"
		}
		lu = lv + "/xrpc/" + first + sep + "cursor=" + url.QueryEscape(lp.Cursor)
		bu = bl + "/xrpc/" + first + sep + "cursor=" + url.QueryEscape(bp.Cursor)
	}
}

// same requires the same status, and for a 200 the same body but for the
// cursor.
func same(t *testing.T, ctx context.Context, lu, bu string) {
	t.Helper()
	lb, ls, err := benchkit.Get(ctx, lu)
	if err != nil {
		t.Fatal(err)
	}
	bb, bs, err := benchkit.Get(ctx, bu)
	if err != nil {
		t.Fatal(err)
	}
	if ls != bs {
		t.Fatalf("%s: Lexview answers %d %s, the baseline %d %s", lu, ls, lb, bs, bb)
	}
	if ls != http.StatusOK {
		return
	}
	l, b := cursorField.ReplaceAll(lb, []byte(`,"cursor":"…"`)), cursorField.ReplaceAll(bb, []byte(`,"cursor":"…"`))
	if string(l) != string(b) {
		t.Fatalf("%s: answers differ\nLexview:  %s\nbaseline: %s", lu, l, b)
	}
}
