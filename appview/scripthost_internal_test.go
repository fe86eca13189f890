package appview

import (
	"errors"
	"fmt"
	"testing"

	"github.com/lexview/lexview/oauth"
)

// TestSessionExpired: the script runtime is told a PDS write failed for
// an expired session exactly when the write path says so (a refused
// token refresh, however wrapped), and not for any other failure.
func TestSessionExpired(t *testing.T) {
	refused := &oauth.RefreshError{Status: 400, Code: "invalid_grant"}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{refused, true},
		{fmt.Errorf("writing: %w", refused), true},
		{errors.New("dial tcp: connection refused"), false},
	} {
		if got := sessionExpired(c.err); got != c.want {
			t.Errorf("sessionExpired(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
