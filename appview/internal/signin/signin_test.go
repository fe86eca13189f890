package signin_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/oauthclient"
	"github.com/lexview/lexview/appview/internal/signin"
	"github.com/lexview/lexview/storage"
)

// countingFlows starts every flow at the same authorization URL.
type countingFlows struct{ started int }

func (f *countingFlows) Authorize(context.Context, oauthclient.Request) (string, error) {
	f.started++
	return "https://pds.example/oauth/authorize?request_uri=x", nil
}
func (f *countingFlows) EndSession(context.Context, syntax.DID, string) error { return nil }

// oneDomain registers every host as https://lexview.example.
type oneDomain struct{}

func (oneDomain) Match(context.Context, string) (storage.Domain, bool) {
	return storage.Domain{URL: "https://lexview.example"}, true
}

// TestLoginStartsAreBounded: past the burst, starting a sign-in answers
// 429 with Retry-After, and no flow is started.
func TestLoginStartsAreBounded(t *testing.T) {
	flows := &countingFlows{}
	h := signin.New(signin.Options{Flows: flows, Domains: oneDomain{}, StartRate: 0.001, StartBurst: 3,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	mux := http.NewServeMux()
	h.Mount(mux)
	login := func() *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest("GET", "https://lexview.example/auth/login?handle=alice.example", nil))
		return w
	}
	for i := range 3 {
		if w := login(); w.Code != http.StatusFound {
			t.Fatalf("start %d: %d %s", i+1, w.Code, w.Body)
		}
	}
	w := login()
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" ||
		strings.TrimSpace(w.Body.String()) != `{"error":"too many sign-ins are starting: try again in a few seconds"}` {
		t.Fatalf("past the burst: %d %q %s", w.Code, w.Header().Get("Retry-After"), w.Body)
	}
	if flows.started != 3 {
		t.Fatalf("%d flows started, want 3", flows.started)
	}
}
