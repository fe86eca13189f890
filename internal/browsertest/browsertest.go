// Package browsertest finds the headless browser the browser tests drive
// (the dashboard's and the examples') and collects a tab's console errors.
package browsertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"

	"github.com/chromedp/chromedp"
)

// Env names the browser binary to use, when set.
const Env = "LEXVIEW_CHROMIUM"

// debianChromium is the binary of Debian's chromium package behind its
// /usr/bin/chromium launcher script, used directly when present: the
// launcher adds nothing headless tests need.
const debianChromium = "/usr/lib/chromium/chromium"

// names are the binaries looked for on PATH, in order.
var names = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// Find returns the browser binary: $LEXVIEW_CHROMIUM, else Debian's
// chromium, else the first chromium or chrome on PATH.
func Find() (string, error) {
	if p := os.Getenv(Env); p != "" {
		return p, nil
	}
	if _, err := os.Stat(debianChromium); err == nil {
		return debianChromium, nil
	}
	for _, name := range names {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no headless browser found (looked for %s on PATH and $%s); install Debian's chromium "+
		"(apt-get install chromium) to run the browser tests", strings.Join(names, ", "), Env)
}

// ConsoleErrors collects a tab's console errors and uncaught exceptions
// (a Content-Security-Policy violation is one). Its methods are safe for
// concurrent use.
type ConsoleErrors struct {
	mu   sync.Mutex
	msgs []string
}

// Listen collects the errors of ctx's tab until ctx ends.
func (c *ConsoleErrors) Listen(ctx context.Context) {
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

// All returns the errors collected so far.
func (c *ConsoleErrors) All() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.msgs)
}
