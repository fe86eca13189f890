package dashboard_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/ingest"
	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/backfill"
	"github.com/lexview/lexview/internal/backfilltest"
	"github.com/lexview/lexview/internal/browsertest"
	"github.com/lexview/lexview/storage/storagetest"
)

// standIn is an event source whose status the test sets; it reads
// nothing.
type standIn struct {
	mu sync.Mutex
	st ingest.Status
}

func (s *standIn) Name() string { return "standin" }

func (s *standIn) Run(ctx context.Context, _ func() []string, _ <-chan struct{}, _ ingest.Sink) error {
	<-ctx.Done()
	return nil
}

func (s *standIn) Status() ingest.Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st
}

// set changes the status: its state, events read since start and lag.
func (s *standIn) set(state string, events int64, lag float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st = ingest.Status{Connected: state == ingest.StateConnected, State: state, Host: "standin.test", Events: events, Lag: lag}
}

// pathOf is a JavaScript expression: the d attribute of the path of
// series in the chart id, "" when there is none.
func pathOf(id, series string) string {
	return fmt.Sprintf(`(document.querySelector('#%s path[data-series=%q]')?.getAttribute("d") ?? "")`, id, series)
}

// TestBrowserOverviewCharts: the overview of an instance sampling its
// history every 250 ms, fed by a stand-in event source, shows the status
// (healthy, every part listed) and charts whose SVG paths hold the points
// sampled and change with a new sample (events per second); an XRPC
// method's calls get a series of their own and its latency is charted
// once picked; a failing script's errors are charted by kind; the day
// window is one click away; a running backfill job
// has its progress bar with its rate and estimated time left; the status
// indicator turns degraded, then failing, when the source stays
// disconnected, and degraded when it lags; another page shows the
// indicator too. No console errors.
func TestBrowserOverviewCharts(t *testing.T) {
	// 22 s on a quiet machine; the whole suite's load (the other browser
	// tests' tabs, fuzzing beside them) made it pass 40 s, and every wait
	// then read an empty page.
	ctx := browser(t, 120*time.Second)
	src := &standIn{}
	src.set(ingest.StateConnected, 0, 0.5)
	pds := backfilltest.NewPDS(t)
	env := testenv.New(t, storagetest.SQLite(t), appview.Config{
		Security: appview.SecurityConfig{SessionSecret: sessionSecret},
		Ingest:   appview.IngestConfig{EventSource: src, RelayURL: pds.URL()},
		Metrics:  appview.MetricsConfig{HistoryInterval: 250 * time.Millisecond},
	})
	su := env.Bootstrap(t)
	r := su.Do(t, "POST", "/admin/api-keys", map[string]any{"name": "dashboard", "permissions": admins.All()})
	if r.Status != 201 {
		t.Fatalf("create key: %d %s", r.Status, r.Raw)
	}
	key, _ := r.Object(t)["key"].(string)
	for _, doc := range []string{
		`{"lexicon":1,"id":"app.test.post","defs":{"main":{"type":"record","key":"tid","record":{"type":"object","properties":{"text":{"type":"string"}}}}}}`,
		`{"lexicon":1,"id":"app.test.ping","defs":{"main":{"type":"query"}}}`,
	} {
		if r := su.Do(t, "POST", "/admin/lexicons", map[string]any{"lexicon_json": doc, "backfill": false}); r.Status != 201 {
			t.Fatalf("upload lexicon: %d %s", r.Status, r.Raw)
		}
	}

	var errs browsertest.ConsoleErrors
	errs.Listen(ctx)
	signIn(t, ctx, env, key)
	if err := chromedp.Do(ctx, chromedp.WaitVisible("#charts"), chromedp.WaitVisible("#health")); err != nil {
		t.Fatalf("charts: %v", err)
	}
	waitText(t, ctx, "#health-text", "Healthy")
	waitTrue(t, ctx, "three health parts", `document.querySelectorAll("#health-parts li").length === 3`)
	waitText(t, ctx, `#health-parts li[data-part="ingestion"]`, "standin: connected")
	waitText(t, ctx, `#health-parts li[data-part="database"]`, "The database answered")

	// Events per second: a path through the points sampled, which a new
	// sample changes.
	src.set(ingest.StateConnected, 100, 0.5)
	waitTrue(t, ctx, "an events path through several points", pathOf("chart-events", "standin")+`.split("L").length > 2`)
	before := eval[string](t, ctx, pathOf("chart-events", "standin"))
	points := eval[string](t, ctx, `document.getElementById("chart-events").dataset.points`)
	src.set(ingest.StateConnected, 600, 0.5)
	waitTrue(t, ctx, "the events path redrawn", fmt.Sprintf(`%s !== %q && document.getElementById("chart-events").dataset.points !== %q`,
		pathOf("chart-events", "standin"), before, points))
	for _, id := range []string{"chart-lag", "chart-database"} {
		waitTrue(t, ctx, id+" drawn", fmt.Sprintf(`document.querySelector("#%s path.line")?.getAttribute("d").includes("L") === true`, id))
	}
	waitTrue(t, ctx, "the writer's committed and refused", pathOf("chart-writer", "committed")+` !== "" && `+pathOf("chart-writer", "refused")+` !== ""`)

	// XRPC calls: the method gets its series; its latency once picked.
	for range 5 {
		env.Do(t, "GET", "/xrpc/app.test.ping", nil)
	}
	waitTrue(t, ctx, "the method's calls", pathOf("chart-calls", "app.test.ping")+` !== ""`)
	waitTrue(t, ctx, "the method offered", `!!document.querySelector('#latency-method option[value="app.test.ping"]')`)
	if err := chromedp.Do(ctx, choose("#latency-method", "app.test.ping")); err != nil {
		t.Fatal(err)
	}
	waitTrue(t, ctx, "the method's latency", pathOf("chart-latency", "p50")+` !== "" && `+pathOf("chart-latency", "p99")+` !== ""`)

	// A failing script: its errors charted by kind.
	if r := su.Do(t, "POST", "/admin/lexicons", map[string]any{"backfill": false, "script": `function handle() error("boom") end`,
		"lexicon_json": `{"lexicon":1,"id":"app.test.boom","defs":{"main":{"type":"query"}}}`}); r.Status != 201 {
		t.Fatalf("upload the failing query: %d %s", r.Status, r.Raw)
	}
	client, _ := env.NewClient(t, apiclients.NewClient{})
	if r := env.Do(t, "GET", "/xrpc/app.test.boom", nil, "X-Client-Key", client.Key); r.Status < 500 {
		t.Fatalf("the failing query answered %d %s", r.Status, r.Raw)
	}
	waitTrue(t, ctx, "the script's errors per minute", pathOf("chart-problems", "script.error")+` !== ""`)

	// The day window, and back.
	if err := chromedp.Do(ctx, chromedp.Click("#window-day")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#charts-note", "min: the last day is stored")
	if pressed := eval[string](t, ctx, `document.getElementById("window-day").getAttribute("aria-pressed")`); pressed != "true" {
		t.Errorf("day button pressed: %s", pressed)
	}
	waitTrue(t, ctx, "the day's lag", pathOf("chart-lag", "standin")+` !== ""`)
	if err := chromedp.Do(ctx, chromedp.Click("#window-hour")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#charts-note", "0.25 s, since")

	// A backfill job held at its third repository of four: its progress
	// bar, rate and estimate.
	if err := env.Store.PutSetting(context.Background(), backfill.SettingConcurrency, "1"); err != nil {
		t.Fatal(err)
	}
	var dids []string
	for i := range 4 {
		did := fmt.Sprintf("did:plc:overviewbf%04d", i)
		env.PLC.Register(did, fmt.Sprintf("ov%d.test", i), pds.URL())
		pds.AddRepo(did, "app.test.post", 50, "3kaaaaaaaaaa2")
		dids = append(dids, did)
	}
	held, release := holdAt(t, pds, 3)
	if r := env.Do(t, "POST", "/admin/backfill", map[string]any{"collection": "app.test.post", "dids": dids}, testenv.Bearer(key)...); r.Status != 202 && r.Status != 201 {
		t.Fatalf("start backfill: %d %s", r.Status, r.Raw)
	}
	select {
	case <-held:
	case <-ctx.Done():
		t.Fatal("the backfill never reached the third repository")
	}
	waitTrue(t, ctx, "the progress bar at 2 of 4", `(() => { const b = document.getElementById("backfill-progress");
		return !document.getElementById("backfill-current").hidden && b.value === 2 && b.max === 4; })()`)
	waitText(t, ctx, "#backfill-speed", "repositories")
	waitText(t, ctx, "#backfill-speed", "left")
	waitText(t, ctx, `#health-parts li[data-part="backfill"]`, "is running")
	waitTrue(t, ctx, "the backfill's records per second", pathOf("chart-backfill", "records")+` !== ""`)
	release()
	waitTrue(t, ctx, "the backfill done", `document.getElementById("backfill-current").hidden`)

	// The source disconnected: degraded, then failing once it lasts; back
	// and lagging: degraded.
	src.set(ingest.StateWaiting, 600, 0.5)
	// Degraded first; on a loaded machine the page may poll only once the
	// disconnection has lasted, and show Failing at once.
	waitTrue(t, ctx, "degraded or failing", `/Degraded|Failing/.test(document.getElementById("health-text").textContent)`)
	waitText(t, ctx, `#health-parts li[data-part="ingestion"]`, "not connected (waiting)")
	waitText(t, ctx, "#health-text", "Failing")
	if s := eval[string](t, ctx, `document.getElementById("health").dataset.status`); s != "bad" {
		t.Errorf("indicator status: %q", s)
	}
	src.set(ingest.StateConnected, 600, 120)
	waitText(t, ctx, "#health-text", "Degraded")
	waitText(t, ctx, `#health-parts li[data-part="ingestion"]`, "2 min behind its stream")

	indicatorElsewhere(t, ctx, env, "Degraded", "ingestion: standin: 2 min behind")
	noConsoleErrors(t, &errs)
}

// indicatorElsewhere opens another page than the overview and waits for
// its status indicator, read on its own, to say status, with part in its
// title.
func indicatorElsewhere(t *testing.T, ctx context.Context, env *testenv.Env, status, part string) {
	t.Helper()
	open(t, ctx, env, "/dashboard/records", "#health")
	waitText(t, ctx, "#health-text", status)
	if title := eval[string](t, ctx, `document.getElementById("health").title`); !strings.Contains(title, part) {
		t.Errorf("indicator title: %q, want it to hold %q", title, part)
	}
}

// TestBrowserOverviewIdleSource: on a fresh instance, whose event source
// is idle because no lexicon gives it a collection to follow, the status
// says Healthy and why the source is idle, in the overview and in the
// indicator of another page: a newcomer's first look is no false alarm
// (how long it may stay idle: history's TestHealth). That no record is
// flagged is said once.
func TestBrowserOverviewIdleSource(t *testing.T) {
	ctx := browser(t, 30*time.Second)
	src := &standIn{}
	src.set(ingest.StateIdle, 0, 0)
	env, key := startInstanceWith(t, appview.Config{Ingest: appview.IngestConfig{EventSource: src},
		Metrics: appview.MetricsConfig{HistoryInterval: 50 * time.Millisecond}})
	var errs browsertest.ConsoleErrors
	errs.Listen(ctx)
	signIn(t, ctx, env, key)
	waitText(t, ctx, `#health-parts li[data-part="ingestion"]`, "standin: idle, no collection to follow yet")
	waitText(t, ctx, "#health-text", "Healthy")
	// No flagged record: said once, not counted as "0 record(s)" too.
	waitText(t, ctx, "#validation-mode", "Validation mode: hide")
	if mode, none := text(t, ctx, "#validation-mode"), text(t, ctx, "#no-flagged"); mode != "Validation mode: hide." || none != "No stored record has a validation error." {
		t.Errorf("validation mode %q, then %q", mode, none)
	}
	indicatorElsewhere(t, ctx, env, "Healthy", "ingestion: standin: idle")
	noConsoleErrors(t, &errs)
}

// TestBrowserOverviewDayAfterRestart: the day window of the history is
// stored and restored at start: after a restart on the same database,
// with no event source any more, the overview's day charts still show the
// lag the previous start sampled from its source.
func TestBrowserOverviewDayAfterRestart(t *testing.T) {
	ctx := browser(t, 30*time.Second)
	store := storagetest.SQLite(t)
	src := &standIn{}
	src.set(ingest.StateConnected, 0, 0.5)
	first := testenv.New(t, store, appview.Config{
		Security: appview.SecurityConfig{SessionSecret: sessionSecret},
		Ingest:   appview.IngestConfig{EventSource: src},
		Metrics:  appview.MetricsConfig{HistoryInterval: 20 * time.Millisecond},
	})
	// A point of the day window every 30 samples: wait for one stored
	// with the source's lag.
	deadline := time.Now().Add(time.Minute)
	for {
		b, err := store.GetBlob(context.Background(), "history.day")
		if err == nil && strings.Contains(string(b.Data), `"standin"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no day window stored with the source's lag: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := first.App.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	again := testenv.New(t, store, appview.Config{Security: appview.SecurityConfig{SessionSecret: sessionSecret}})
	key := claim(t, again)
	var errs browsertest.ConsoleErrors
	errs.Listen(ctx)
	signIn(t, ctx, again, key)
	if err := chromedp.Do(ctx, chromedp.WaitVisible("#charts"), chromedp.Click("#window-day")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#charts-note", "the last day is stored, and survives a restart")
	waitTrue(t, ctx, "the day's lag of the previous start", pathOf("chart-lag", "standin")+` !== ""`)
	// The hour window starts empty.
	r := again.Do(t, "GET", "/admin/stats/history?window=hour", nil, testenv.Bearer(key)...)
	if r.Status != 200 || strings.Contains(string(r.Raw), `"standin"`) {
		t.Errorf("the hour window after the restart: %d %s", r.Status, r.Raw)
	}
	noConsoleErrors(t, &errs)
}
