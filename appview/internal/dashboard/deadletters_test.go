package dashboard_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// controls matches a form control's tag and id.
var controls = regexp.MustCompile(`<(input|select|textarea)\b[^>]*\bid="([^"]+)"[^>]*>`)

// checkPage fetches a page and checks that it renders, holds each of want
// and that each of its form controls has a label (a <label for> or an
// aria-label).
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
	found := controls.FindAllStringSubmatch(b, -1)
	if len(found) == 0 {
		t.Fatalf("%s: no form controls found", path)
	}
	for _, m := range found {
		if !strings.Contains(b, `for="`+m[2]+`"`) && !strings.Contains(m[0], "aria-label=") {
			t.Errorf("%s: the %s #%s has no label", path, m[1], m[2])
		}
	}
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
