package labelsub

import (
	"testing"

	"github.com/lexview/lexview/internal/netguard/netguardtest"
)

// TestDefaultClientIsGuarded: without an injected client, labelers are
// dialled through the guarded client, never an unguarded fallback.
func TestDefaultClientIsGuarded(t *testing.T) {
	t.Parallel()
	netguardtest.RequireGuarded(t, Options{}.withDefaults().HTTPClient)
}
