package dashboard_test

import (
	"regexp"
	"strings"
	"testing"
)

var (
	controlRe   = regexp.MustCompile(`<(input|select|textarea)\b[^>]*>`)
	idRe        = regexp.MustCompile(`\bid="([^"]+)"`)
	describedRe = regexp.MustCompile(`aria-describedby="([^"]+)"`)
	typeRe      = regexp.MustCompile(`\btype="([^"]+)"`)
)

// TestAccessPagesForms: on the users, admin API keys, API clients and
// script variables pages every form control has an id, a <label for> it,
// and error boxes its aria-describedby names that exist; ids are unique;
// the script variable's value is a password field the browser does not
// fill in; destructive buttons of the templates are styled as such.
func TestAccessPagesForms(t *testing.T) {
	for _, path := range []string{"/dashboard/users", "/dashboard/api-keys", "/dashboard/api-clients", "/dashboard/script-variables"} {
		r := serve(t, path)
		b := body(t, r)
		if r.StatusCode != 200 {
			t.Fatalf("%s: %d", path, r.StatusCode)
		}
		ids := map[string]int{}
		for _, m := range idRe.FindAllStringSubmatch(b, -1) {
			ids[m[1]]++
		}
		for id, n := range ids {
			if n > 1 {
				t.Errorf("%s: id %q is used %d times", path, id, n)
			}
		}
		controls := controlRe.FindAllString(b, -1)
		if len(controls) == 0 {
			t.Errorf("%s: no form control", path)
		}
		for _, c := range controls {
			if m := typeRe.FindStringSubmatch(c); m != nil && m[1] == "hidden" {
				continue
			}
			m := idRe.FindStringSubmatch(c)
			if m == nil {
				t.Errorf("%s: control without id: %s", path, c)
				continue
			}
			if !strings.Contains(b, `<label for="`+m[1]+`"`) {
				t.Errorf("%s: control %s has no label", path, m[1])
			}
			if d := describedRe.FindStringSubmatch(c); d != nil {
				for _, ref := range strings.Fields(d[1]) {
					if ids[ref] == 0 {
						t.Errorf("%s: control %s is described by %s, which is not on the page", path, m[1], ref)
					}
				}
			}
		}
	}
	b := body(t, serve(t, "/dashboard/script-variables"))
	if !strings.Contains(b, `<input type="password" id="var-value" name="value" autocomplete="new-password"`) {
		t.Error("the script variable's value is not a password field kept from autofill")
	}
	c := body(t, serve(t, "/dashboard/api-clients"))
	for _, id := range []string{"delete-client", "key-revoke-all"} {
		if !regexp.MustCompile(`<button type="button" class="danger" id="` + id + `" data-action="delete">`).MatchString(c) {
			t.Errorf("api-clients: the %s button is not marked destructive", id)
		}
	}
}
