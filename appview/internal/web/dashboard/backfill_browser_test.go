package dashboard_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/appview/internal/web/dashboard"
	"github.com/lexview/lexview/backfill"
	"github.com/lexview/lexview/internal/backfilltest"
	"github.com/lexview/lexview/internal/browsertest"
	"github.com/lexview/lexview/storage/storagetest"
)

// backfillWorld is an instance whose accounts live on the backfill
// tests' PDS stand-in, which is also its relay.
type backfillWorld struct {
	env  *testenv.Env
	key  string
	pds  *backfilltest.PDS
	dids []string
}

// startBackfill starts an instance on SQLite with the record lexicon
// app.test.post, repos accounts on the PDS stand-in holding records each,
// and the backfill worker fetching one repository at a time; key is an
// hv_ key holding every permission.
func startBackfill(t *testing.T, repos, records int) *backfillWorld {
	t.Helper()
	pds := backfilltest.NewPDS(t)
	env := testenv.New(t, storagetest.SQLite(t), appview.Config{
		Security: appview.SecurityConfig{SessionSecret: sessionSecret},
		Ingest:   appview.IngestConfig{RelayURL: pds.URL()},
	})
	su := env.Bootstrap(t)
	r := su.Do(t, "POST", "/admin/api-keys", map[string]any{"name": "dashboard", "permissions": admins.All()})
	if r.Status != 201 {
		t.Fatalf("create key: %d %s", r.Status, r.Raw)
	}
	key, _ := r.Object(t)["key"].(string)
	lex := `{"lexicon":1,"id":"app.test.post","defs":{"main":{"type":"record","key":"tid","record":{"type":"object",` +
		`"required":["text"],"properties":{"text":{"type":"string"}}}}}}`
	if r := su.Do(t, "POST", "/admin/lexicons", map[string]any{"lexicon_json": lex, "backfill": false}); r.Status != 201 {
		t.Fatalf("upload lexicon: %d %s", r.Status, r.Raw)
	}
	if err := env.Store.PutSetting(context.Background(), backfill.SettingConcurrency, "1"); err != nil {
		t.Fatal(err)
	}
	w := &backfillWorld{env: env, key: key, pds: pds}
	for i := range repos {
		did := fmt.Sprintf("did:plc:dashboardbf%04d", i)
		env.PLC.Register(did, fmt.Sprintf("bf%d.test", i), pds.URL())
		pds.AddRepo(did, "app.test.post", records, "3kaaaaaaaaaa2")
		w.dids = append(w.dids, did)
	}
	return w
}

// holdAt makes the PDS stand-in hold the first listRecords request of the
// n-th repository listed until release is called (at the latest when the
// test ends); held receives once it holds.
func holdAt(t *testing.T, pds *backfilltest.PDS, n int) (held <-chan struct{}, release func()) {
	gate, reached := make(chan struct{}), make(chan struct{}, 1)
	var mu sync.Mutex
	seen := map[string]bool{}
	pds.OnListRecords(func(did, _, cursor string) {
		if cursor != "" {
			return
		}
		mu.Lock()
		seen[did] = true
		hold := len(seen) == n
		mu.Unlock()
		if hold {
			reached <- struct{}{}
			<-gate
		}
	})
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	t.Cleanup(release)
	return reached, release
}

