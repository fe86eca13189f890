package dashboard_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/internal/browsertest"
)

// recordLexicon and queryLexicon are uploaded through the editor.
const (
	recordLexicon = `{
  "lexicon": 1,
  "id": "app.test.post",
  "defs": {
    "main": {
      "type": "record",
      "key": "tid",
      "record": {"type": "object", "properties": {"n": {"type": "integer"}}}
    }
  }
}`
	queryLexicon = `{
  "lexicon": 1,
  "id": "app.test.listPosts",
  "defs": {
    "main": {
      "type": "query",
      "parameters": {
        "type": "params",
        "properties": {
          "limit": {"type": "integer", "minimum": 1, "maximum": 100},
          "did": {"type": "string", "format": "did"}
        }
      },
      "output": {"encoding": "application/json"}
    }
  }
}`
)

// setValue sets the form field sel to value, as typing would.
func setValue(sel, value string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		js := fmt.Sprintf(`(() => { const n = document.querySelector(%q); n.value = %q; n.dispatchEvent(new Event("input")); return true })()`, sel, value)
		_, err := chromedp.Evaluate[bool](js)(ctx, t)
		return err
	})
}

// signInOnce signs the tab in with an hv_ key, as the sign-in page's
// key form does but without typing the key into its password field
// (TestBrowserSignInWithKey covers the form), and signs it out when the
// test ends: the tabs of the shared browser share its cookies, and a
// later test may expect to start signed out.
func signInOnce(t *testing.T, ctx context.Context, env *testenv.Env, key string) {
	t.Helper()
	login := fmt.Sprintf(`fetch("/auth/login-key", {method: "POST", headers: {Authorization: "Bearer " + %q}}).then((r) => r.status)`, key)
	if err := chromedp.Do(ctx, chromedp.Navigate(env.URL+"/dashboard/signin"), chromedp.WaitReady("#signin-key")); err != nil {
		t.Fatalf("sign in: %v", err)
	}
	if status, err := chromedp.Run(ctx, chromedp.Evaluate[int](login, chromedp.EvalAwaitPromise)); err != nil || status != 200 {
		t.Fatalf("sign in: %d %v", status, err)
	}
	signOutAtEnd(t, ctx)
}

// signOutAtEnd signs the tab out when the test ends.
func signOutAtEnd(t *testing.T, ctx context.Context) {
	t.Cleanup(func() {
		js := `fetch("/auth/logout", {method: "POST", credentials: "same-origin"}).then((r) => r.status)`
		if status, err := chromedp.Run(ctx, chromedp.Evaluate[int](js, chromedp.EvalAwaitPromise)); err != nil || status >= 300 {
			t.Logf("sign out after the test: %d %v", status, err)
		}
	})
}

// TestBrowserLexiconPlayground: an admin uploads a record lexicon and a
// query lexicon through the editor, sees both listed, opens the query's
// detail, where the playground explains that the instance has no API
// client and creates one, and calls the query: the seeded records come
// back with the status and the timing. No console errors.
func TestBrowserLexiconPlayground(t *testing.T) {
	ctx := browser(t, 30*time.Second)
	env, key := startInstance(t)
	seed(t, env.Store, "app.test.post", 3)
	var errs browsertest.ConsoleErrors
	errs.Listen(ctx)
	signInOnce(t, ctx, env, key)

	save := func(doc, target, want string) {
		t.Helper()
		open(t, ctx, env, "/dashboard/lexicons?new=1", "#lexicon-form")
		err := chromedp.Do(ctx, setValue("#lexicon-json", doc), setValue("#target-collection", target), chromedp.Click("#save-lexicon"))
		if err != nil {
			t.Fatalf("save: %v", err)
		}
		waitText(t, ctx, "#save-result", want)
	}
	save(recordLexicon, "", "Saved app.test.post, revision 1.")
	save(queryLexicon, "app.test.post", "Saved app.test.listPosts, revision 1.")

	open(t, ctx, env, "/dashboard/lexicons", "#lexicons")
	rows := strings.Join(strings.Fields(text(t, ctx, "#lexicons tbody")), " ")
	for _, want := range []string{"app.test.listPosts query 1 no app.test.post", "app.test.post record 1 no"} {
		if !strings.Contains(rows, want) {
			t.Errorf("the list lacks %q: %q", want, rows)
		}
	}

	err := chromedp.Do(ctx, chromedp.Click(`#lexicons a[href="/dashboard/lexicons?id=app.test.listPosts"]`), chromedp.WaitVisible("#playground"))
	if err != nil {
		t.Fatalf("open the query: %v", err)
	}
	if got := text(t, ctx, "#pg-method"); got != "GET /xrpc/app.test.listPosts" {
		t.Errorf("method %q", got)
	}
	// A default instance has no API client: the playground says so and
	// offers to create one.
	waitText(t, ctx, "#pg-no-client-text", "no active API client")
	err = chromedp.Do(ctx, chromedp.Click("#pg-create-client"), chromedp.WaitNotVisible("#pg-no-client"))
	if err != nil {
		t.Fatalf("create a client: %v", err)
	}
	if opt := eval[string](t, ctx, `document.querySelector("#pg-client").selectedOptions[0].textContent`); !strings.HasPrefix(opt, "Dashboard playground (hvc_") {
		t.Errorf("chosen client %q", opt)
	}
	err = chromedp.Do(ctx, chromedp.SendKeys("#pg-param-limit", "2"), chromedp.Click("#pg-call"), chromedp.WaitVisible("#pg-result"))
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	if got := text(t, ctx, "#pg-status"); got != "200 OK" {
		t.Errorf("status %q, answer %q", got, text(t, ctx, "#pg-answer"))
	}
	if got := text(t, ctx, "#pg-url"); got != "GET /xrpc/app.test.listPosts?limit=2" {
		t.Errorf("called %q", got)
	}
	if got := text(t, ctx, "#pg-time"); !strings.HasSuffix(got, " ms") {
		t.Errorf("timing %q", got)
	}
	uris := eval[[]string](t, ctx, `JSON.parse(document.querySelector("#pg-answer pre").textContent).records.map((r) => r.uri)`)
	want := []string{"at://did:plc:dashboardtest/app.test.post/r002", "at://did:plc:dashboardtest/app.test.post/r001"}
	if strings.Join(uris, " ") != strings.Join(want, " ") {
		t.Errorf("answer records %q, want %q", uris, want)
	}
	noConsoleErrors(t, &errs)
}

