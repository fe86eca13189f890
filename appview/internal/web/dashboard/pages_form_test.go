package dashboard_test

import (
	"regexp"
	"strings"
	"testing"
)

var (
	controlRe = regexp.MustCompile(`<(input|select|textarea)\b[^>]*>`)
	idRe      = regexp.MustCompile(`\bid="([^"]+)"`)
	typeRe    = regexp.MustCompile(`\btype="([^"]+)"`)
	describe  = regexp.MustCompile(`\baria-describedby="([^"]+)"`)
)

// checkControlsLabelled fails for a form control of page html without an
// id named by a <label for>, or an aria-label (a radio button or checkbox
// without an id may sit in its label); for an aria-describedby naming an
// element the page lacks; and for an id used twice. TestEveryPage runs it
// on every page.
func checkControlsLabelled(t *testing.T, path, html string) {
	t.Helper()
	ids := map[string]int{}
	for _, m := range idRe.FindAllStringSubmatch(html, -1) {
		ids[m[1]]++
	}
	for id, n := range ids {
		if n > 1 {
			t.Errorf("%s: id %q used %d times", path, id, n)
		}
	}
	for _, c := range controlRe.FindAllString(html, -1) {
		// Hidden fields need no label; a radio button or a checkbox may be
		// labelled by the <label> around it.
		if m := typeRe.FindStringSubmatch(c); m != nil && (m[1] == "hidden" || m[1] == "submit" ||
			((m[1] == "radio" || m[1] == "checkbox") && !strings.Contains(c, " id="))) {
			continue
		}
		if strings.Contains(c, "aria-label=") {
			continue
		}
		m := idRe.FindStringSubmatch(c)
		if m == nil || !strings.Contains(html, `<label for="`+m[1]+`"`) {
			t.Errorf("%s: control without a label: %s", path, c)
		}
		if d := describe.FindStringSubmatch(c); d != nil {
			for _, ref := range strings.Fields(d[1]) {
				if ids[ref] == 0 {
					t.Errorf("%s: %s is described by #%s, which the page lacks", path, c, ref)
				}
			}
		}
	}
}
