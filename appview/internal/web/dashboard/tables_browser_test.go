package dashboard_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/internal/backfilltest"
	"github.com/lexview/lexview/internal/browsertest"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// tableFaults is a JavaScript expression: what, in the tables of the
// page, does not read at a glance. A cell that may break a token (its
// overflow-wrap or word-break not normal), a timestamp written out
// instead of a <time> reading "3 min ago" with the absolute time as its
// title, a DID or AT URI not shown as an identifier (one line, cut with
// an ellipsis, its value as its title, a copy button), raw JSON shown
// unfolded.
const tableFaults = `(() => {
	const faults = [];
	const where = (n) => n.closest("table").id + ": ";
	for (const c of document.querySelectorAll("main table td, main table th")) {
		if (c.closest("table").hidden) continue;
		const s = getComputedStyle(c);
		if (s.overflowWrap !== "normal" || s.wordBreak !== "normal") faults.push(where(c) + "may break a token: " + c.textContent.trim());
		if (/\d{4}-\d\d-\d\dT\d\d:\d\d/.test(c.innerText)) faults.push(where(c) + "a timestamp written out: " + c.innerText.trim());
		for (const t of c.querySelectorAll("time")) {
			if (!t.title || !t.dateTime) faults.push(where(c) + "a time without its absolute value: " + t.outerHTML);
		}
		const walk = document.createTreeWalker(c, NodeFilter.SHOW_TEXT);
		for (let n = walk.nextNode(); n; n = walk.nextNode()) {
			if (!/(did:(plc|web):|at:\/\/)\S/.test(n.textContent)) continue;
			const id = n.parentElement.closest(".ident");
			if (!id || !id.querySelector(".ident-text[title]") || !id.querySelector("button.copy")) {
				faults.push(where(c) + "an identifier without its ellipsis, title and copy button: " + n.textContent.trim());
			}
		}
		for (const pre of c.querySelectorAll("pre")) {
			if (pre.checkVisibility()) faults.push(where(c) + "raw JSON unfolded: " + pre.textContent.slice(0, 60));
		}
	}
	return faults;
})()`

// TestBrowserTablesReadAtAGlance: the reading aids of the console hold on
// every table page, not only the records page
// (TestBrowserConsoleReading): on an instance with a lexicon, records of
// a long DID, an API client, a backfill job, a dead letter and event log
// entries, no table of the lexicons, records, backfill, dead letters,
// event log, users, admin API keys or API clients pages breaks a token,
// writes out a timestamp, shows a DID or AT URI other than as an
// identifier, or shows raw JSON unfolded.
func TestBrowserTablesReadAtAGlance(t *testing.T) {
	ctx := browser(t, 40*time.Second)
	env, key := startInstance(t)
	doc := `{"lexicon":1,"id":"app.test.post","defs":{"main":{"type":"record","key":"any","record":{"type":"object","properties":{"text":{"type":"string"}}}}}}`
	if r := env.Do(t, "POST", "/admin/lexicons", map[string]any{"lexicon_json": doc, "backfill": false}, testenv.Bearer(key)...); r.Status != 201 {
		t.Fatalf("upload lexicon: %d %s", r.Status, r.Raw)
	}
	did := "did:plc:" + strings.Repeat("tablesreadataglance", 3)
	if err := env.Store.ApplyBatch(context.Background(), storage.Batch{Ops: []storage.RecordOp{
		{Record: storagetest.Rec(did, "app.test.post", "r001", time.Now().Add(-time.Hour), map[string]any{"text": "hello"})},
	}}); err != nil {
		t.Fatal(err)
	}
	deadLetter(t, env.Store, "r002", 1, nil)
	if r := env.Do(t, "POST", "/admin/api-clients", map[string]any{"name": "notes app",
		"client_id_url": "https://notes.example/client-metadata.json", "client_uri": "https://notes.example",
		"redirect_uris": []string{"https://notes.example/callback"}}, testenv.Bearer(key)...); r.Status != 201 {
		t.Fatalf("create client: %d %s", r.Status, r.Raw)
	}
	pds := backfilltest.NewPDS(t)
	env.PLC.Register(did, "long.test", pds.URL())
	pds.AddRepo(did, "app.test.post", 2, "3kaaaaaaaaaa2")
	if r := env.Do(t, "POST", "/admin/backfill", map[string]any{"collection": "app.test.post", "dids": []string{did}},
		testenv.Bearer(key)...); r.Status != 202 && r.Status != 201 {
		t.Fatalf("start backfill: %d %s", r.Status, r.Raw)
	}

	var errs browsertest.ConsoleErrors
	errs.Listen(ctx)
	signIn(t, ctx, env, key)
	for _, page := range []struct{ path, rows string }{
		{"/dashboard/lexicons", "#lexicons tbody tr"},
		{"/dashboard/records", "#records tbody tr"},
		{"/dashboard/backfill", "#jobs tbody tr"},
		{"/dashboard/dead-letters", "#letters tbody tr"},
		{"/dashboard/events", "#events tbody tr"},
		{"/dashboard/users", "#users tbody tr"},
		{"/dashboard/api-keys", "#keys tbody tr"},
		{"/dashboard/api-clients", "#clients tbody tr"},
	} {
		open(t, ctx, env, page.path, "#main")
		waitTrue(t, ctx, page.path+" rows", `document.querySelectorAll("`+page.rows+`").length > 0`)
		for _, f := range eval[[]string](t, ctx, tableFaults) {
			t.Errorf("%s: %s", page.path, f)
		}
	}
	noConsoleErrors(t, &errs)
}
