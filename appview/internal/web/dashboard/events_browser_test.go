package dashboard_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lexview/lexview/internal/browsertest"
	"github.com/lexview/lexview/storage"
)

// appendEvent records one event-log entry, created now.
func appendEvent(t *testing.T, s storage.Store, typ, severity, subject string) {
	t.Helper()
	err := s.AppendEvents(context.Background(), []storage.Event{{
		Type: typ, Severity: severity, Subject: subject, Detail: []byte(`{"why":"` + typ + `"}`), CreatedAt: time.Now(),
	}})
	if err != nil {
		t.Fatal(err)
	}
}

// rowTypes returns the type column of the event log's rows, top down.
func rowTypes(t *testing.T, ctx context.Context) []string {
	t.Helper()
	types, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`[...document.querySelectorAll("#events tbody tr td:nth-child(2)")].map((td) => td.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	return types
}

// TestBrowserEventLog: a page of 100 entries and the older ones on
// demand; the category filter narrows the list to its
// category and the severity filter further (and the query string keeps
// them); with the live tail on, an entry recorded after the page opened
// appears at the top while one outside the filters does not; a detail
// opens as JSON; a subject's button filters by it; a burst larger than
// a page replaces the list.
func TestBrowserEventLog(t *testing.T) {
	ctx := browser(t, 30*time.Second)
	env, key := startInstance(t)
	noise := make([]storage.Event, 100)
	for i := range noise {
		noise[i] = storage.Event{Type: "noise.tick", Severity: "info", CreatedAt: time.Now()}
	}
	if err := env.Store.AppendEvents(context.Background(), noise); err != nil {
		t.Fatal(err)
	}
	appendEvent(t, env.Store, "lexicon.created", "info", "app.test.post")
	appendEvent(t, env.Store, "lexicon.script_invalid", "warn", "app.test.post")
	appendEvent(t, env.Store, "script.created", "info", "record.create:app.test.post")

	var errs browsertest.ConsoleErrors
	errs.Listen(ctx)
	signIn(t, ctx, env, key)
	open(t, ctx, env, "/dashboard/events", "#events")
	// A page of 100: the three and 97 of the noise; the older ones, the
	// instance's own (user.bootstrapped, api_key.created, ...) among them,
	// on the next.
	first := rowTypes(t, ctx)
	if len(first) != 100 || strings.Join(first[:4], " ") != "script.created lexicon.script_invalid lexicon.created noise.tick" {
		t.Fatalf("first page: %d rows, %q", len(first), first[:min(len(first), 4)])
	}
	if err := chromedp.Do(ctx, chromedp.Click("#older")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#events tbody", "user.bootstrapped")
	if all := strings.Join(rowTypes(t, ctx), " "); !strings.Contains(all, "api_key.created") || strings.Count(all, "noise.tick") != 100 {
		t.Fatalf("after loading older: %q", all)
	}
	if visible, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!document.getElementById("older").hidden`)); err != nil || visible {
		t.Errorf("load older still offered at the end (%v)", err)
	}

	if err := chromedp.Do(ctx, chromedp.SendKeys("#f-category", "lexicon"), chromedp.Click("#filters button[type=submit]")); err != nil {
		t.Fatal(err)
	}
	waitRows := func(want ...string) {
		t.Helper()
		for {
			got := rowTypes(t, ctx)
			if strings.Join(got, " ") == strings.Join(want, " ") {
				return
			}
			select {
			case <-ctx.Done():
				t.Fatalf("rows %q, want %q", got, want)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	waitRows("lexicon.script_invalid", "lexicon.created")
	if err := chromedp.Do(ctx, chromedp.SetValue("#f-severity", "warn"), chromedp.Click("#filters button[type=submit]")); err != nil {
		t.Fatal(err)
	}
	waitRows("lexicon.script_invalid")
	if at := location(t, ctx); !strings.HasSuffix(at, "/dashboard/events?category=lexicon&severity=warn") {
		t.Errorf("the filters are not in the address: %s", at)
	}

	// The live tail: a matching entry recorded after the page opened
	// appears; one of another category does not.
	if err := chromedp.Do(ctx, chromedp.Click("#tail")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#tail-status", "Live")
	appendEvent(t, env.Store, "user.deleted", "warn", "did:plc:gone")
	appendEvent(t, env.Store, "lexicon.script_invalid", "warn", "app.test.later")
	waitText(t, ctx, "#events tbody tr:first-child", "app.test.later")
	waitRows("lexicon.script_invalid", "lexicon.script_invalid")
	waitText(t, ctx, "#tail-status", "1 new entry since the tail started.")

	// The newest entry's detail, as JSON.
	if err := chromedp.Do(ctx, chromedp.Click("#events tbody tr:first-child summary")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#events tbody tr:first-child pre.json", `"why": "lexicon.script_invalid"`)

	// A subject narrows the list to its entries.
	if err := chromedp.Do(ctx, chromedp.Click("#events tbody tr:first-child td.subject button")); err != nil {
		t.Fatal(err)
	}
	waitRows("lexicon.script_invalid")
	waitText(t, ctx, "#events tbody", "app.test.later")
	if v, err := chromedp.Run(ctx, chromedp.Value("#f-subject")); err != nil || v != "app.test.later" {
		t.Errorf("subject filter %q (%v)", v, err)
	}

	// More new entries than one read holds: the newest page replaces the
	// list, and the older ones stay reachable.
	burst := make([]storage.Event, 101)
	for i := range burst {
		burst[i] = storage.Event{Type: "lexicon.script_invalid", Severity: "warn", Subject: "app.test.later", CreatedAt: time.Now()}
	}
	if err := env.Store.AppendEvents(context.Background(), burst); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#tail-status", "More entries arrived than one read holds: the newest 100 replaced the list.")
	if n := len(rowTypes(t, ctx)); n != 100 {
		t.Errorf("after the burst: %d rows", n)
	}
	if visible, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!document.getElementById("older").hidden`)); err != nil || !visible {
		t.Errorf("load older not offered after the burst (%v)", err)
	}
	noConsoleErrors(t, &errs)
}
