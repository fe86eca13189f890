package dashboard_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/internal/browsertest"
)

// TestBrowserIndexes: a script's query that scanned a collection is
// suggested, and declared in one click; the index is built (ready, its
// bar full) and the suggestion goes; the form shows a refused path next
// to the field and declares another index; dropping one (confirmed) takes
// it off the list.
func TestBrowserIndexes(t *testing.T) {
	ctx := browser(t, 30*time.Second)
	env, key := startInstanceWith(t, appview.Config{Scripts: appview.ScriptConfig{IndexSuggestionMinRecords: -1}})
	seed(t, env.Store, "app.test.like", 40)
	r := env.Do(t, "POST", "/admin/lexicons", map[string]any{
		"lexicon_json":      json.RawMessage(`{"lexicon":1,"id":"app.test.countLikes","defs":{"main":{"type":"query"}}}`),
		"target_collection": "app.test.like",
		"script":            `function handle() return {n = db.count{filter = {field = "n", op = ">", value = 9}}} end`,
	}, "Authorization", "Bearer "+key)
	if r.Status != 201 {
		t.Fatalf("lexicon: %d %s", r.Status, r.Raw)
	}
	client, _ := env.NewClient(t, apiclients.NewClient{})
	if r := env.Do(t, "GET", "/xrpc/app.test.countLikes", nil, "X-Client-Key", client.Key); r.Status != 200 || string(r.Raw) != `{"n":30}` {
		t.Fatalf("the scanning query: %d %s", r.Status, r.Raw)
	}

	var errs browsertest.ConsoleErrors
	errs.Listen(ctx)
	signIn(t, ctx, env, key)
	open(t, ctx, env, "/dashboard/indexes", "#declare-form")
	waitText(t, ctx, "#no-indexes", "No field indexes")
	waitText(t, ctx, "#suggestions tbody", "app.test.like")
	if err := chromedp.Do(ctx, chromedp.Click(`#suggestions button[aria-label="Declare a value index on app.test.like n"]`)); err != nil {
		t.Fatalf("declare the suggestion: %v", err)
	}
	waitText(t, ctx, "#notice", "Declared the value index on app.test.like n: it is being built.")
	waitText(t, ctx, "#indexes tbody tr td:nth-child(4)", "ready")
	waitTrue(t, ctx, "a full bar", `document.querySelector("#indexes progress").value === 1`)
	waitText(t, ctx, "#no-suggestions", "No suggestions")

	if err := chromedp.Do(ctx, chromedp.SendKeys("#collection", "app.test.like"), chromedp.SendKeys("#path", "a..b"),
		chromedp.Click("#declare-form button[type=submit]")); err != nil {
		t.Fatalf("declare a bad path: %v", err)
	}
	waitText(t, ctx, "#path-error", `path "a..b" is not a field path`)
	if err := chromedp.Do(ctx, clear("#path"), chromedp.SendKeys("#path", "n2"), chromedp.Click("#declare-form button[type=submit]")); err != nil {
		t.Fatalf("declare: %v", err)
	}
	waitText(t, ctx, "#notice", "Declared the value index on app.test.like n2")
	waitTrue(t, ctx, "two indexes", `document.querySelectorAll("#indexes tbody tr").length === 2`)

	if err := chromedp.Do(ctx, chromedp.Click(`#indexes button[aria-label="Drop the index on app.test.like n"]`), chromedp.WaitVisible("#confirm-text")); err != nil {
		t.Fatalf("drop: %v", err)
	}
	if msg := text(t, ctx, "#confirm-text"); !strings.Contains(msg, "read the whole collection again") {
		t.Errorf("the confirmation does not say what dropping costs: %q", msg)
	}
	confirm(t, ctx)
	waitText(t, ctx, "#notice", "Dropped the index on app.test.like n.")
	waitTrue(t, ctx, "one index", `document.querySelectorAll("#indexes tbody tr").length === 1`)
	if row := text(t, ctx, "#indexes tbody tr td:nth-child(2)"); row != "n2" {
		t.Errorf("the index left is %q, want n2", row)
	}
	noConsoleErrors(t, &errs, "error network: Failed to load resource: the server responded with a status of 400")
}
