package dashboard_test

import (
	"regexp"
	"strings"
	"testing"
)

// TestLexiconAndScriptPages: the lexicons and scripts pages render with
// their views, every form control a template holds has a label, and the
// modules they import are served as JavaScript.
func TestLexiconAndScriptPages(t *testing.T) {
	controls := regexp.MustCompile(`<(?:input|select|textarea)\b[^>]*\bid="([^"]+)"`)
	for path, views := range map[string][]string{
		"/dashboard/lexicons": {`id="list-view"`, `id="network-form"`, `id="detail"`, `id="playground"`, `id="lexicon-form"`,
			`<a href="/dashboard/lexicons" data-perm="lexicons:read" aria-current="page">Lexicons</a>`},
		"/dashboard/scripts": {`id="list-view"`, `id="filter"`, `id="script-form"`,
			`<a href="/dashboard/scripts" data-perm="scripts:read" aria-current="page">Scripts</a>`},
	} {
		b := body(t, serve(t, path))
		for _, v := range views {
			if !strings.Contains(b, v) {
				t.Errorf("%s lacks %s", path, v)
			}
		}
		ids := controls.FindAllStringSubmatch(b, -1)
		if len(ids) < 3 {
			t.Fatalf("%s: %d form controls", path, len(ids))
		}
		for _, m := range ids {
			if !strings.Contains(b, `<label for="`+m[1]+`"`) && !strings.Contains(b, `<label class="inline"><input id="`+m[1]+`"`) {
				t.Errorf("%s: the control #%s has no label", path, m[1])
			}
		}
	}
	for _, f := range []string{"editor.js", "pages/lexicons-network.js", "pages/lexicons-playground.js", "pages/lexicons.css", "pages/scripts.css"} {
		r := serve(t, "/dashboard/static/"+f)
		want := "text/javascript; charset=utf-8"
		if strings.HasSuffix(f, ".css") {
			want = "text/css; charset=utf-8"
		}
		if r.StatusCode != 200 || r.Header.Get("Content-Type") != want {
			t.Errorf("%s: %d %q", f, r.StatusCode, r.Header.Get("Content-Type"))
		}
	}
}
