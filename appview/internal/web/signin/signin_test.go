package signin_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/service/oauthclient"
	"github.com/lexview/lexview/appview/internal/web/sessioncookie"
	"github.com/lexview/lexview/appview/internal/web/signin"
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

// TestFinisherLeadsABrowserToTheDashboard: a browser's callback (it
// accepts text/html) gets the cookie and a 303 to the dashboard; another
// client gets the cookie and the JSON answer.
func TestFinisherLeadsABrowserToTheDashboard(t *testing.T) {
	h := signin.New(signin.Options{Flows: &countingFlows{}, Domains: oneDomain{},
		Cookies: sessioncookie.NewCodec([]byte("a-session-secret-of-at-least-32-bytes!"), time.Now),
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil))})
	res := oauthclient.Result{Purpose: signin.PurposeAdminSignIn, DID: "did:plc:alice", DomainOrigin: "https://lexview.example"}
	finish := func(accept string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", "https://lexview.example/oauth/callback?code=c&state=s", nil)
		if accept != "" {
			r.Header.Set("Accept", accept)
		}
		w := httptest.NewRecorder()
		h.Finisher().Finish(w, r, res)
		return w
	}
	w := finish("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8")
	if w.Code != http.StatusSeeOther || w.Header().Get("Location") != signin.DashboardPath {
		t.Fatalf("browser: %d Location %q", w.Code, w.Header().Get("Location"))
	}
	if c := w.Result().Cookies(); len(c) != 1 || c[0].Name != sessioncookie.CookieName || !c[0].HttpOnly || !c[0].Secure {
		t.Fatalf("browser: cookies %+v", c)
	}
	w = finish("")
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"did":"did:plc:alice"`) || len(w.Result().Cookies()) != 1 {
		t.Fatalf("client: %d %s", w.Code, w.Body)
	}
}
