package dashboard_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lexview/lexview/internal/browsertest"
)

// TestBrowserIdentity: the page shows the did:web mode and the instance's
// DID; the mode form's refusals are shown under the form or next to the
// field they name, and the mode stays; a service entry with a malformed
// fragment is refused next to the field; a valid one is created, and a
// query lexicon picked from the lexicons is bound to it, then listed as
// bound (and no longer offered). At phone width the page fits the screen.
func TestBrowserIdentity(t *testing.T) {
	ctx := browser(t, 20*time.Second)
	env, key := startInstance(t)
	const nsid = "com.example.listNotes"
	r := env.Do(t, "POST", "/admin/lexicons", map[string]any{"lexicon_json": map[string]any{"lexicon": 1, "id": nsid,
		"defs": map[string]any{"main": map[string]any{"type": "query"}}}}, "Authorization", "Bearer "+key)
	if r.Status != 201 {
		t.Fatalf("upload: %d %s", r.Status, r.Raw)
	}

	var errs browsertest.ConsoleErrors
	errs.Listen(ctx)
	signIn(t, ctx, env, key)
	open(t, ctx, env, "/dashboard/identity", "#identity")
	u, _ := url.Parse(env.URL)
	did := "did:web:" + strings.ReplaceAll(u.Host, ":", "%3A")
	waitText(t, ctx, "#id-mode", "did_web")
	if got := text(t, ctx, "#id-did"); got != did {
		t.Errorf("DID %q, want %q", got, did)
	}
	waitText(t, ctx, "#no-entries", "No service entries")

	// The mode form sends the chosen mode's fields; a refusal naming a
	// field shown is put next to it, any other under the form.
	err := chromedp.Do(ctx,
		chromedp.Click("#mode-change summary"),
		choose("#mode", "did_plc"),
		chromedp.WaitVisible("#plc-fields"),
		chromedp.Click("#mode-form button[type=submit]"),
	)
	if err != nil {
		t.Fatalf("did_plc without a DID: %v", err)
	}
	confirm(t, ctx)
	waitText(t, ctx, "#mode-error", "the did_plc mode needs a DID")
	err = chromedp.Do(ctx,
		chromedp.Click(`input[name=plc-how][value=adopt]`),
		chromedp.WaitVisible("#plc-did"),
		chromedp.SendKeys("#plc-did", "did:web:example.com"),
		chromedp.SendKeys("#plc-key", "zNotAKey"),
		chromedp.Click("#mode-form button[type=submit]"),
	)
	if err != nil {
		t.Fatalf("adopt a did:web: %v", err)
	}
	confirm(t, ctx)
	waitText(t, ctx, "#plc-did-error", "invalid did: a did:plc is expected")
	if got := text(t, ctx, "#id-mode"); !strings.HasPrefix(got, "did_web") {
		t.Errorf("the mode changed to %q after refusals", got)
	}

	err = chromedp.Do(ctx,
		chromedp.SendKeys("#entry-fragment", "#1bad"),
		chromedp.SendKeys("#entry-type", "BskyAppView"),
		chromedp.Click("#entry-form button"),
		chromedp.WaitVisible("#entry-fragment-error"),
	)
	if err != nil {
		t.Fatalf("bad fragment: %v", err)
	}
	if msg := text(t, ctx, "#entry-fragment-error"); !strings.HasPrefix(msg, "invalid fragment_id") {
		t.Errorf("bad fragment: %q", msg)
	}
	err = chromedp.Do(ctx,
		clear("#entry-fragment"),
		chromedp.SendKeys("#entry-fragment", "#bsky_appview"),
		chromedp.Click("#entry-form button"),
		chromedp.WaitVisible("article.entry select[id$=-bind]"),
	)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	waitText(t, ctx, "article.entry h3", "#bsky_appview BskyAppView")

	err = chromedp.Do(ctx,
		choose("article.entry select[id$=-bind]", nsid),
		chromedp.Click(`article.entry button[aria-label^="Bind"]`),
	)
	if err != nil {
		t.Fatalf("bind: %v", err)
	}
	waitText(t, ctx, "article.entry ul.bound", nsid)
	offered, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`[...document.querySelector("article.entry select[id$=-bind]").options].some((o) => o.value === "`+nsid+`")`))
	if err != nil || offered {
		t.Errorf("the bound method is still offered (%v)", err)
	}
	var bound []string
	r = env.Do(t, "GET", "/admin/service-entries/1/xrpcs", nil, "Authorization", "Bearer "+key)
	r.JSON(t, &bound)
	if len(bound) != 1 || bound[0] != nsid {
		t.Errorf("bound through the API: %v", bound)
	}
	// The lexicon's page lists the entry granting access to it.
	open(t, ctx, env, "/dashboard/lexicons?id="+nsid, "#detail-services")
	waitText(t, ctx, "#services tbody", "BskyAppView")
	open(t, ctx, env, "/dashboard/identity", "article.entry")

	// At phone width the page does not overflow sideways: the tables
	// scroll within their boxes.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(400, 800)); err != nil {
		t.Fatal(err)
	}
	wide, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > document.documentElement.clientWidth`))
	if err != nil || wide {
		t.Errorf("the page is wider than a 400 px screen (%v)", err)
	}
	noConsoleErrors(t, &errs, "error network: Failed to load resource: the server responded with a status of 400")
}
