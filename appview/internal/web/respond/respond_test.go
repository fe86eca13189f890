package respond_test

import (
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/web/respond"
)

// TestFailStatuses: each failure kind answers the status of the interface
// specification's error table (an upstream failure is its server failure,
// 500, with the failure's message), and an internal error reveals nothing.
func TestFailStatuses(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct {
		err    error
		status int
		body   string
	}{
		{fail.New(fail.Invalid, "bad"), 400, `{"error":"bad"}`},
		{fail.New(fail.Unauthenticated, "who"), 401, `{"error":"who"}`},
		{fail.New(fail.Forbidden, "no"), 403, `{"error":"no"}`},
		{fail.New(fail.NotFound, "gone"), 404, `{"error":"gone"}`},
		{fail.New(fail.Conflict, "taken"), 409, `{"error":"taken"}`},
		{fail.Wrap(fail.Upstream, "upstream PDS failure", errors.New("dial tcp: refused")), 500, `{"error":"upstream PDS failure"}`},
		{fail.New(fail.Failed, "script execution failed"), 500, `{"error":"script execution failed"}`},
		{errors.New("database is locked"), 500, `{"error":"internal server error"}`},
	} {
		w := httptest.NewRecorder()
		respond.Fail(w, httptest.NewRequest("GET", "/x", nil), quiet, tc.err)
		if w.Code != tc.status || w.Body.String() != tc.body {
			t.Errorf("%v (%v): %d %s, want %d %s", tc.err, fail.KindOf(tc.err), w.Code, w.Body, tc.status, tc.body)
		}
	}
}
