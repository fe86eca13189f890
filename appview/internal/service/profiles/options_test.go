package profiles

import (
	"testing"

	"github.com/lexview/lexview/internal/netguard/netguardtest"
)

// TestDefaultClientIsGuarded: without an injected client, profiles are
// read from PDSes through the guarded client.
func TestDefaultClientIsGuarded(t *testing.T) {
	netguardtest.RequireGuarded(t, New(Options{}).http)
}
