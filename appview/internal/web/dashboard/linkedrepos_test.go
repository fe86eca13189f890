package dashboard_test

import (
	"strings"
	"testing"
)

// TestLinkedReposPage: the linked repos page renders its sections with
// labelled controls whose error boxes are named by aria-describedby, and
// is listed under Access for admins holding linked-repos:read.
func TestLinkedReposPage(t *testing.T) {
	b := body(t, serve(t, "/dashboard/linked-repos"))
	for _, want := range []string{
		`<title>Linked repos · Lexview</title>`, `data-page="linkedrepos"`,
		`<link rel="stylesheet" href="/dashboard/static/pages/linkedrepos.css">`,
		`<a href="/dashboard/linked-repos" data-perm="linked-repos:read" aria-current="page">Linked repos</a>`,
		`id="grant-list" class="stack"`, `id="invite-list" class="stack"`,
		`<label for="scopes">`, `aria-describedby="scopes-error scopes-hint"`,
		`<label for="handle">`, `aria-describedby="handle-error handle-hint"`,
		`<label for="reason">`, `aria-describedby="reason-error reason-hint"`,
		`<label for="invite-expires">`, `<option value="604800" selected>7 days</option>`, `<option value="2592000">30 days</option>`,
	} {
		if !strings.Contains(b, want) {
			t.Errorf("the linked repos page lacks %s", want)
		}
	}
	nav := b[strings.Index(b, `<nav`):strings.Index(b, `</nav>`)]
	access := nav[strings.Index(nav, ">Access<"):]
	if end := strings.Index(access, `<h2`); end > 0 {
		access = access[:end]
	}
	if !strings.Contains(access, `href="/dashboard/linked-repos"`) {
		t.Errorf("Linked repos is not under Access: %s", nav)
	}
}