// TestBrowserBackfill: a job naming an account that does not resolve is
// refused with that account listed under the accounts field; a job over
// six accounts of the PDS stand-in (two pages of records each) shows its
// progress live from the event stream (three of six fetched while the
// stand-in holds the fourth), is paused and resumed, and its fetch bar
// reaches completion with the job_completed event; the per-PDS breakdown,
// the repositories and the history show it; its details are deleted after
// a confirmation; a second job is cancelled after a confirmation; each
// job's stream is opened once and closed when the job ends.
func TestBrowserBackfill(t *testing.T) {
	ctx := browser(t, 45*time.Second)
	w := startBackfill(t, 6, 120)
	held, release := holdAt(t, w.pds, 4)

	var errs browsertest.ConsoleErrors
	errs.Listen(ctx)
	signIn(t, ctx, w.env, w.key)
	open(t, ctx, w.env, "/dashboard/backfill", "#create")
	waitText(t, ctx, "#no-jobs", "No backfill job yet")
	err := chromedp.Do(ctx,
		chromedp.WaitReady(`#bf-collection option[value="app.test.post"]`),
		choose("#bf-collection", "app.test.post"),
		chromedp.SetValue("#bf-accounts", strings.Join(append([]string{w.dids[0]}, "did:plc:nobodyhere", " "+w.dids[1]), "\n")),
		chromedp.Click("#bf-start"),
		chromedp.WaitVisible("#bf-accounts-error"),
	)
	if err != nil {
		t.Fatalf("unresolvable account: %v", err)
	}
	if msg := text(t, ctx, "#bf-accounts-error li"); msg != "did:plc:nobodyhere" {
		t.Errorf("unresolvable list: %q (%q)", msg, text(t, ctx, "#bf-accounts-error"))
	}
	if r := w.env.Do(t, "GET", "/admin/backfill/status", nil, testenv.Bearer(w.key)...); string(r.Raw) != "[]\n" && string(r.Raw) != "[]" {
		t.Fatalf("a refused request created a job: %s", r.Raw)
	}

	err = chromedp.Do(ctx,
		chromedp.SetValue("#bf-accounts", strings.Join(w.dids, "\n")),
		chromedp.Click("#bf-start"),
		chromedp.WaitVisible("#job"),
	)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	waitText(t, ctx, "#notice", "started")
	if hidden, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("bf-accounts-error").hidden`)); !hidden {
		t.Error("the unresolvable list stays after a job was started")
	}
	select {
	case <-held:
	case <-ctx.Done():
		t.Fatal("the backfill never reached the fourth repository")
	}
	// Live progress: three fetched, the fourth held.
	waitText(t, ctx, "#fetch-text", "3 of 6 fetched")
	waitTrue(t, ctx, "the fetch bar at 3 of 6", `(() => { const b = document.getElementById("bar-fetch"); return b.value === 3 && b.max === 6; })()`)
	waitText(t, ctx, "#job-live", "Live")
	if s := text(t, ctx, "#job-stage"); s != "resolving and fetching" {
		t.Errorf("stage: %q", s)
	}

	// Pause while the fourth is held: pausing, then paused once it is let go.
	if err := chromedp.Do(ctx, chromedp.Click("#job-pause")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#job-status", "pausing")
	release()
	waitText(t, ctx, "#job-status", "paused")
	waitText(t, ctx, "#job-eta", "paused")
	waitText(t, ctx, "#job-live", "Paused: the progress is kept")
	if err := chromedp.Do(ctx, chromedp.WaitVisible("#job-resume"), chromedp.Click("#job-resume")); err != nil {
		t.Fatalf("resume: %v", err)
	}

	// Completion, from the stream's job_completed message.
	waitText(t, ctx, "#job-live", "The job ended: completed.")
	ended := time.Now()
	jobID := strings.TrimPrefix(text(t, ctx, "#job-heading"), "Job ")
	waitTrue(t, ctx, "the fetch bar full", `(() => { const b = document.getElementById("bar-fetch"); return b.value === 6 && b.max === 6; })()`)
	if s := text(t, ctx, "#fetch-text"); s != "6 of 6 fetched (completed)" {
		t.Errorf("fetch: %q", s)
	}
	if s := text(t, ctx, "#job-records"); s != "720" {
		t.Errorf("records fetched: %q", s)
	}
	waitText(t, ctx, "#jobs tbody", "completed")
	waitText(t, ctx, "#pds tbody", w.pds.URL())
	waitTrue(t, ctx, "the PDS breakdown complete", fmt.Sprintf(
		`document.querySelector("#pds tbody").innerText.trim().split(/\s+/).join(" ") === %q`, w.pds.URL()+" 6 6 720"))
	waitTrue(t, ctx, "six fetched repositories", `document.querySelectorAll("#repos tbody tr").length === 6 &&
		[...document.querySelectorAll("#repos tbody tr")].every((r) => r.textContent.includes("fetched"))`)
	if n, err := w.env.Store.CountRecords(context.Background(), "app.test.post"); err != nil || n != 720 {
		t.Errorf("indexed %d records (%v), want 720", n, err)
	}

	// The job's details, deleted after the confirmation.
	if err := chromedp.Do(ctx, chromedp.WaitVisible("#job-delete-details"), chromedp.Click("#job-delete-details")); err != nil {
		t.Fatal(err)
	}
	confirm(t, ctx)
	waitText(t, ctx, "#notice", "were deleted")
	if err := chromedp.Do(ctx, chromedp.WaitVisible("#no-pds"), chromedp.WaitVisible("#no-repos")); err != nil {
		t.Fatalf("details after deletion: %v", err)
	}
	// A second job, held at its first repository and cancelled after the
	// confirmation.
	held, release = holdAt(t, w.pds, 1)
	err = chromedp.Do(ctx,
		chromedp.SetValue("#bf-accounts", w.dids[0]),
		chromedp.Click("#bf-start"),
	)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-held:
	case <-ctx.Done():
		t.Fatal("the second job never reached its repository")
	}
	waitTrue(t, ctx, "the new job shown", fmt.Sprintf(`(() => { const h = document.getElementById("job-heading").textContent;
		return h.startsWith("Job ") && !h.includes(%q); })()`, jobID))
	if err := chromedp.Do(ctx, chromedp.WaitVisible("#job-cancel"), chromedp.Click("#job-cancel")); err != nil {
		t.Fatal(err)
	}
	confirm(t, ctx)
	waitText(t, ctx, "#job-status", "cancelling")
	release()
	waitText(t, ctx, "#job-live", "The job ended: cancelled.")
	waitText(t, ctx, "#jobs tbody", "cancelled")

	// Each stream was closed at job_completed: one request per job, no
	// reconnection (Chromium would reconnect 3 s after the server ended it).
	time.Sleep(time.Until(ended.Add(3500 * time.Millisecond)))
	streams, err := chromedp.Run(ctx, chromedp.Evaluate[int](`performance.getEntriesByType("resource").filter((e) => e.name.endsWith("/events")).length`))
	if err != nil || streams != 2 {
		t.Errorf("%d requests of the progress streams (%v), want 2", streams, err)
	}
	noConsoleErrors(t, &errs, "error network: Failed to load resource: the server responded with a status of 400")
}

// TestBrowserBackfillEstimate: the progress arithmetic of the backfill
// page (pages/backfill-progress.js), run in the browser on a job whose
// counters are set by hand: the record and repository rates over the
// window, the estimate from the repositories left (failed ones counted
// as done), none while discovering, and old samples leaving the window.
func TestBrowserBackfillEstimate(t *testing.T) {
	ctx := browser(t, 10*time.Second)
	// The dashboard's own files suffice: no instance, no session.
	mux := http.NewServeMux()
	dashboard.New(dashboard.Options{Logger: slog.New(slog.DiscardHandler)}).Mount(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/dashboard/static/icon.svg")); err != nil {
		t.Fatal(err)
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]any](`(async () => {
		const { Progress } = await import("/dashboard/static/pages/backfill-progress.js");
		const job = { status: "running", stage: "resolving_and_fetching", total_repos: 100, processed_repos: 0, total_records: 0 };
		const p = new Progress(job);
		p.samples = [{ at: 0, records: 0, done: 0 }];
		p.job.processed_repos = 8;
		p.job.total_records = 1000;
		p.apply({ type: "repo_fetched", status: "failed" });
		p.apply({ type: "repo_fetched", status: "fetched" });
		const r = p.rates(10000);            // 10 s: 1000 records, 8 + 1 failed repositories
		const eta = p.eta(10000);             // 100 - 9 left at 0.9/s
		p.job.processed_repos = 59;
		p.job.total_records = 6000;
		const late = p.eta(70000);            // the 0 s sample has left the window
		const discovering = new Progress({ ...job, stage: "discovering_repos" }).eta(1000);
		p.apply({ type: "job_completed", status: "completed", stage: "completed", error: null,
			total_repos: 100, resolved_repos: 100, processed_repos: 99, total_records: 9000 });
		// A job whose counters carry failed_repos counts by them, not by
		// the failures it saw.
		const counted = new Progress({ ...job, processed_repos: 10, failed_repos: 5 });
		counted.apply({ type: "repo_fetched", status: "failed" });
		counted.apply({ type: "job_completed", status: "completed_with_errors", stage: "completed", error: null,
			total_repos: 100, resolved_repos: 100, processed_repos: 90, failed_repos: 10, total_records: 9000,
			failures: { unreachable_host: 7, account_deleted: 3 } });
		return [r.records, Math.round(r.repos * 10) / 10, Math.round(eta), late === null ? -1 : Math.round(late),
			discovering === null, p.job.status, p.remaining(), p.failed,
			counted.failedRepos(), counted.job.failures.unreachable_host, counted.job.status];
	})()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	// At 70 s the window holds the 10 s sample (9 done, 1000 records) and
	// the 70 s one (60 done): 51 repositories in 60 s, 40 left. The
	// window keeps the newest sample older than 30 s, so two remain.
	want := []any{float64(100), 0.9, float64(101), float64(47), true, "completed", nil, float64(1),
		float64(10), float64(7), "completed_with_errors"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("progress: got %v, want %v", got, want)
	}
}

