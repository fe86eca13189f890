package dashboard_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lexview/lexview/internal/browsertest"
)

// TestBrowserScripts: an admin creates a script on the scripts page: a
// syntax error is refused with its line marked, the fixed source is
// saved; the list shows it and filters by trigger suffix; deleting it
// asks for confirmation.
func TestBrowserScripts(t *testing.T) {
	ctx := browser(t, 30*time.Second)
	env, key := startInstance(t)
	var errs browsertest.ConsoleErrors
	errs.Listen(ctx)
	signInOnce(t, ctx, env, key)
	open(t, ctx, env, "/dashboard/scripts", "#list-view")
	if msg := text(t, ctx, "#no-scripts"); msg != "No scripts yet." {
		t.Errorf("empty list: %q", msg)
	}

	err := chromedp.Do(ctx,
		chromedp.Click("#new-script"),
		chromedp.WaitVisible("#script-form"),
		chromedp.SetValue("#trigger-kind", "xrpc.query"),
		chromedp.SendKeys("#trigger-target", "app.test.hello"),
		chromedp.SendKeys("#description", "says hello"),
		setValue("#source", "function handle()\n  local greeting = \"hi\"\n  return {greeting = }\nend\n"),
		chromedp.Click("#save-script"),
		chromedp.WaitVisible("#source-error"),
	)
	if err != nil {
		t.Fatalf("save a syntax error: %v", err)
	}
	if msg := text(t, ctx, "#source-error"); !strings.HasPrefix(msg, "script has a syntax error: ") || !strings.Contains(msg, "line:3") {
		t.Errorf("syntax error: %q", msg)
	}
	if m := eval[string](t, ctx, `document.querySelector(".code-editor").dataset.errorLine + "/" + document.querySelector(".nums span.bad").textContent`); m != "3/3" {
		t.Errorf("marked line %q, want 3", m)
	}

	err = chromedp.Do(ctx,
		setValue("#source", "function handle()\n  return {greeting = \"hi\"}\nend\n"),
		chromedp.Click("#save-script"),
		chromedp.WaitVisible("#save-result"),
	)
	if err != nil {
		t.Fatalf("save: %v", err)
	}
	if msg := text(t, ctx, "#save-result"); msg != "Saved the script of xrpc.query:app.test.hello, revision 1." {
		t.Errorf("saved: %q", msg)
	}
	if eval[bool](t, ctx, `!!document.querySelector(".code-editor[data-error-line]")`) {
		t.Error("the saved source stays marked")
	}
	if at := location(t, ctx); !strings.HasPrefix(at, env.URL+"/dashboard/scripts?id=") {
		t.Errorf("after the save at %q", at)
	}

	open(t, ctx, env, "/dashboard/scripts", "#scripts")
	if row := strings.Join(strings.Fields(text(t, ctx, "#scripts tbody")), " "); !strings.HasPrefix(row, "xrpc.query:app.test.hello says hello 1") {
		t.Errorf("row %q", row)
	}
	err = chromedp.Do(ctx, chromedp.SendKeys("#suffix", "app.test.other"), chromedp.Click("#filter button"), chromedp.WaitVisible("#no-scripts"))
	if err != nil {
		t.Fatalf("filter: %v", err)
	}
	if msg := text(t, ctx, "#no-scripts"); msg != "No script's trigger ends with app.test.other." {
		t.Errorf("filtered: %q", msg)
	}
	err = chromedp.Do(ctx, clear("#suffix"), chromedp.SendKeys("#suffix", "test.hello"), chromedp.Click("#filter button"), chromedp.WaitVisible("#scripts"))
	if err != nil {
		t.Fatalf("filter: %v", err)
	}
	if err := chromedp.Do(ctx, chromedp.Click("#scripts tbody button.danger")); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if msg := text(t, ctx, "#confirm-text"); msg != "Delete the script of xrpc.query:app.test.hello? It stops running at once." {
		t.Errorf("confirmation %q", msg)
	}
	confirm(t, ctx)
	waitText(t, ctx, "#notice", "Deleted the script of xrpc.query:app.test.hello.")
	waitText(t, ctx, "#no-scripts", "No script's trigger ends with test.hello.")
	if eval[bool](t, ctx, `document.getElementById("no-scripts").hidden || !document.getElementById("scripts").hidden`) {
		t.Error("after the delete the list is still shown")
	}
	noConsoleErrors(t, &errs, "error network: Failed to load resource: the server responded with a status of 400")
}
