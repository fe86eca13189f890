package dashboard_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// BrowserEnv names a browser binary to use instead of looking for one.
const BrowserEnv = "LEXVIEW_CHROMIUM"

// debianChromium is the binary of Debian's chromium package behind its
// /usr/bin/chromium launcher script, used directly when present: the
// launcher adds nothing headless tests need.
const debianChromium = "/usr/lib/chromium/chromium"

// browserNames are the binaries looked for on PATH, in order.
var browserNames = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// The one headless browser of the test binary, started by the first test
// that asks for it and stopped by TestMain.
var shared struct {
	once    sync.Once
	ctx     context.Context // the browser's context; tabs derive from it
	missing error           // no browser was found
	err     error           // the browser did not start
	cancel  func()
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.cancel != nil {
		shared.cancel()
	}
	os.Exit(code)
}

// findBrowser returns the browser binary: $LEXVIEW_CHROMIUM, else Debian's
// chromium, else the first of browserNames on PATH.
func findBrowser() (string, error) {
	if p := os.Getenv(BrowserEnv); p != "" {
		return p, nil
	}
	if _, err := os.Stat(debianChromium); err == nil {
		return debianChromium, nil
	}
	for _, name := range browserNames {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no headless browser found (looked for %s on PATH and $%s); install Debian's chromium "+
		"(apt-get install chromium) to run the browser tests", strings.Join(browserNames, ", "), BrowserEnv)
}

// browser returns a new tab of the shared browser in a fresh browser
// context (no cookies), bounded by three times timeout.
// Without a browser the test is skipped, or fails when CI=true.
func browser(t *testing.T, timeout time.Duration) context.Context {
	t.Helper()
	shared.once.Do(func() {
		bin, err := findBrowser()
		if err != nil {
			shared.missing = err
			return
		}
		opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin),
			chromedp.WindowSize(1280, 900), chromedp.NoSandbox, chromedp.DisableGPU)
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		bctx, cancelBrowser := chromedp.NewContext(actx)
		// Start the browser now, so that each test's tab is cheap.
		if err := chromedp.Do(bctx); err != nil {
			cancelBrowser()
			cancelAlloc()
			shared.err = fmt.Errorf("start %s: %w", bin, err)
			return
		}
		shared.ctx, shared.cancel = bctx, func() { cancelBrowser(); cancelAlloc() }
	})
	if shared.missing != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("browser tests need a browser under CI=true: %v", shared.missing)
		}
		t.Skipf("SKIPPED: %v", shared.missing)
	}
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	// Each tab has its own browser context (cookie jar): the instances of
	// all tests listen on 127.0.0.1 and share the session secret, and a
	// cookie is not bound to a port, so a shared jar would carry one
	// test's session into the next.
	tab, cancelTab := chromedp.NewContext(shared.ctx, chromedp.WithNewBrowserContext())
	// timeout is what the test takes on an idle machine; the suite runs
	// beside other packages and fuzzing, so the tab allows three times it.
	ctx, cancel := context.WithTimeout(tab, 3*timeout)
	t.Cleanup(func() {
		if t.Failed() {
			screenshot(t, tab)
		}
		cancel()
		cancelTab()
	})
	return ctx
}

// screenshot saves the tab's page into the test's artifact directory.
func screenshot(t *testing.T, tab context.Context) {
	ctx, cancel := context.WithTimeout(tab, 5*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Logf("screenshot: %v", err)
		return
	}
	path := filepath.Join(t.ArtifactDir(), "page.png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Logf("screenshot: %v", err)
		return
	}
	t.Logf("screenshot of the page: %s", path)
}

// consoleErrors collects the tab's console errors: console.error calls,
// uncaught exceptions and error entries of the browser log (a
// Content-Security-Policy violation is one).
type consoleErrors struct {
	mu   sync.Mutex
	msgs []string
}

// listen starts collecting the errors of ctx's tab until ctx ends.
func (c *consoleErrors) listen(ctx context.Context) {
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type != chromedp.ConsoleException && m.Type != chromedp.ConsoleError {
				continue
			}
			c.mu.Lock()
			c.msgs = append(c.msgs, fmt.Sprintf("%s %s: %s (%s)", m.Type, m.Source, m.Text, m.URL))
			c.mu.Unlock()
		}
	}()
}

// all returns the errors collected so far.
func (c *consoleErrors) all() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.msgs...)
}
