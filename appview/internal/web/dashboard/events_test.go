package dashboard_test

import (
	"strings"
	"testing"
)

// TestEventsPage: the event-log page's skeleton: the four filters with
// their error boxes, the live-tail switch and its status line, the table
// and "load older".
func TestEventsPage(t *testing.T) {
	checkPage(t, "/dashboard/events",
		`<title>Event log · Lexview</title>`, `data-page="events"`,
		`<a href="/dashboard/events" data-perm="events:read" aria-current="page">Event log</a>`,
		`id="f-type"`, `id="f-category"`, `id="f-severity"`, `id="f-subject"`,
		`aria-describedby="f-category-error"`, `id="f-category-error"`, `aria-describedby="f-severity-error"`,
		`<input type="checkbox" id="tail" role="switch">`, `id="tail-status"`, `id="events"`, `id="older"`)
	if b := body(t, serve(t, "/dashboard/events")); !strings.Contains(b, `href="/dashboard/static/pages/events.css"`) {
		t.Error("the page does not link its stylesheet")
	}
}
