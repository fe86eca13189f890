package writepath_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/lexview/lexview/appview/internal/core/caller"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/service/writepath"
	"github.com/lexview/lexview/oauth"
)

// TestPDSError: a refused refresh, however wrapped, is the expired
// session (401 token_expired); any other failure an upstream PDS failure
// keeping its cause.
func TestPDSError(t *testing.T) {
	refused := &oauth.RefreshError{Status: 400, Code: "invalid_grant"}
	for _, err := range []error{refused, fmt.Errorf("refreshing: %w", refused)} {
		got := writepath.PDSError(err)
		if !errors.Is(got, writepath.ErrSessionExpired) || fail.KindOf(got) != fail.Unauthenticated || fail.Message(got) != "token_expired" {
			t.Errorf("%v: %v (%v)", err, got, fail.KindOf(got))
		}
		if !writepath.SessionExpired(err) {
			t.Errorf("%v: not an expired session", err)
		}
	}
	down := errors.New("connection refused")
	got := writepath.PDSError(down)
	if fail.KindOf(got) != fail.Upstream || fail.Message(got) != "upstream PDS failure" || !errors.Is(got, down) {
		t.Errorf("unreachable PDS: %v (%v)", got, fail.KindOf(got))
	}
	if writepath.SessionExpired(down) {
		t.Error("an unreachable PDS is not an expired session")
	}
	if writepath.PDSError(nil) != nil {
		t.Error("nil is not a failure")
	}
}

// pds answers uploadBlob with err, or with a fixed answer.
type pds struct {
	writepath.PDS
	err    error
	answer string
}

func (p *pds) Do(_ context.Context, _, _, _ string, _ url.Values, body io.Reader, _ string, _ int64) (*http.Response, error) {
	if _, err := io.Copy(io.Discard, body); err != nil {
		return nil, err
	}
	if p.err != nil {
		return nil, p.err
	}
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(p.answer))}, nil
}

// TestUploadBlob: the PDS's answer comes back unchanged; an expired
// session, a missing DPoP session, an oversized answer and an oversized
// blob are refused with the specification's answers.
func TestUploadBlob(t *testing.T) {
	ctx := context.Background()
	user := &caller.User{DID: "did:plc:alice", Via: caller.ViaDPoP, SessionID: "s1"}
	blob := func(s string) writepath.Blob {
		return writepath.Blob{Body: strings.NewReader(s), ContentType: "text/plain", ContentLength: int64(len(s))}
	}
	ok := &pds{answer: `{"blob":{"mimeType":"text/plain"}}`}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc := writepath.New(writepath.Options{PDS: ok, MaxBlobSize: 10, Logger: quiet})
	ans, err := svc.UploadBlob(ctx, user, blob("0123456789"))
	if err != nil || ans.Status != 200 || ans.ContentType != "application/json" || string(ans.Body) != ok.answer {
		t.Fatalf("upload: %+v %v", ans, err)
	}
	for name, tc := range map[string]struct {
		pds     *pds
		user    *caller.User
		body    writepath.Blob
		kind    fail.Kind
		message string
	}{
		"expired session": {&pds{err: fmt.Errorf("refresh: %w", &oauth.RefreshError{Code: "invalid_grant"})}, user, blob("x"),
			fail.Unauthenticated, "token_expired"},
		"service-auth caller": {ok, &caller.User{DID: "did:plc:alice", Via: caller.ViaServiceAuth}, blob("x"),
			fail.Unauthenticated, "requires DPoP authentication"},
		"anonymous":         {ok, nil, blob("x"), fail.Unauthenticated, "requires DPoP authentication"},
		"declared too long": {ok, user, blob("0123456789a"), fail.TooLarge, "blob too large"},
		"streamed too long": {ok, user, writepath.Blob{Body: strings.NewReader("0123456789a"), ContentLength: -1},
			fail.TooLarge, "blob too large"},
		"answer too long": {&pds{answer: strings.Repeat(" ", 1<<20+1)}, user, blob("x"), fail.Upstream, "upstream PDS failure"},
	} {
		svc := writepath.New(writepath.Options{PDS: tc.pds, MaxBlobSize: 10, Logger: quiet})
		_, err := svc.UploadBlob(ctx, tc.user, tc.body)
		if fail.KindOf(err) != tc.kind || fail.Message(err) != tc.message {
			t.Errorf("%s: %v (%v)", name, err, fail.KindOf(err))
		}
	}
}
