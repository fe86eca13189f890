package dashboard_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/testing/labelertest"
	"github.com/lexview/lexview/internal/browsertest"
)

// TestBrowserLabelers: a stand-in labeler with one label emitted is added
// by DID and listed; the refresh shows its cursor reach the label and its
// connection in the last event; pausing it (the connection closes) shows
// it paused; deleting it (confirmed, the dialog saying its labels go too)
// empties the list and removes its label.
func TestBrowserLabelers(t *testing.T) {
	ctx := browser(t, 20*time.Second)
	env, key := startInstance(t)
	lab := labelertest.New(t, env.PLC, labelertest.Options{})
	const subject = "at://did:plc:ewvi7nxzyoun6zhxrhs64oiz/com.example.post/3kabc"
	lab.Emit(lab.Label(subject, "spam"))

	var errs browsertest.ConsoleErrors
	errs.Listen(ctx)
	signIn(t, ctx, env, key)
	open(t, ctx, env, "/dashboard/labelers", "#add-form")
	waitText(t, ctx, "#no-labelers", "No labelers")

	if err := chromedp.Do(ctx, chromedp.SendKeys("#did", lab.DID), chromedp.Click("#add-form button")); err != nil {
		t.Fatalf("add: %v", err)
	}
	waitText(t, ctx, "#labelers tbody", lab.DID)
	// The stream is replayed from the start: the cursor reaches the label,
	// and the connection shows as the last event.
	waitText(t, ctx, "#labelers tbody td.num", "1")
	waitText(t, ctx, "#labelers tbody tr td:nth-child(4)", "connected")
	if s := text(t, ctx, "#labelers tbody tr td:nth-child(2)"); s != "active" {
		t.Errorf("status %q, want active", s)
	}

	if err := chromedp.Do(ctx, chromedp.Click(`#labelers button[aria-label^="Pause"]`)); err != nil {
		t.Fatalf("pause: %v", err)
	}
	waitText(t, ctx, "#labelers tbody tr td:nth-child(2)", "paused")
	waitText(t, ctx, "#labelers tbody tr td:nth-child(6)", "Resume")
	for lab.Open() != 0 {
		select {
		case <-ctx.Done():
			t.Fatal("the connection stays open after the pause")
		case <-time.After(10 * time.Millisecond):
		}
	}

	if err := chromedp.Do(ctx, chromedp.Click(`#labelers button.danger`), chromedp.WaitVisible("#confirm-text")); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if msg := text(t, ctx, "#confirm-text"); !strings.Contains(msg, "removes every label it emitted") {
		t.Errorf("the confirmation does not say the labels go: %q", msg)
	}
	confirm(t, ctx)
	waitText(t, ctx, "#notice", "Deleted "+lab.DID)
	waitText(t, ctx, "#no-labelers", "No labelers")
	got, err := env.Store.LabelsFor(context.Background(), []string{subject}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(got[subject]) != 0 {
		t.Errorf("labels after the delete: %v", got[subject])
	}
	noConsoleErrors(t, &errs)
}

// TestBrowserLabelersReadOnly: an admin who may only read labelers sees
// the list without the add form or any button, and the page says which
// permissions the hidden actions need.
func TestBrowserLabelersReadOnly(t *testing.T) {
	ctx := browser(t, 15*time.Second)
	env, key := startInstance(t)
	if r := env.Do(t, "POST", "/admin/labelers", map[string]any{"did": labelertest.NewDID()}, "Authorization", "Bearer "+key); r.Status != 201 {
		t.Fatalf("add: %d %s", r.Status, r.Raw)
	}
	reader := env.AddAdmin(t, admins.LabelersRead, admins.APIKeysCreate)
	r := reader.Do(t, "POST", "/admin/api-keys", map[string]any{"name": "dashboard",
		"permissions": []string{string(admins.LabelersRead), string(admins.APIKeysCreate)}})
	if r.Status != 201 {
		t.Fatalf("create key: %d %s", r.Status, r.Raw)
	}
	readerKey, _ := r.Object(t)["key"].(string)

	var errs browsertest.ConsoleErrors
	errs.Listen(ctx)
	signIn(t, ctx, env, readerKey)
	open(t, ctx, env, "/dashboard/labelers", "#labelers")
	waitText(t, ctx, "#labelers tbody", "did:plc:")
	state, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]any](`({
		add: !document.getElementById("add").hidden,
		buttons: document.querySelectorAll("#labelers button:not(.copy)").length,
		limits: document.getElementById("limits").textContent,
		event: document.querySelector("#labelers tbody td:nth-child(4)").textContent,
	})`))
	if err != nil {
		t.Fatal(err)
	}
	if state["add"] != false || state["buttons"] != float64(0) {
		t.Errorf("a reader is offered actions: %v", state)
	}
	limits, _ := state["limits"].(string)
	for _, want := range []string{"Adding, pausing and resuming labelers is unavailable: your account lacks the labelers:create permission.",
		"Deleting labelers is unavailable: your account lacks the labelers:delete permission."} {
		if !strings.Contains(limits, want) {
			t.Errorf("limits %q lack %q", limits, want)
		}
	}
	if state["event"] != "needs events:read" {
		t.Errorf("last event column: %v", state["event"])
	}
	// The overview, where the sign-in lands, is refused to this admin.
	for _, e := range errs.All() {
		if !strings.HasSuffix(e, "status of 403 (Forbidden) ("+env.URL+"/admin/stats)") {
			t.Errorf("console error: %s", e)
		}
	}
}
