package clientauth_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/web/clientauth"
)

// limiter allows while tokens are left, then asks for wait.
type limiter struct {
	tokens int
	wait   time.Duration
}

func (l *limiter) Allow(*apiclients.Client) (bool, time.Duration) {
	if l.tokens == 0 {
		return false, l.wait
	}
	l.tokens--
	return true, 0
}

// TestMiddlewareAnswers: the middleware answers the specification's
// refusals (401 without or with an unknown key, 429 with Retry-After for
// an empty bucket, a hidden 500 for an identifier failure) and hands an
// identified client to the next handler.
func TestMiddlewareAnswers(t *testing.T) {
	id := clientauth.IdentifierFunc(func(_ context.Context, key string, _ *http.Request) (*apiclients.Client, error) {
		switch key {
		case "good":
			return &apiclients.Client{ID: "c1", Key: key}, nil
		case "broken":
			return nil, errors.New("database down")
		}
		return nil, apiclients.ErrInvalidClient
	})
	lim := &limiter{tokens: 1, wait: 1500 * time.Millisecond}
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := apiclients.FromContext(r.Context())
		if !ok {
			t.Error("no client in the context")
			return
		}
		_, _ = io.WriteString(w, c.ID)
	})
	h := clientauth.Middleware(id, lim, slog.New(slog.NewTextHandler(io.Discard, nil)))(next)

	cases := []struct {
		name, target, header string
		status               int
		body, retryAfter     string
	}{
		{"no key", "/xrpc/a.b.c", "", 401, "Missing client identification", ""},
		{"unknown key", "/xrpc/a.b.c", "nope", 401, "Invalid client", ""},
		{"identifier failure", "/xrpc/a.b.c", "broken", 500, "internal server error", ""},
		{"header key", "/xrpc/a.b.c", "good", 200, "c1", ""},
		{"empty bucket, key as parameter", "/xrpc/a.b.c?client_key=good", "", 429, "rate limit exceeded", "2"},
	}
	for _, tc := range cases {
		r := httptest.NewRequest("GET", tc.target, nil)
		if tc.header != "" {
			r.Header.Set("X-Client-Key", tc.header)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		body := w.Body.String()
		if w.Code != 200 {
			var e struct{ Error string }
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil {
				t.Fatalf("%s: not an error body: %s", tc.name, body)
			}
			body = e.Error
		}
		if w.Code != tc.status || body != tc.body || w.Header().Get("Retry-After") != tc.retryAfter {
			t.Errorf("%s: %d %q Retry-After %q, want %d %q %q", tc.name, w.Code, body, w.Header().Get("Retry-After"),
				tc.status, tc.body, tc.retryAfter)
		}
	}
}
