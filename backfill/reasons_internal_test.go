package backfill

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/lexview/lexview/internal/repocar"
)

// TestFailureReason: each way a repository fails is named by its reason
// (the simulated network and the CAR tests see most of them end to end).
func TestFailureReason(t *testing.T) {
	t.Parallel()
	xrpc := func(status int, name string) error {
		return fmt.Errorf("getRepo: %w", &XRPCError{Method: "com.atproto.sync.getRepo", Status: status, Name: name})
	}
	for _, tc := range []struct {
		err       error
		resolving bool
		want      string
	}{
		{errors.New("no such DID"), true, ReasonUnresolvable},
		{fmt.Errorf("read answer: %w", io.ErrUnexpectedEOF), false, ReasonUnreachable},
		{xrpc(503, ""), false, ReasonUnreachable},
		{xrpc(429, "RateLimitExceeded"), false, ReasonRateLimited},
		{xrpc(400, "RepoDeactivated"), false, ReasonDeactivated},
		{xrpc(400, "RepoTakendown"), false, ReasonTakenDown},
		{xrpc(400, "RepoSuspended"), false, ReasonTakenDown},
		{xrpc(400, "RepoNotFound"), false, ReasonDeleted},
		{xrpc(501, "MethodNotImplemented"), false, ReasonOther},
		{xrpc(400, "InvalidRequest"), false, ReasonOther},
		{fmt.Errorf("getRepo: %w", repocar.ErrTooLarge), false, ReasonTooLarge},
		{fmt.Errorf("getRepo: %w", repocar.ErrBadSignature), false, ReasonVerification},
		{fmt.Errorf("getRepo: %w", repocar.ErrTampered), false, ReasonVerification},
		{fmt.Errorf("x: %w", errBadAnswer), false, ReasonOther},
	} {
		if got := failureReason(tc.err, tc.resolving); got != tc.want {
			t.Errorf("%v: %s, want %s", tc.err, got, tc.want)
		}
	}
}
