package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lexview/lexview/scripts/internal/benchkit"
	"github.com/lexview/lexview/storage"
)

// testSpec is a dataset small enough for a test, with rare and popular
// subjects.
var testSpec = spec{seed: 7, likes: 3000, posts: 600, follows: 400, subjects: 150, accounts: 60, zipf: 1.1}

// cursorField matches a cursor string: the one part of the answers where
// the baseline and Lexview may differ (each has its own encoding).
var cursorField = regexp.MustCompile(`"cursor":"[^"]*"`)

// TestBaselineAnswersAsLexview: the dataset holds what its bookkeeping
// says (the link counts the request sets are chosen by), and for every
// kind of request the benchmark sends, the baseline's answer is Lexview's,
// byte for byte but for the cursor, on both backends; following each
// server's own cursors walks the same pages. Otherwise the benchmark would
// compare different work. A kind Lexview does not serve on this build
// (404) is skipped, as the benchmark skips it.
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
			db, _, err := benchkit.CreateDatabase(ctx, backend, t.TempDir(), "benchindexes", "test", "")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(db.Cleanup)
			d, err := prepare(ctx, db.URL, true, testSpec)
			if err != nil {
				t.Fatal(err)
			}
			p := newPlan(d)
			if len(p.rare) == 0 || len(p.popular) != popularN || p.popular[0].links < 100 {
				t.Fatalf("plan: %d rare subjects, %d popular, the most liked with %d likes; want some, %d and >= 100",
					len(p.rare), len(p.popular), p.popular[0].links, popularN)
			}
			lv, bl := serve(t, ctx, benchkit.NewLexviewHandler, db.URL), serve(t, ctx, newBaselineHandler, db.URL)

			// The link counts of the plan are the database's.
			for _, s := range append(p.popular, p.rare[:5]...) {
				var got struct{ Total int }
				u := backlinkURLs(bl, methodGetBacklinksCount, sourceLike, []subject{s})[0]
				if err := benchkit.GetJSON(ctx, u, &got); err != nil {
					t.Fatal(err)
				}
				if got.Total != s.links {
					t.Fatalf("%s: %d likes in the database, %d in the plan", s.uri, got.Total, s.links)
				}
			}

			for _, k := range kinds {
				if k.requests == nil {
					continue
				}
				t.Run(k.name, func(t *testing.T) {
					lu, err := k.requests(ctx, lv, p)
					if err != nil {
						t.Fatal(err)
					}
					bu, err := k.requests(ctx, bl, p)
					if err != nil {
						t.Fatal(err)
					}
					if len(lu) == 0 || len(lu) != len(bu) {
						t.Fatalf("%d requests to Lexview, %d to the baseline", len(lu), len(bu))
					}
					if body, status, err := benchkit.Get(ctx, lu[0]); err == nil && status == http.StatusNotFound {
						t.Skipf("Lexview does not serve %s on this build: %s", k.name, body)
					}
					for i := range lu {
						same(t, ctx, lu[i], bu[i])
					}
				})
			}
			// Every page of the field kinds' listings, in pages of 7 and 100.
			for _, q := range []string{methodPostsByLang + "?lang=is&limit=7", methodPostsByLang + "?lang=en&limit=100",
				methodPostsByTime + "?limit=7"} {
				if body, status, err := benchkit.Get(ctx, lv+"/xrpc/"+q); err == nil && status == http.StatusNotFound {
					t.Logf("Lexview does not serve %s on this build: %s", q, body)
					continue
				}
				walk(t, ctx, lv+"/xrpc/"+q, bl+"/xrpc/"+q)
			}
			// Every page of a search of each shape, 7 at a time: as many
			// as the plan counts matches.
			for shape := range searchShapes {
				i := slices.IndexFunc(p.searches, func(s search) bool { return s.shape == shape })
				if i < 0 {
					t.Fatalf("no search of shape %s", shapeNames[shape])
				}
				s := p.searches[i]
				q := methodSearchPosts + "?limit=7&q=" + url.QueryEscape(s.q)
				if body, status, err := benchkit.Get(ctx, lv+"/xrpc/"+q); err == nil && status == http.StatusNotFound {
					t.Logf("Lexview does not serve %s on this build: %s", q, body)
					continue
				}
				if pages := walk(t, ctx, lv+"/xrpc/"+q, bl+"/xrpc/"+q); pages != max((s.matches+6)/7, 1) {
					t.Fatalf("search %s: %d pages of 7 for %d matches", s.q, pages, s.matches)
				}
			}
			// Every page of the backlinks of the most liked posts, 7 at a
			// time, and of a post with none.
			for _, s := range append(p.popular[:3], subject{uri: "at://did:plc:nobody/" + collPost + "/3kaaaaaaaaaaa"}) {
				q := "?subject=" + url.QueryEscape(s.uri) + "&source=" + url.QueryEscape(sourceLike) + "&limit=7"
				if body, status, err := benchkit.Get(ctx, lv+"/xrpc/"+methodGetBacklinks+q); err == nil && status == http.StatusNotFound {
					t.Skipf("Lexview does not serve %s on this build: %s", methodGetBacklinks, body)
				}
				pages := walk(t, ctx, lv+"/xrpc/"+methodGetBacklinks+q, bl+"/xrpc/"+methodGetBacklinks+q)
				if want := (s.links + 6) / 7; pages != max(want, 1) {
					t.Fatalf("%s: %d pages of 7 for %d likes", s.uri, pages, s.links)
				}
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

// walk follows both servers' cursors from the first pages lu and bu,
// compares every page and returns their number.
func walk(t *testing.T, ctx context.Context, lu, bu string) int {
	t.Helper()
	first := [2]string{lu, bu}
	for pages := 1; ; pages++ {
		if pages > 1000 {
			t.Fatalf("%s: pagination does not end", first[0])
		}
		same(t, ctx, lu, bu)
		var lp, bp struct {
			Cursor *string `json:"cursor"`
		}
		if err := benchkit.GetJSON(ctx, lu, &lp); err != nil {
			t.Fatal(err)
		}
		if err := benchkit.GetJSON(ctx, bu, &bp); err != nil {
			t.Fatal(err)
		}
		if lp.Cursor == nil || bp.Cursor == nil {
			return pages
		}
		lu = first[0] + "&cursor=" + url.QueryEscape(*lp.Cursor)
		bu = first[1] + "&cursor=" + url.QueryEscape(*bp.Cursor)
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
	l, b := cursorField.ReplaceAll(lb, []byte(`"cursor":"…"`)), cursorField.ReplaceAll(bb, []byte(`"cursor":"…"`))
	if string(l) != string(b) {
		i := 0
		for i < min(len(l), len(b)) && l[i] == b[i] {
			i++
		}
		from := max(0, i-200)
		t.Fatalf("%s: answers differ at byte %d (of %d and %d)\nLexview:  …%s\nbaseline: …%s", lu, i, len(l), len(b),
			clip(string(l[from:]), 400), clip(string(b[from:]), 400))
	}
}

// TestDatasetDeterministic: the same spec gives the same records, and
// another seed other ones.
func TestDatasetDeterministic(t *testing.T) {
	digest := func(s spec) string {
		var b strings.Builder
		d := newDataset(s)
		n := 0
		if err := d.generate(func(r storage.Record) error {
			n++
			if n%97 == 0 {
				b.WriteString(r.URI + " " + r.CID + " " + string(r.Value) + "\n")
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return strconv.Itoa(n) + "\n" + b.String()
	}
	a, b := digest(testSpec), digest(testSpec)
	if a != b {
		t.Fatal("two generations of one spec differ")
	}
	other := testSpec
	other.seed++
	if digest(other) == a {
		t.Fatal("another seed gives the same records")
	}
	if !strings.HasPrefix(a, strconv.Itoa(testSpec.likes+testSpec.posts+testSpec.follows)+"\n") {
		t.Fatalf("generated %s records", a[:strings.IndexByte(a, '\n')])
	}
}
