// Package netguardtest checks in tests that an HTTP client is guarded.
package netguardtest

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/lexview/lexview/internal/netguard"
)

// RequireGuarded fails t unless c refuses to reach a server on the
// loopback address with netguard.ErrBlocked: the check that a component's
// default outbound client is the guarded one, not an unguarded fallback.
func RequireGuarded(t testing.TB, c *http.Client) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	resp, err := c.Get(srv.URL)
	if err == nil {
		resp.Body.Close()
	}
	if !errors.Is(err, netguard.ErrBlocked) {
		t.Fatalf("the client reached a loopback server (err %v): it is not guarded", err)
	}
}
