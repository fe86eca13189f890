package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lexview/lexview/internal/browsertest"
)

// TestPage runs the example as `go run ./examples/bookclub` does (the app
// folder applied to a fresh instance, the fixtures' records indexed, the
// page served beside the API) and drives the page in a headless browser:
// the shelf with its like counts, a book with its reviews, a search.
// Without a browser the test is skipped, and fails under CI=true, as the
// dashboard's browser tests do (LEXVIEW_CHROMIUM names one;
// scripts/lib/chromium.sh installs Debian's chromium).
func TestPage(t *testing.T) {
	bin := chromium(t)
	ctx, cancel := context.WithCancel(context.Background())
	type started struct{ base, key string }
	up := make(chan started, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, options{DB: filepath.Join(t.TempDir(), "bookclub.db")}, func(base, key string) { up <- started{base, key} })
	}()
	var s started
	select {
	case s = <-up:
	case err := <-done:
		t.Fatalf("the app did not start: %v", err)
	case <-time.After(2 * time.Minute):
		t.Fatal("the app did not start in time")
	}
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the app did not stop cleanly: %v", err)
		}
	}()

	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.WindowSize(1024, 768), chromedp.NoSandbox, chromedp.DisableGPU)...)
	defer cancelAlloc()
	tab, cancelTab := chromedp.NewContext(actx)
	defer cancelTab()
	tab, cancelTimeout := context.WithTimeout(tab, 90*time.Second)
	defer cancelTimeout()
	var errs browsertest.ConsoleErrors
	errs.Listen(tab)
	defer func() {
		if t.Failed() {
			page, _ := chromedp.Run(tab, chromedp.Evaluate[string](`document.body.innerText`))
			t.Logf("the page's text:\n%s", page)
		}
	}()
	// wait polls a JavaScript expression until it is not null, and
	// returns its value: what the page shows once it shows it.
	wait := func(what, expr string) []string {
		t.Helper()
		got, err := chromedp.Run(tab, chromedp.Poll[[]string](expr, chromedp.WithPollingTimeout(30*time.Second)))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return got
	}
	// The lines of the list: title, like count and review count.
	const listed = `[...document.querySelectorAll('#books li.book')].map(li =>
		[li.querySelector('.title').textContent, li.querySelector('.likes').textContent, li.querySelector('.meta').textContent].join(' | '))`

	// The shelf, in title order, with the counts.
	if err := chromedp.Do(tab, chromedp.Navigate(s.base+"/")); err != nil {
		t.Fatal(err)
	}
	shelf := wait("the shelf", `document.querySelectorAll('#books li.book').length === 6 ? `+listed+` : null`)
	want := []string{
		"Dune | ♥ 1 | 1 review",
		"The Hobbit | ♥ 3 | 2 reviews",
		"The Left Hand of Darkness | ♥ 0 | 0 reviews",
		"Murder on the Orient Express | ♥ 0 | 0 reviews",
		"The Name of the Rose | ♥ 0 | 0 reviews",
		"A Wizard of Earthsea | ♥ 2 | 0 reviews",
	}
	if !slices.Equal(shelf, want) {
		t.Errorf("the shelf:\n%s\nwant:\n%s", strings.Join(shelf, "\n"), strings.Join(want, "\n"))
	}
	if title := wait("the list's title", `[document.getElementById('list-title').textContent]`); title[0] != "The shelf (6 books)" {
		t.Errorf("the list's title: %q", title[0])
	}

	// A book: its details, like count and reviews.
	if err := chromedp.Do(tab, chromedp.Click(`#books a.title[href*="3kbook0000001"]`)); err != nil {
		t.Fatal(err)
	}
	detail := wait("the book", `document.getElementById('detail').hidden ? null : [
		document.getElementById('detail-title').textContent, document.getElementById('detail-byline').textContent,
		document.getElementById('detail-likes').textContent,
		...[...document.querySelectorAll('#reviews li')].map(li => li.textContent)]`)
	if len(detail) != 5 || detail[0] != "The Hobbit" || detail[1] != "by J. R. R. Tolkien, 1937 · fantasy" ||
		detail[2] != "♥ 3 likes" || !slices.Contains(detail[3:], "★★★★★ A cosy adventure that grows darker as it goes. — did:plc:bob000000000000000000000") {
		t.Errorf("the book: %q", detail)
	}

	// A search, from the form (its submit event: form.submit() would
	// bypass the page's handler).
	if err := chromedp.Do(tab, chromedp.SendKeys("#q", "le guin"), chromedp.Click(`#search button`)); err != nil {
		t.Fatal(err)
	}
	found := wait("the search", `document.getElementById('list').hidden ||
		!document.getElementById('list-title').textContent.startsWith('Results') ? null : `+listed)
	slices.Sort(found)
	if want := []string{"A Wizard of Earthsea | ♥ 2 | 0 reviews", "The Left Hand of Darkness | ♥ 0 | 0 reviews"}; !slices.Equal(found, want) {
		t.Errorf("the search for le guin: %q, want %q", found, want)
	}

	if status := wait("the status", `[document.getElementById('status').textContent]`); status[0] != "" {
		t.Errorf("the page's status: %q", status[0])
	}
	if msgs := errs.All(); len(msgs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(msgs, "\n"))
	}
}

// chromium returns the headless browser to use (browsertest.Find).
// Without one the test is skipped, or fails under CI=true.
func chromium(t *testing.T) string {
	t.Helper()
	p, err := browsertest.Find()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip("SKIPPED: " + err.Error())
	}
	return p
}
