package xrpc_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/lexview/lexview/appview/internal/web/xrpc"
)

type observed struct {
	method string
	status int
}

type recorder []observed

func (r *recorder) Observe(method string, status int, _ time.Duration) {
	*r = append(*r, observed{method, status})
}

// TestObserved: each answer is handed to the observer with the status
// written (200 when the handler wrote nothing or only a body); a nil
// observer leaves the handler as it is.
func TestObserved(t *testing.T) {
	var rec recorder
	for _, h := range []http.HandlerFunc{
		func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) },
		func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("{}")) },
		func(http.ResponseWriter, *http.Request) {},
	} {
		w := httptest.NewRecorder()
		xrpc.Observed(&rec, "app.test.m", h).ServeHTTP(w, httptest.NewRequest("GET", "/xrpc/app.test.m", nil))
	}
	want := []observed{{"app.test.m", 503}, {"app.test.m", 200}, {"app.test.m", 200}}
	if len(rec) != len(want) || rec[0] != want[0] || rec[1] != want[1] || rec[2] != want[2] {
		t.Errorf("observed %v, want %v", rec, want)
	}
	w := httptest.NewRecorder()
	xrpc.Observed(nil, "m", http.NotFoundHandler()).ServeHTTP(w, httptest.NewRequest("GET", "/xrpc/m", nil))
	if w.Code != http.StatusNotFound {
		t.Errorf("without an observer: %d", w.Code)
	}
}
