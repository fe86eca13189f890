package oauth

import (
	"testing"

	"github.com/lexview/lexview/internal/netguard/netguardtest"
)

// TestClientDefaultHTTPIsGuarded: without an injected client, PDS calls go
// through the guarded client, never an unguarded fallback.
func TestClientDefaultHTTPIsGuarded(t *testing.T) {
	netguardtest.RequireGuarded(t, NewClient(nil, ClientOptions{}).http)
}
