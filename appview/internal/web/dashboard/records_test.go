package dashboard_test

import (
	"strings"
	"testing"
)

// TestRecordsPage: the records page renders its filters (labelled, their
// error boxes present), the table, the detail view and the actions the
// script gates by permission, in the Data group with records:read.
func TestRecordsPage(t *testing.T) {
	r := serve(t, "/dashboard/records")
	b := body(t, r)
	if r.StatusCode != 200 {
		t.Fatalf("%d", r.StatusCode)
	}
	for _, w := range []string{`<title>Records · Lexview</title>`, `data-page="records"`,
		`<a href="/dashboard/records" data-perm="records:read" aria-current="page">Records</a>`,
		`<form id="filters"`, `id="records"`, `id="detail"`, `id="detail-json"`, `id="labels"`,
		`id="delete-record"`, `id="delete-selected"`, `id="delete-collection"`, `id="next-page"`, `id="prev-page"`,
		`<link rel="stylesheet" href="/dashboard/static/pages/records.css">`} {
		if !strings.Contains(b, w) {
			t.Errorf("the page lacks %s", w)
		}
	}
	checkControlsLabelled(t, "/dashboard/records", b)
	for _, path := range []string{"/dashboard/static/pages/records.js", "/dashboard/static/pages/records.css"} {
		if s := serve(t, path); s.StatusCode != 200 {
			t.Errorf("%s: %d", path, s.StatusCode)
		}
	}
}
