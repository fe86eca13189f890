package dashboard_test

import (
	"regexp"
	"strings"
	"testing"
)

// control matches a form control with an id (radio buttons and
// checkboxes are labelled by the label around them).
var control = regexp.MustCompile(`<(input|select|textarea)\b([^>]*)\bid="([^"]+)"([^>]*)>`)

// describedBy matches an aria-describedby attribute.
var describedBy = regexp.MustCompile(`aria-describedby="([^"]+)"`)

// TestNetworkPages: the domains, service identity and labelers pages
// render their skeletons: every form control with an id has a label,
// every id a control's aria-describedby names exists (the error and hint
// boxes showError fills), and the page has the places its script fills.
func TestNetworkPages(t *testing.T) {
	for _, tc := range []struct {
		path string
		want []string
	}{
		{"/dashboard/domains", []string{`<form id="add-form">`, `<table id="domains">`, `id="url-error"`, `id="no-domains"`, `id="denied"`}},
		{"/dashboard/identity", []string{`<form id="mode-form">`, `<option value="did_plc">`, `<option value="attach_account">`,
			`id="sync-plc-button"`, `id="request-token"`, `<form id="token-form">`, `<table id="method-list">`,
			`<form id="method-form">`, `id="entry-list"`, `<form id="entry-form">`, `<table id="key-list">`, `id="rotate-key"`}},
		{"/dashboard/labelers", []string{`<form id="add-form">`, `<table id="labelers">`, `id="did-error"`, `id="no-labelers"`}},
	} {
		b := body(t, serve(t, tc.path))
		for _, w := range tc.want {
			if !strings.Contains(b, w) {
				t.Errorf("%s lacks %s", tc.path, w)
			}
		}
		n := 0
		for _, m := range control.FindAllStringSubmatch(b, -1) {
			attrs, id := m[2]+m[4], m[3]
			if strings.Contains(attrs, `type="radio"`) || strings.Contains(attrs, `type="checkbox"`) {
				continue
			}
			n++
			if !strings.Contains(b, `<label for="`+id+`"`) {
				t.Errorf("%s: control #%s has no label", tc.path, id)
			}
			for _, d := range describedBy.FindAllStringSubmatch(attrs, -1) {
				for _, ref := range strings.Fields(d[1]) {
					if !strings.Contains(b, `id="`+ref+`"`) {
						t.Errorf("%s: control #%s is described by #%s, which does not exist", tc.path, id, ref)
					}
				}
			}
		}
		if n == 0 {
			t.Errorf("%s: no form control found", tc.path)
		}
	}
}
