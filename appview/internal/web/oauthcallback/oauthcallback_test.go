package oauthcallback_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/service/linkedrepos"
	"github.com/lexview/lexview/appview/internal/service/oauthclient"
	"github.com/lexview/lexview/appview/internal/web/oauthcallback"
)

// flows finishes a flow by the state parameter: "bad" is refused, any
// other names the flow's purpose.
type flows struct{ ended []string }

func (f *flows) Callback(_ context.Context, _ string, params url.Values) (oauthclient.Result, error) {
	if params.Get("state") == "bad" {
		return oauthclient.Result{}, fail.New(fail.Invalid, "invalid OAuth callback: unknown, used or expired state")
	}
	return oauthclient.Result{Purpose: params.Get("state"), DID: "did:plc:alice", SessionID: "s1"}, nil
}

func (f *flows) EndSession(_ context.Context, did syntax.DID, sessionID string) error {
	f.ended = append(f.ended, did.String()+" "+sessionID)
	return nil
}

// TestCallback: a refused callback answers its error, a flow goes to the
// finisher of its purpose, and a flow of no known purpose is ended and
// refused.
func TestCallback(t *testing.T) {
	f := &flows{}
	h := oauthcallback.New(oauthcallback.Options{Flows: f, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Finishers: map[string]oauthcallback.Finisher{
			"sign_in": oauthcallback.FinisherFunc(func(w http.ResponseWriter, _ *http.Request, res oauthclient.Result) {
				_, _ = io.WriteString(w, "signed in "+res.DID.String())
			}),
		}})
	get := func(state string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/oauth/callback?state="+state, nil))
		return w
	}
	if w := get("bad"); w.Code != 400 || !strings.Contains(w.Body.String(), "unknown, used or expired state") ||
		w.Header().Get("Cache-Control") != "no-store" || len(f.ended) != 0 {
		t.Fatalf("refused callback: %d %s %v", w.Code, w.Body, f.ended)
	}
	if w := get("sign_in"); w.Code != 200 || w.Body.String() != "signed in did:plc:alice" || len(f.ended) != 0 {
		t.Fatalf("finished flow: %d %s %v", w.Code, w.Body, f.ended)
	}
	if w := get("other"); w.Code != 400 || !strings.Contains(w.Body.String(), "the flow has no handler") ||
		len(f.ended) != 1 || f.ended[0] != "did:plc:alice s1" {
		t.Fatalf("flow of an unknown purpose: %d %s %v", w.Code, w.Body, f.ended)
	}
}

// deniedFlows refuses every callback: "lost" as a flow nobody knows,
// any other state as a refusal of a flow of that purpose.
type deniedFlows struct{ *flows }

func (deniedFlows) Callback(_ context.Context, _ string, params url.Values) (oauthclient.Result, error) {
	if params.Get("state") == "lost" {
		return oauthclient.Result{}, fail.New(fail.Invalid, "invalid OAuth callback: unknown, used or expired state")
	}
	return oauthclient.Result{Purpose: params.Get("state")}, fail.New(fail.Invalid, "the authorization was not granted: access_denied")
}

// failingFinisher is a Finisher that answers its flows' refusals too.
type failingFinisher struct{ name string }

func (failingFinisher) Finish(http.ResponseWriter, *http.Request, oauthclient.Result) {}

func (f failingFinisher) Fail(w http.ResponseWriter, _ *http.Request, err error) {
	w.WriteHeader(http.StatusTeapot)
	_, _ = io.WriteString(w, f.name+": "+err.Error())
}

// TestCallbackRefusalsGoToTheirFailer: a refusal of a flow whose purpose's
// Finisher is a Failer is answered by it, a refusal of an unknown flow by
// Options.Unknown; the other refusals are the JSON error.
func TestCallbackRefusalsGoToTheirFailer(t *testing.T) {
	h := oauthcallback.New(oauthcallback.Options{Flows: deniedFlows{&flows{}}, Logger: slog.New(slog.DiscardHandler),
		Finishers: map[string]oauthcallback.Finisher{
			"sign_in": failingFinisher{"sign-in page"},
			"grant":   oauthcallback.FinisherFunc(func(http.ResponseWriter, *http.Request, oauthclient.Result) {}),
		},
		Unknown: failingFinisher{"unknown flow"}})
	for state, want := range map[string]string{
		"sign_in": "418 sign-in page: the authorization was not granted: access_denied",
		"lost":    "418 unknown flow: invalid OAuth callback: unknown, used or expired state",
		"grant":   `400 {"error":"the authorization was not granted: access_denied"}`,
	} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/oauth/callback?state="+state, nil))
		if got := strings.TrimSpace(fmt.Sprint(w.Code, " ", w.Body.String())); got != want {
			t.Errorf("state %s: %s, want %s", state, got, want)
		}
	}
}

// linkPages stands for the linked-repo outcome pages.
type linkPages struct{}

func (linkPages) Linked(w http.ResponseWriter, _ *http.Request, out linkedrepos.Authorized) {
	_, _ = io.WriteString(w, "page: linked "+out.DID)
}

func (linkPages) LinkFailed(w http.ResponseWriter, _ *http.Request, err error) {
	w.WriteHeader(http.StatusForbidden)
	_, _ = io.WriteString(w, "page: "+err.Error())
}

// TestLinkedRepoRefusalsForBrowsers: a refused linked-repo authorization
// is answered to a browser with the outcome page (it does not end on a
// bare JSON page), to another client with the JSON error.
func TestLinkedRepoRefusalsForBrowsers(t *testing.T) {
	h := oauthcallback.New(oauthcallback.Options{Flows: deniedFlows{&flows{}}, Logger: slog.New(slog.DiscardHandler),
		Finishers: map[string]oauthcallback.Finisher{
			"linked_repo": oauthcallback.LinkedRepo{Pages: linkPages{}, Logger: slog.New(slog.DiscardHandler)},
		}})
	for accept, want := range map[string]string{
		"text/html,application/xhtml+xml;q=0.9": "403 page: the authorization was not granted: access_denied",
		"application/json":                      `400 {"error":"the authorization was not granted: access_denied"}`,
	} {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("GET", "/oauth/callback?state=linked_repo", nil)
		r.Header.Set("Accept", accept)
		h.ServeHTTP(w, r)
		if got := strings.TrimSpace(fmt.Sprint(w.Code, " ", w.Body.String())); got != want {
			t.Errorf("Accept %s: %s, want %s", accept, got, want)
		}
	}
}
