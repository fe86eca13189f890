package dashboard_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/ingest"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/internal/browsertest"
	"github.com/lexview/lexview/storage"
)

// TestBrowserOverviewProblems: the overview shows problems where they
// happen. A waiting source says why its connection failed, when, and when
// it dials again; a record its lexicon refused is listed with its reason,
// its AT URI and a link to its lexicon, and one stored flagged is counted
// by lexicon and reason; the event log's errors are
// summarised by kind with their counts, each entry one line, its detail
// folded in a <details> with a whole script cut short. The app folder
// served (appview dev) shows its problems by file and line and the steps
// of its last change, and a fix clears the problems on the next refresh.
func TestBrowserOverviewProblems(t *testing.T) {
	ctx := browser(t, 45*time.Second)
	src := &standIn{}
	failedAt := time.Now().Add(-time.Minute).UTC()
	src.st = ingest.Status{State: ingest.StateWaiting, Host: "jetstream.test", LastError: "dial: connection refused",
		LastErrorAt: failedAt, RetryAt: time.Now().Add(time.Hour).UTC()}
	env, key := startInstanceWith(t, appview.Config{Ingest: appview.IngestConfig{EventSource: src}})
	doc := `{"lexicon":1,"id":"app.test.post","defs":{"main":{"type":"record","key":"any","record":{"type":"object","required":["text"],"properties":{"text":{"type":"string"}}}}}}`
	if r := env.Do(t, "POST", "/admin/lexicons", map[string]any{"lexicon_json": doc, "backfill": false}, testenv.Bearer(key)...); r.Status != 201 {
		t.Fatalf("upload lexicon: %d %s", r.Status, r.Raw)
	}
	// Refused in the validation mode reject; flagged in the default, hide.
	invalid := func(rkey string) []storage.Change {
		return []storage.Change{{Op: storage.OpCreate, DID: "did:plc:refused", Collection: "app.test.post", RKey: rkey,
			CID: "bafyreiaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", Record: json.RawMessage(`{"$type":"app.test.post"}`)}}
	}
	if r := env.Do(t, "PUT", "/admin/settings/validation.mode", map[string]any{"value": "reject"}, testenv.Bearer(key)...); r.Status != 200 {
		t.Fatalf("validation mode: %d %s", r.Status, r.Raw)
	}
	res, err := env.App.Writer().Write(context.Background(), "jetstream", invalid("3kref"))
	if err != nil || len(res.Rejected) != 1 {
		t.Fatalf("write the refused record: %+v, %v", res, err)
	}
	if r := env.Do(t, "DELETE", "/admin/settings/validation.mode", nil, testenv.Bearer(key)...); r.Status != 204 {
		t.Fatalf("validation mode: %d %s", r.Status, r.Raw)
	}
	if res, err := env.App.Writer().Write(context.Background(), "jetstream", invalid("3kflag")); err != nil || len(res.Flagged) != 1 {
		t.Fatalf("write the flagged record: %+v, %v", res, err)
	}
	script := "-- a long script\n" + strings.Repeat("local x = 1\n", 200)
	detail, _ := json.Marshal(map[string]any{"error": "attempt to index a nil value\nstack traceback: ...", "script_source": script})
	var entries []storage.Event
	for range 3 {
		entries = append(entries, storage.Event{Type: "script.error", Severity: "error", Subject: "record.create:app.test.post",
			Detail: detail, CreatedAt: time.Now()})
	}
	entries = append(entries, storage.Event{Type: "backfill.failed", Severity: "error", Subject: "job 1",
		Detail: json.RawMessage(`{"reason":"the relay answered 502"}`), CreatedAt: time.Now()})
	if err := env.Store.AppendEvents(context.Background(), entries); err != nil {
		t.Fatal(err)
	}

	applied, broken := time.Now().Add(-time.Minute).UTC(), time.Now().UTC()
	folder := appview.AppFolderStatus{Dir: "app", Watching: true, Prune: true, AppliedAt: &applied, ChangedAt: &applied,
		Changes:    []string{"+ lexicon app.test.post (record, new)", "~ lexicon app.test.list (query, revision 1 -> 2: script)"},
		Problems:   []appview.AppFolderProblem{{File: "scripts/app.test.list.lua", Line: 3, Message: "script has a syntax error: near 'end'"}},
		ProblemsAt: &broken}
	env.App.SetAppFolderStatus(folder)

	var errs browsertest.ConsoleErrors
	errs.Listen(ctx)
	signIn(t, ctx, env, key)
	if err := chromedp.Do(ctx, chromedp.WaitVisible("#sources"), chromedp.WaitVisible("#error-kinds")); err != nil {
		t.Fatalf("overview: %v", err)
	}

	// The app folder: its problem by file and line, its last change.
	waitText(t, ctx, "#app-folder-problem-list", "scripts/app.test.list.lua:3 script has a syntax error: near 'end'")
	waitText(t, ctx, "#app-folder-state", "app is watched")
	waitText(t, ctx, "#app-folder-change-list", "~ lexicon app.test.list (query, revision 1 -> 2: script)")

	// The source's failure beside its state.
	waitText(t, ctx, "#sources tbody", "waiting to jetstream.test")
	waitText(t, ctx, "#sources .source-error", "dial: connection refused")
	if at := eval[string](t, ctx, `document.querySelector("#sources .source-error time")?.getAttribute("datetime") ?? ""`); at != failedAt.Format(time.RFC3339Nano) {
		t.Errorf("the failure's time: %q, want %q", at, failedAt.Format(time.RFC3339Nano))
	}
	waitText(t, ctx, "#sources tbody", "retrying in")

	// The refused record with its reason and links.
	waitText(t, ctx, "#refusal-list tbody", "at://did:plc:refused/app.test.post/3kref")
	row := text(t, ctx, "#refusal-list tbody tr")
	if !strings.Contains(row, "jetstream") || !strings.Contains(row, "text") {
		t.Errorf("refusal row %q lacks its source or reason (the missing text)", row)
	}
	for sel, want := range map[string]string{
		`#refusal-list a[href^="/dashboard/lexicons"]`: "/dashboard/lexicons?id=app.test.post",
		`#refusal-list a[href^="/dashboard/records"]`:  "/dashboard/records?collection=app.test.post&did=did%3Aplc%3Arefused",
	} {
		if href := eval[string](t, ctx, `document.querySelector('`+sel+`')?.getAttribute("href") ?? ""`); href != want {
			t.Errorf("%s links to %q, want %q", sel, href, want)
		}
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("#refusal-list .ident button.copy").length`); n != 1 {
		t.Errorf("%d copy buttons beside the AT URI, want 1", n)
	}

	// The flagged record, counted by lexicon and reason, in the mode hide.
	waitText(t, ctx, "#flagged-list tbody", "app.test.post")
	if row := text(t, ctx, "#flagged-list tbody tr"); !strings.Contains(row, "text") || !strings.HasSuffix(strings.TrimSpace(row), "1") {
		t.Errorf("flagged row %q lacks its reason or count", row)
	}
	waitText(t, ctx, "#validation-mode", "Validation mode: hide. 1 stored record has a validation error.")

	// Errors by kind with counts; each entry one line, the detail folded
	// and the script cut.
	kinds := text(t, ctx, "#error-kinds tbody")
	if !strings.Contains(kinds, "script.error") || !strings.Contains(kinds, "backfill.failed") {
		t.Fatalf("error kinds: %q", kinds)
	}
	count := eval[string](t, ctx, `[...document.querySelectorAll("#error-kinds tbody tr")].find((r) => r.textContent.includes("script.error")).cells[1].textContent`)
	if count != "3" {
		t.Errorf("script.error counted %q times, want 3", count)
	}
	waitText(t, ctx, "#error-kinds tbody", "job 1: the relay answered 502")
	if n := eval[int](t, ctx, `document.querySelectorAll("#error-list li").length`); n != 4 {
		t.Errorf("%d latest entries listed, want 4", n)
	}
	if open := eval[bool](t, ctx, `[...document.querySelectorAll("#error-list details")].some((d) => d.open)`); open {
		t.Error("an entry's detail is shown unfolded")
	}
	folded := eval[string](t, ctx, `[...document.querySelectorAll("#error-list details pre")].map((p) => p.textContent).join("\n")`)
	if strings.Contains(folded, strings.Repeat("local x = 1\n", 20)) || !strings.Contains(folded, "more characters") {
		t.Errorf("the folded detail holds the whole script or does not say it was cut: %.300q", folded)
	}
	line := text(t, ctx, "#error-list li .error-line")
	if strings.Contains(line, "stack traceback") || strings.Contains(line, "local x") {
		t.Errorf("an entry's line is more than its summary: %q", line)
	}

	// The fix clears the problem on the next refresh.
	folder.Problems, folder.ProblemsAt = nil, nil
	env.App.SetAppFolderStatus(folder)
	waitTrue(t, ctx, "the app folder's problem cleared", `document.getElementById("app-folder-problems").hidden`)
	noConsoleErrors(t, &errs)
}
