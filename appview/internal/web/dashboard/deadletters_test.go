package dashboard_test

import (
	"net/http"
	"strings"
	"testing"
)

// checkPage fetches a page and checks that it renders, holds each of want
// and has its form controls labelled (checkControlsLabelled).
func checkPage(t *testing.T, path string, want ...string) {
	t.Helper()
	r := serve(t, path)
	b := body(t, r)
	if r.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d", path, r.StatusCode)
	}
	for _, w := range want {
		if !strings.Contains(b, w) {
			t.Errorf("%s lacks %s", path, w)
		}
	}
	checkControlsLabelled(t, path, b)
}

// TestDeadLettersPage: the dead-letters page's skeleton: the filters, the
// bulk actions on the selection and on every unresolved dead letter, the
// table with its select-all box, paging, and the detail with its actions;
// errors have boxes next to their causes.
func TestDeadLettersPage(t *testing.T) {
	checkPage(t, "/dashboard/dead-letters",
		`<title>Dead letters · Lexview</title>`, `data-page="deadletters"`,
		`<a href="/dashboard/dead-letters" data-perm="dead-letters:read" aria-current="page">Dead letters</a>`,
		`id="f-collection"`, `aria-describedby="f-collection-error"`, `id="f-collection-error"`, `id="f-resolved"`,
		`id="count-line"`, `id="retry-selected"`, `id="reindex-selected"`, `id="dismiss-selected"`,
		`id="retry-all"`, `id="reindex-all"`, `id="dismiss-all"`, `id="bulk-result"`, `id="bulk-error"`,
		`id="select-page"`, `id="letters"`, `id="more"`,
		`id="detail-retry"`, `id="detail-reindex"`, `id="detail-dismiss"`, `id="detail-action-error"`, `id="detail-record"`)
	if b := body(t, serve(t, "/dashboard/static/pages/deadletters.css")); !strings.Contains(b, "#letters") {
		t.Error("the page's stylesheet is not served")
	}
	if b := body(t, serve(t, "/dashboard/dead-letters")); !strings.Contains(b, `href="/dashboard/static/pages/deadletters.css"`) {
		t.Error("the page does not link its stylesheet")
	}
}
