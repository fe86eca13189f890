package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/internal/browsertest"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
)

// deadLetter stores an unresolved dead letter of collection app.test.post
// (rkey names it), created at minute i of the seed time.
func deadLetter(t *testing.T, s storage.Store, rkey string, i int, mod func(*storage.DeadLetter)) storage.DeadLetter {
	t.Helper()
	d := storage.DeadLetter{
		Kind: storage.DeadLetterRecord, LexiconID: "app.test.post", DID: "did:plc:dashboardtest", Collection: "app.test.post",
		RKey: rkey, URI: "at://did:plc:dashboardtest/app.test.post/" + rkey, Action: "create", Error: "script failed",
		Attempts: 3, Record: json.RawMessage(`{"text":"hello"}`),
		CID: "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm", Rev: "3kaaaaaaaaaa2",
		CreatedAt: time.Date(2026, 3, 4, 5, i, 0, 0, time.UTC),
	}
	if mod != nil {
		mod(&d)
	}
	stored, err := s.AddDeadLetter(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	return stored
}

// TestBrowserRetryDeadLetter: a record dead letter whose create script
// still fails is retried from its detail and the failure shown (one more
// attempt); once the script is fixed, a retry resolves it and the list
// says so. A label-arrival dead letter offers no retry (forced, the API's
// 400 shows). Selected with the keyboard, it is dismissed in bulk; then
// "retry all" in the filtered collection resolves the last one; each bulk
// action is confirmed and its result shown.
func TestBrowserRetryDeadLetter(t *testing.T) {
	ctx := browser(t, 30*time.Second)
	env, key := startInstance(t)

	doc := `{"lexicon":1,"id":"app.test.post","defs":{"main":{"type":"record","key":"tid","record":{"type":"object","properties":{"text":{"type":"string"}}}}}}`
	if _, err := env.App.Lexicons().Put(context.Background(), lexicon.Upload{Document: json.RawMessage(doc), Backfill: new(false)}); err != nil {
		t.Fatal(err)
	}
	script := func(source string) {
		t.Helper()
		r := env.Do(t, "POST", "/admin/scripts", map[string]any{"trigger": "record.create:app.test.post", "source": source}, testenv.Bearer(key)...)
		if r.Status != 201 && r.Status != 200 {
			t.Fatalf("script: %d %s", r.Status, r.Raw)
		}
	}
	script(`function handle() error("still broken") end`)
	rec := deadLetter(t, env.Store, "3kaaaaaaaaaa2", 2, nil)
	label := deadLetter(t, env.Store, "", 1, func(d *storage.DeadLetter) {
		d.Kind, d.Action, d.Record, d.URI, d.RKey = storage.DeadLetterLabel, "label", nil, "at://did:plc:dashboardtest", ""
		d.Error = "label script failed"
	})
	other := deadLetter(t, env.Store, "3kaaaaaaaaaa3", 0, nil)

	var errs browsertest.ConsoleErrors
	errs.Listen(ctx)
	signIn(t, ctx, env, key)
	open(t, ctx, env, "/dashboard/dead-letters", "#letters")
	waitText(t, ctx, "#count-line", "3 unresolved dead letters.")

	// The label-arrival dead letter: dismiss only.
	detailOf := func(id string) {
		t.Helper()
		sel := `#letters button[data-id="` + id + `"]`
		if err := chromedp.Do(ctx, chromedp.Click(sel), chromedp.WaitVisible("#detail")); err != nil {
			t.Fatalf("open the detail of %s: %v", id, err)
		}
	}
	visible := func(sel string) bool {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const n = document.querySelector(`+jsString(sel)+`); return !!n && n.checkVisibility(); })()`))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	detailOf(label.ID)
	waitText(t, ctx, "#detail-error", "label script failed")
	if visible("#detail-retry") || visible("#detail-reindex") || !visible("#detail-dismiss") || !visible("#detail-label-note") {
		t.Error("a label-arrival dead letter offers retry or reindex, or no dismiss")
	}
	// Forced anyway, the retry shows the API's refusal next to it.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { const b = document.getElementById("detail-retry"); b.hidden = false; b.click(); return true; })()`)); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#detail-action-error", "label-arrival dead letters cannot be retried")
	if err := chromedp.Do(ctx, chromedp.Click("#detail-close"), chromedp.WaitVisible("#letters")); err != nil {
		t.Fatal(err)
	}

	// The record dead letter: its record, a retry that fails again, then
	// one that resolves it once the script is fixed.
	detailOf(rec.ID)
	waitText(t, ctx, "#detail-record", `"text": "hello"`)
	if err := chromedp.Do(ctx, chromedp.Click("#detail-retry")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#detail-result", "Retry failed again:")
	waitText(t, ctx, "#detail-error", "still broken")
	waitText(t, ctx, "#detail-fields", "Attempts4") // one more than the 3 stored (the <dt> and <dd> texts run together)
	script(`function handle() return true end`)
	if err := chromedp.Do(ctx, chromedp.Click("#detail-retry")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#detail-result", "Retry succeeded: the dead letter is resolved.")
	waitText(t, ctx, "#detail-fields", "Resolved")
	if visible("#detail-actions") {
		t.Error("a resolved dead letter still offers actions")
	}
	if got, err := env.Store.GetDeadLetter(context.Background(), rec.ID); err != nil || got.ResolvedAt.IsZero() {
		t.Fatalf("after the retry: %+v %v", got, err)
	}
	if err := chromedp.Do(ctx, chromedp.Click("#detail-close"), chromedp.WaitVisible("#letters")); err != nil {
		t.Fatal(err)
	}
	row := `#letters tr[data-id="` + rec.ID + `"]`
	waitText(t, ctx, row, "Resolved")
	waitText(t, ctx, "#count-line", "2 unresolved dead letters.")

	// Bulk on the selection: the label-arrival one, selected with the
	// keyboard, can be dismissed but not retried; dismissed, confirmed.
	if err := chromedp.Do(ctx, chromedp.Focus(`#letters tr[data-id="`+label.ID+`"] input.pick`), chromedp.KeyEvent(" ")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#selected-count", "1 dead letter selected")
	if on, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("retry-selected").disabled && !document.getElementById("dismiss-selected").disabled`)); err != nil || !on {
		t.Errorf("a label-arrival selection: retry offered or dismiss not (%v)", err)
	}
	if err := chromedp.Do(ctx, chromedp.Click("#dismiss-selected")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#confirm-text", "Dismiss 1 selected dead letter?")
	confirm(t, ctx)
	waitText(t, ctx, "#bulk-result", "Dismissed 1 of 1 dead letter.")
	waitText(t, ctx, "#count-line", "1 unresolved dead letter.")

	// Bulk on every unresolved one of the filtered collection: the
	// script now works, so the retry resolves the last one.
	if err := chromedp.Do(ctx, chromedp.SendKeys("#f-collection", "app.test.post"), chromedp.Click("#filters button[type=submit]")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#all-legend", "Every unresolved dead letter in app.test.post")
	waitText(t, ctx, "#count-line", "1 unresolved dead letter in app.test.post.")
	if err := chromedp.Do(ctx, chromedp.Click("#retry-all")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#confirm-text", "Retry all 1 unresolved dead letter in app.test.post?")
	confirm(t, ctx)
	waitText(t, ctx, "#bulk-result", "Retried 1 dead letter: 1 resolved.")
	waitText(t, ctx, "#count-line", "0 unresolved dead letters in app.test.post.")
	if !visible("#no-letters") {
		t.Errorf("the emptied list: %q", strings.TrimSpace(textNow(ctx, "#letters-section")))
	}
	if got, err := env.Store.GetDeadLetter(context.Background(), other.ID); err != nil || got.ResolvedAt.IsZero() {
		t.Errorf("after retrying all: %+v %v", got, err)
	}
	noConsoleErrors(t, &errs, "error network: Failed to load resource: the server responded with a status of 400")
}

// TestBrowserDeadLettersReadOnly: an admin with dead-letters:read but not
// dead-letters:manage sees the dead letters without any action, with the
// reason at the top of the page; forcing a retry shows the 403 next to
// the button, naming the permission. The list pages by 50.
func TestBrowserDeadLettersReadOnly(t *testing.T) {
	ctx := browser(t, 15*time.Second)
	env, _ := startInstance(t)
	reader := env.AddAdmin(t, admins.DeadLettersRead, admins.APIKeysCreate)
	r := reader.Do(t, "POST", "/admin/api-keys", map[string]any{"name": "dashboard",
		"permissions": []string{string(admins.DeadLettersRead), string(admins.APIKeysCreate)}})
	if r.Status != 201 {
		t.Fatalf("create key: %d %s", r.Status, r.Raw)
	}
	key, _ := r.Object(t)["key"].(string)
	d := deadLetter(t, env.Store, "3kaaaaaaaaaa2", 0, nil)
	for i := range 50 { // newer: d is on the second page
		deadLetter(t, env.Store, fmt.Sprintf("3kbbbbbbbb%03d", i), 1+i, nil)
	}

	var errs browsertest.ConsoleErrors
	errs.Listen(ctx)
	signIn(t, ctx, env, key)
	open(t, ctx, env, "/dashboard/dead-letters#"+d.ID, "#detail")
	waitText(t, ctx, "#limits", "Retrying, reindexing and dismissing dead letters is unavailable: your account lacks the dead-letters:manage permission.")
	hidden, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("bulk").hidden && document.getElementById("detail-actions").hidden`))
	if err != nil || !hidden {
		t.Errorf("actions offered to a reader (%v)", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => { document.getElementById("detail-actions").hidden = false; document.getElementById("detail-retry").click(); return true; })()`)); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#detail-action-error", "Your account lacks the dead-letters:manage permission this needs")

	// The list, 50 a page: d comes with the next one.
	if err := chromedp.Do(ctx, chromedp.Click("#detail-close"), chromedp.WaitVisible("#more")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#count-line", "51 unresolved dead letters.")
	rows := `document.querySelectorAll("#letters tbody tr").length`
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](rows)); err != nil || n != 50 {
		t.Fatalf("first page: %d rows (%v)", n, err)
	}
	if err := chromedp.Do(ctx, chromedp.Click("#more")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, `#letters tr[data-id="`+d.ID+`"]`, "Unresolved")
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](rows)); err != nil || n != 51 {
		t.Errorf("after load more: %d rows (%v)", n, err)
	}
	if visible, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!document.getElementById("more").hidden`)); err != nil || visible {
		t.Errorf("load more still offered at the end (%v)", err)
	}
	noConsoleErrors(t, &errs, "error network: Failed to load resource: the server responded with a status of 403")
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