// fakeEventSource replaces the tab's EventSource, in every document it
// opens from now on, by one the test drives: each stream is kept in
// window.streams with its url, readyState and whether it was closed.
func fakeEventSource() chromedp.Action[chromedp.Void] {
	const src = `window.streams = [];
window.EventSource = class extends EventTarget {
	static CONNECTING = 0; static OPEN = 1; static CLOSED = 2;
	constructor(url) { super(); this.url = url; this.readyState = 0; this.closed = false; window.streams.push(this); }
	close() { this.readyState = 2; this.closed = true; }
};`
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: src})
		return err
	})
}

// streamDo runs js with s bound to the page's n-th stream.
func streamDo(t *testing.T, ctx context.Context, n int, js string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`(() => { const s = window.streams[%d]; %s; return true; })()`, n, js))); err != nil {
		t.Fatalf("stream %d: %s: %v", n, js, err)
	}
}

// TestBrowserBackfillReconnect: the page's handling of its progress
// stream, driven through a stand-in EventSource over a real running job:
// messages update the bars; a dropped connection is left to the
// browser's own reconnection; a refused one is closed and, the job still
// running, opened again after a second; refused again once the job has
// finished, it is not opened again and the page shows the finished job
// from the job list.
func TestBrowserBackfillReconnect(t *testing.T) {
	ctx := browser(t, 30*time.Second)
	w := startBackfill(t, 2, 10)
	held, release := holdAt(t, w.pds, 1)
	r := w.env.Do(t, "POST", "/admin/backfill", map[string]any{"collection": "app.test.post", "dids": w.dids}, testenv.Bearer(w.key)...)
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Raw)
	}
	id, _ := r.Object(t)["id"].(string)
	<-held

	var errs browsertest.ConsoleErrors
	errs.Listen(ctx)
	if err := chromedp.Do(ctx, fakeEventSource()); err != nil {
		t.Fatal(err)
	}
	signIn(t, ctx, w.env, w.key)
	open(t, ctx, w.env, "/dashboard/backfill", "#job")
	waitTrue(t, ctx, "the stream opened", `window.streams.length === 1`)
	if url, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`window.streams[0].url`)); url != "/admin/backfill/"+id+"/events" {
		t.Fatalf("stream of %q", url)
	}
	streamDo(t, ctx, 0, `s.readyState = 1; s.dispatchEvent(new Event("open"))`)
	waitText(t, ctx, "#job-live", "Live")
	streamDo(t, ctx, 0, `s.dispatchEvent(new MessageEvent("event", {data: JSON.stringify({type: "job_counters", job_id: "`+id+`",
		status: "running", stage: "resolving_and_fetching", total_repos: 2, resolved_repos: 2, processed_repos: 1, total_records: 10})}))`)
	waitText(t, ctx, "#fetch-text", "1 of 2 fetched")

	// Dropped: the browser reconnects by itself.
	streamDo(t, ctx, 0, `s.readyState = 0; s.dispatchEvent(new Event("error"))`)
	waitText(t, ctx, "#job-live", "The connection dropped; reconnecting")
	// Refused: closed, and opened again after a second.
	streamDo(t, ctx, 0, `s.readyState = 2; s.dispatchEvent(new Event("error"))`)
	waitText(t, ctx, "#job-live", "The progress stream was refused; trying again in 1 s.")
	waitTrue(t, ctx, "the stream opened again", `window.streams.length === 2 && window.streams[0].closed && !window.streams[1].closed`)

	// Refused again after the job has finished: not reopened.
	release()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := w.env.Do(t, "GET", "/admin/backfill/status", nil, testenv.Bearer(w.key)...)
		if strings.Contains(string(r.Raw), `"status":"completed"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job did not complete: %s", r.Raw)
		}
		time.Sleep(20 * time.Millisecond)
	}
	streamDo(t, ctx, 1, `s.readyState = 2; s.dispatchEvent(new Event("error"))`)
	waitText(t, ctx, "#job-live", "The job has finished.")
	waitText(t, ctx, "#fetch-text", "2 of 2 fetched (completed)")
	time.Sleep(500 * time.Millisecond)
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`window.streams.length`)); err != nil || n != 2 {
		t.Errorf("%d streams (%v), want 2", n, err)
	}
	noConsoleErrors(t, &errs)
}
