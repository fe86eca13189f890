package dashboard_test

import (
	"strings"
	"testing"
)

// TestNetworkPages: the domains, service identity and labelers pages
// render the places their scripts fill. (TestEveryPage checks the labels
// and the error boxes controls name.)
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
	}
}
