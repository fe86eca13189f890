package appview

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/storage"
)

// TestPublicErrorKinds: every kind a service reports, but Internal, has a
// public ErrorKind; publicError turns a failure of that kind, wrapped or
// not, into an *Error matched by that kind alone, and leaves internal
// failures as they are.
func TestPublicErrorKinds(t *testing.T) {
	seen := map[ErrorKind]bool{}
	for k := fail.Internal + 1; !strings.HasPrefix(k.String(), "kind("); k++ {
		kind, ok := errorKinds[k]
		if !ok {
			t.Errorf("fail kind %q has no public kind", k)
			continue
		}
		if seen[kind] {
			t.Errorf("public kind %q stands for two fail kinds", kind)
		}
		seen[kind] = true
		err := publicError(fmt.Errorf("context: %w", fail.Wrap(k, "shown", storage.ErrConflict)))
		var e *Error
		if !errors.As(err, &e) || e.Kind != kind || e.Message != "shown" {
			t.Errorf("%q: got %#v", k, err)
			continue
		}
		if !errors.Is(err, kind) || !errors.Is(err, storage.ErrConflict) {
			t.Errorf("%q: errors.Is misses its kind or its cause", k)
		}
		for other := range errorKinds {
			if o := errorKinds[other]; o != kind && errors.Is(err, o) {
				t.Errorf("%q matches %q too", k, o)
			}
		}
		if err.Error() != "context: shown: "+storage.ErrConflict.Error() {
			t.Errorf("%q: text %q", k, err.Error())
		}
	}
	if len(errorKinds) != len(seen) {
		t.Errorf("errorKinds maps %d kinds that fail does not have", len(errorKinds)-len(seen))
	}

	for _, err := range []error{nil, errors.New("disk on fire"), fail.New(fail.Internal, "hidden")} {
		if got := publicError(err); got != err {
			t.Errorf("publicError(%v) = %v, want it unchanged", err, got)
		}
	}
	var e *Error
	if !errors.As(publicError(fail.RateLimit("slow down", 3*time.Second)), &e) || e.RetryAfter != 3*time.Second {
		t.Errorf("RetryAfter not carried: %+v", e)
	}
}
