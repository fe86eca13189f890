package dashboard_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lexview/lexview/internal/browsertest"
)

// TestBrowserDomains: an origin with a path is refused next to the field;
// a valid one is added and listed; made primary (confirmed), it is
// marked so and offers no delete, while the former primary can now be
// deleted (confirmed) and leaves the list.
func TestBrowserDomains(t *testing.T) {
	ctx := browser(t, 15*time.Second)
	env, key := startInstance(t)
	var errs browsertest.ConsoleErrors
	errs.Listen(ctx)
	signIn(t, ctx, env, key)
	open(t, ctx, env, "/dashboard/domains", "#domains")
	waitText(t, ctx, "#domains tbody", env.URL)

	err := chromedp.Do(ctx,
		chromedp.SendKeys("#url", "http://app.localhost:8080/path"),
		chromedp.Click("#add-form button"),
		chromedp.WaitVisible("#url-error"),
	)
	if err != nil {
		t.Fatalf("bad origin: %v", err)
	}
	if msg := text(t, ctx, "#url-error"); !strings.Contains(msg, "no path") {
		t.Errorf("bad origin: %q", msg)
	}

	const added = "http://app.localhost:8080"
	if err := chromedp.Do(ctx, clear("#url"), chromedp.SendKeys("#url", added), chromedp.Click("#add-form button")); err != nil {
		t.Fatalf("add: %v", err)
	}
	waitText(t, ctx, "#domains tbody", added)
	if invalid, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("url-error").hidden && !document.getElementById("url").hasAttribute("aria-invalid")`)); !invalid {
		t.Error("the error stays after a successful add")
	}

	if err := chromedp.Do(ctx, chromedp.Click(`#domains tbody tr:nth-child(2) button[aria-label^="Make"]`)); err != nil {
		t.Fatalf("make primary: %v", err)
	}
	confirm(t, ctx)
	waitText(t, ctx, "#notice", added+" is now the primary domain.")
	// The primary is listed first, marked, without buttons; the former
	// primary has both.
	type row struct {
		Text    string `json:"text"`
		Buttons int    `json:"buttons"`
	}
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]row](`[...document.querySelectorAll("#domains tbody tr")].map((r) => ({text: r.cells[0].textContent, buttons: r.querySelectorAll("button").length}))`))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Text != added+"primary" || rows[0].Buttons != 0 || rows[1].Text != env.URL || rows[1].Buttons != 2 {
		t.Fatalf("after make primary: %+v", rows)
	}

	if err := chromedp.Do(ctx, chromedp.Click(`#domains tbody tr:nth-child(2) button.danger`)); err != nil {
		t.Fatalf("delete: %v", err)
	}
	confirm(t, ctx)
	waitText(t, ctx, "#notice", "Deleted "+env.URL+".")
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#domains tbody tr").length`)); n != 1 {
		t.Errorf("%d domains listed after the delete, want 1", n)
	}
	noConsoleErrors(t, &errs, "error network: Failed to load resource: the server responded with a status of 400")
}
