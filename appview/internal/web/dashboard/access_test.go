package dashboard_test

import (
	"regexp"
	"strings"
	"testing"
)

// TestAccessPagesForms: the script variable's value is a password field
// the browser does not fill in; the API clients page's destructive
// buttons are styled as such. (TestEveryPage checks the labels.)
func TestAccessPagesForms(t *testing.T) {
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
