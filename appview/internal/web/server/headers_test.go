package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestLimitHeaders: a head of exactly MaxHeaderBytes passes, one byte
// more is answered 431 with a JSON error, whichever field makes it up.
func TestLimitHeaders(t *testing.T) {
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	h := limitHeaders(next)
	// "GET /x HTTP/1.1\r\n" + "Host: example.com\r\n" + "\r\n"
	const bare = 17 + 19 + 2
	for _, c := range []struct {
		name string
		make func(size int) *http.Request
	}{
		{"field", func(size int) *http.Request {
			r := httptest.NewRequest(http.MethodGet, "/x", nil)
			r.Header.Set("X-Pad", strings.Repeat("a", size-bare-len("X-Pad: \r\n")))
			return r
		}},
		{"repeated fields", func(size int) *http.Request {
			r := httptest.NewRequest(http.MethodGet, "/x", nil)
			r.Header.Add("Cookie", "a=b")
			r.Header.Add("Cookie", strings.Repeat("c", size-bare-2*len("Cookie: \r\n")-len("a=b")))
			return r
		}},
		{"request line", func(size int) *http.Request {
			return httptest.NewRequest(http.MethodGet, "/x?"+strings.Repeat("q", size-bare-1), nil)
		}},
	} {
		for size, want := range map[int]int{MaxHeaderBytes: http.StatusNoContent, MaxHeaderBytes + 1: http.StatusRequestHeaderFieldsTooLarge} {
			r := c.make(size)
			if got := headSize(r); got != size {
				t.Fatalf("%s: headSize %d, want %d", c.name, got, size)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != want {
				t.Errorf("%s, %d bytes: status %d, want %d", c.name, size, w.Code, want)
			}
			if want != http.StatusRequestHeaderFieldsTooLarge {
				continue
			}
			var body struct{ Error string }
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || body.Error != errHeaderTooLarge {
				t.Errorf("%s: body %q (%v)", c.name, w.Body, err)
			}
		}
	}
}
