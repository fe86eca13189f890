package textclip_test

import (
	"testing"

	"github.com/lexview/lexview/internal/textclip"
)

func TestClip(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"a longer text", 8, "a longer…"},
		{"héllo", 2, "h…"}, // é is two bytes: not cut in two
	} {
		if got := textclip.Clip(c.in, c.n); got != c.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}