// TestBrowserLexiconErrors: the editor shows a JSON parse error at its
// line and column before sending anything, the API's Lexicon language
// error at the path it names (the line of that member marked), and a
// Lua syntax error of the script at the line the check names.
func TestBrowserLexiconErrors(t *testing.T) {
	ctx := browser(t, 30*time.Second)
	env, key := startInstance(t)
	var errs browsertest.ConsoleErrors
	errs.Listen(ctx)
	signInOnce(t, ctx, env, key)
	open(t, ctx, env, "/dashboard/lexicons?new=1", "#lexicon-form")

	marked := func(editor string) string {
		t.Helper()
		return eval[string](t, ctx, fmt.Sprintf(`(() => {
			const w = document.querySelector(%q).closest(".code-editor");
			const bad = w.querySelector(".nums span.bad");
			return (w.dataset.errorLine || "") + "/" + (bad ? bad.textContent : "");
		})()`, editor))
	}

	malformed := "{\n  \"lexicon\": 1,\n  \"id\": \"app.test.post\"\n  \"defs\": {}\n}"
	if err := chromedp.Do(ctx, setValue("#lexicon-json", malformed), chromedp.Click("#save-lexicon"), chromedp.WaitVisible("#json-error")); err != nil {
		t.Fatalf("malformed: %v", err)
	}
	if msg := text(t, ctx, "#json-error"); !strings.HasPrefix(msg, "The JSON does not parse at line 4, column 3: ") {
		t.Errorf("malformed: %q", msg)
	}
	if m := marked("#lexicon-json"); m != "4/4" {
		t.Errorf("malformed: marked line %q, want 4", m)
	}

	invalid := strings.Replace(recordLexicon, `{"n": {"type": "integer"}}`, "{\n          \"n\": {\"type\": \"integr\"}\n        }", 1)
	if err := chromedp.Do(ctx, setValue("#lexicon-json", invalid), chromedp.Click("#save-lexicon")); err != nil {
		t.Fatalf("invalid: %v", err)
	}
	waitText(t, ctx, "#json-error", "invalid lexicon schema at defs.main.record.properties.n: ")
	if msg := text(t, ctx, "#json-error"); !strings.HasSuffix(msg, "(line 9)") {
		t.Errorf("invalid: %q", msg)
	}
	if m := marked("#lexicon-json"); m != "9/9" {
		t.Errorf("invalid: marked line %q, want 9 (%q)", m, strings.Split(invalid, "\n")[8])
	}

	script := "function handle()\n  local x = 1\n  return {\nend\n"
	if err := chromedp.Do(ctx, setValue("#script-source", script), chromedp.Click("#check-script"), chromedp.WaitVisible("#script-error")); err != nil {
		t.Fatalf("check: %v", err)
	}
	if msg := text(t, ctx, "#script-error"); !strings.HasPrefix(msg, "script has a syntax error: ") || !strings.Contains(msg, "line:4") {
		t.Errorf("check: %q", msg)
	}
	if m := marked("#script-source"); m != "4/4" {
		t.Errorf("check: marked line %q, want 4", m)
	}
	fixed := "function handle()\n  return {}\nend\n"
	if err := chromedp.Do(ctx, setValue("#script-source", fixed), chromedp.Click("#check-script"), chromedp.WaitVisible("#script-ok")); err != nil {
		t.Fatalf("check again: %v", err)
	}
	if m := marked("#script-source"); m != "/" {
		t.Errorf("a valid source stays marked: %q", m)
	}
	noConsoleErrors(t, &errs, "error network: Failed to load resource: the server responded with a status of 400")
}
