package dashboard_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/lexview/lexview/internal/browsertest"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// colorScheme emulates the system's prefers-color-scheme (light or dark).
func colorScheme(scheme string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}},
		})
		return err
	})
}

// TestBrowserConsoleReading: the shared reading aids (format.js,
// console.css) on the records page: a long DID stays on one line, cut
// with an ellipsis, its full value in the title, with a copy button that
// writes it to the clipboard; tables break no token; a <time> reads
// "3 min ago" with the absolute time as its title; help is folded behind
// a "?"; the palette follows the system's dark mode.
func TestBrowserConsoleReading(t *testing.T) {
	ctx := browser(t, 20*time.Second)
	env, key := startInstance(t)
	did := "did:plc:" + strings.Repeat("jetstreamlongidentifier", 4)
	created := time.Now().Add(-3 * time.Minute).UTC().Truncate(time.Second)
	if err := env.Store.ApplyBatch(context.Background(), storage.Batch{Ops: []storage.RecordOp{
		{Record: storagetest.Rec(did, "app.test.post", "r001", created, map[string]any{"n": 1})},
	}}); err != nil {
		t.Fatal(err)
	}
	var errs browsertest.ConsoleErrors
	errs.Listen(ctx)
	signIn(t, ctx, env, key)
	open(t, ctx, env, "/dashboard/records", "#records")
	waitTrue(t, ctx, "the record's row", `document.querySelectorAll("#records tbody tr").length === 1`)

	// The DID: one line, cut, the whole value in the title.
	type identView struct {
		Title, Text, WhiteSpace, Overflow string
		Cut                               bool
		Lines                             int
		Copy                              bool
	}
	const cell = `document.querySelector("#records tbody tr .ident")`
	got := eval[identView](t, ctx, `(() => { const w = `+cell+`; const s = w.querySelector(".ident-text");
		const cs = getComputedStyle(s); const r = document.createRange(); r.selectNodeContents(s);
		const lines = new Set([...r.getClientRects()].map((q) => Math.round(q.top))).size;
		return {title: s.title, text: s.textContent, whiteSpace: cs.whiteSpace, overflow: cs.textOverflow,
			cut: s.scrollWidth > s.clientWidth, lines, copy: !!w.querySelector("button.copy")}; })()`)
	if got.Title != did || got.Text != did {
		t.Errorf("DID cell: title %q, text %q, want %q", got.Title, got.Text, did)
	}
	if got.WhiteSpace != "nowrap" || got.Overflow != "ellipsis" || !got.Cut || got.Lines != 1 {
		t.Errorf("DID cell not one line cut with an ellipsis: %+v", got)
	}
	if !got.Copy {
		t.Fatal("DID cell has no copy button")
	}
	// No table cell breaks a token.
	if bad := eval[[]string](t, ctx, `[...document.querySelectorAll("#records td, #records th")].
		filter((c) => { const s = getComputedStyle(c); return s.overflowWrap !== "normal" || s.wordBreak !== "normal"; }).
		map((c) => c.textContent)`); len(bad) != 0 {
		t.Errorf("cells that may break a token: %q", bad)
	}

	// The copy button writes the DID to the clipboard (a stand-in that
	// records what it is given: headless Chromium has no clipboard).
	eval[bool](t, ctx, `(() => { Object.defineProperty(navigator, "clipboard", {configurable: true,
		value: {writeText: async (v) => { window.copied = v; }}}); return true; })()`)
	if err := chromedp.Do(ctx, chromedp.Click(`#records tbody tr .ident button.copy`)); err != nil {
		t.Fatal(err)
	}
	waitTrue(t, ctx, "the DID copied", `window.copied === `+jsString(did))
	waitTrue(t, ctx, "the copy button saying so", cell+`.querySelector("button.copy").dataset.copied === "yes"`)

	// The creation time: relative text, the absolute time on hover.
	type timeView struct{ Text, Title, Datetime string }
	tv := eval[timeView](t, ctx, `(() => { const n = document.querySelector("#records tbody tr td:nth-child(4) time");
		return {text: n.textContent, title: n.title, datetime: n.dateTime}; })()`)
	if !regexp.MustCompile(`^[34] min ago$`).MatchString(tv.Text) {
		t.Errorf("created time reads %q, want about 3 min ago", tv.Text)
	}
	at, err := time.Parse(time.RFC3339Nano, tv.Datetime)
	if err != nil || !at.Equal(created) || !strings.Contains(tv.Title, tv.Datetime) || !strings.Contains(tv.Title, created.Format("2006")) {
		t.Errorf("created time: title %q, datetime %q (%v), want the absolute time %s", tv.Title, tv.Datetime, err, created)
	}

	// The shared helper's wording for the future, the past and long ago.
	eval[bool](t, ctx, `(() => { import("/dashboard/static/format.js").then((m) => { const now = Date.UTC(2026, 0, 31, 12);
		window.relatives = [m.relative(now - 2000, now), m.relative(now + 2 * 3600e3, now), m.relative(now - 3 * 86400e3, now),
			m.relative(now - 90 * 86400e3, now) === new Intl.DateTimeFormat(undefined, {dateStyle: "medium"}).format(new Date(now - 90 * 86400e3))]; });
		return true; })()`)
	waitTrue(t, ctx, "the relative wordings", `JSON.stringify(window.relatives) === '["just now","in 2 h","3 d ago",true]'`)

	// The palette follows the system.
	bg := `getComputedStyle(document.documentElement).backgroundColor`
	light := eval[string](t, ctx, bg)
	if err := chromedp.Do(ctx, colorScheme("dark")); err != nil {
		t.Fatal(err)
	}
	if dark := eval[string](t, ctx, bg); dark != "rgb(21, 23, 27)" || dark == light {
		t.Errorf("background under prefers-color-scheme: dark is %s (light %s)", dark, light)
	}
	if err := chromedp.Do(ctx, colorScheme("light")); err != nil {
		t.Fatal(err)
	}
	if again := eval[string](t, ctx, bg); again != light {
		t.Errorf("background back in light mode is %s, want %s", again, light)
	}

	// Help is folded behind a "?" until asked for.
	open(t, ctx, env, "/dashboard/events", "#log")
	help := `document.querySelector("details.help")`
	if eval[bool](t, ctx, help+`.open || `+help+`.querySelector("p").checkVisibility()`) {
		t.Error("the event log's help is shown before it is asked for")
	}
	if err := chromedp.Do(ctx, chromedp.Click("details.help > summary")); err != nil {
		t.Fatal(err)
	}
	waitTrue(t, ctx, "the help unfolded", help+`.querySelector("p").checkVisibility()`)
	noConsoleErrors(t, &errs)
}
