package dashboard_test

import (
	"strings"
	"testing"
)

// TestBackfillPage: the backfill page renders the job form (labelled,
// with the error boxes its script fills), the progress bars of the three
// stages, the breakdown, the repository list with its pager and the job
// history, in the Data group with backfill:read; its form and progress modules are
// served as JavaScript.
func TestBackfillPage(t *testing.T) {
	r := serve(t, "/dashboard/backfill")
	b := body(t, r)
	if r.StatusCode != 200 {
		t.Fatalf("%d", r.StatusCode)
	}
	for _, w := range []string{`<title>Backfill · Lexview</title>`, `data-page="backfill"`,
		`<a href="/dashboard/backfill" data-perm="backfill:read" aria-current="page">Backfill</a>`,
		`<form id="create-form"`, `<label for="bf-collection">`, `<label for="bf-accounts">`, `id="bf-accounts-error"`,
		`<progress id="bar-discover"`, `<progress id="bar-resolve"`, `<progress id="bar-fetch"`,
		`id="job-eta"`, `id="job-rate"`, `id="job-pause"`, `id="job-resume"`, `id="job-cancel"`,
		`id="pds"`, `id="repos"`, `id="repo-phase"`, `id="repos-next"`, `id="jobs"`, `id="delete-all-details"`,
		`<link rel="stylesheet" href="/dashboard/static/pages/backfill.css">`} {
		if !strings.Contains(b, w) {
			t.Errorf("the page lacks %s", w)
		}
	}
	checkControlsLabelled(t, "/dashboard/backfill", b)
	for _, path := range []string{"/dashboard/static/pages/backfill.js", "/dashboard/static/pages/backfill-create.js",
		"/dashboard/static/pages/backfill-progress.js"} {
		if s := serve(t, path); s.StatusCode != 200 || s.Header.Get("Content-Type") != "text/javascript; charset=utf-8" {
			t.Errorf("%s: %d %q", path, s.StatusCode, s.Header.Get("Content-Type"))
		}
	}
}
