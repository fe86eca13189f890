package dashboard_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lexview/lexview/internal/browsertest"
)

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

// browser returns a new tab of the shared browser in a fresh browser
// context (no cookies), bounded by three times timeout.
// Without a browser the test is skipped, or fails when CI=true.
func browser(t *testing.T, timeout time.Duration) context.Context {
	t.Helper()
	shared.once.Do(func() {
		bin, err := browsertest.Find()
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
