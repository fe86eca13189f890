package dashboard_test

import (
	"strings"
	"testing"
)

// TestPluginsPage: the plugins page renders its sections with labelled
// controls, links its own stylesheet and is listed under Network for
// admins holding plugins:read.
func TestPluginsPage(t *testing.T) {
	b := body(t, serve(t, "/dashboard/plugins"))
	for _, want := range []string{
		`<title>Plugins · Lexview</title>`, `data-page="plugins"`,
		`<link rel="stylesheet" href="/dashboard/static/pages/plugins.css">`,
		`<a href="/dashboard/plugins" data-perm="plugins:read" aria-current="page">Plugins</a>`,
		`id="encryption-off"`, `id="plugin-list" class="stack"`, `id="official-list" class="stack"`,
		`<label for="manifest-url">`, `id="manifest-url" name="url"`, `aria-describedby="manifest-url-error manifest-url-hint"`,
		`<label for="install-sha256">`, `<label for="reload-url">`, `<label for="secret-other-key">`,
		`<label for="secret-other-value">`, `<input type="password" id="secret-other-value"`,
	} {
		if !strings.Contains(b, want) {
			t.Errorf("the plugins page lacks %s", want)
		}
	}
	nav := b[strings.Index(b, `<nav`):strings.Index(b, `</nav>`)]
	network := nav[strings.Index(nav, ">Network<"):]
	if end := strings.Index(network, `<h2`); end > 0 {
		network = network[:end]
	}
	if !strings.Contains(network, `href="/dashboard/plugins"`) {
		t.Errorf("Plugins is not under Network: %s", nav)
	}
}
