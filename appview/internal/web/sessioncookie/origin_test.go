package sessioncookie_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lexview/lexview/appview/internal/web/sessioncookie"
	"github.com/lexview/lexview/storage"
)

// oneDomain is a DomainMatcher knowing https://app.example.com.
type oneDomain struct{}

func (oneDomain) Match(_ context.Context, host string) (storage.Domain, bool) {
	if strings.EqualFold(host, "app.example.com") {
		return storage.Domain{URL: "https://app.example.com"}, true
	}
	return storage.Domain{}, false
}

// TestSameSiteExactOrigin: only the exact serialized origin of a
// registered domain passes as Origin; a trailing path, slash, query,
// fragment or credentials fail; the Referer is reduced to its origin.
func TestSameSiteExactOrigin(t *testing.T) {
	for _, c := range []struct {
		origin, referer string
		want            bool
	}{
		{"https://app.example.com", "", true},
		{"https://APP.example.com", "", true},
		{"https://app.example.com/", "", false},
		{"https://app.example.com/dashboard", "", false},
		{"https://app.example.com?x=1", "", false},
		{"https://app.example.com#f", "", false},
		{"https://user@app.example.com", "", false},
		{"http://app.example.com", "", false},
		{"https://evil.example.com", "", false},
		{"", "https://app.example.com/dashboard/records?x=1", true},
		{"null", "https://app.example.com/", true},
		{"", "https://evil.example.com/app.example.com", false},
		{"", "", false},
	} {
		r := httptest.NewRequest("POST", "https://app.example.com/admin/x", nil)
		if c.origin != "" {
			r.Header.Set("Origin", c.origin)
		}
		if c.referer != "" {
			r.Header.Set("Referer", c.referer)
		}
		if got := sessioncookie.SameSite(r, oneDomain{}); got != c.want {
			t.Errorf("Origin %q Referer %q: %v, want %v", c.origin, c.referer, got, c.want)
		}
	}
}
