package backfill

import (
	"net/http"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	cases := []struct {
		header http.Header
		want   time.Duration
	}{
		{http.Header{"Retry-After": {"3"}}, 3 * time.Second},
		{http.Header{"Retry-After": {now.Add(90 * time.Second).Format(http.TimeFormat)}}, 90 * time.Second},
		{http.Header{"Retry-After": {now.Add(-time.Minute).Format(http.TimeFormat)}}, 0},
		{http.Header{"Ratelimit-Reset": {"1778051309"}}, 20 * time.Second}, // epoch seconds
		{http.Header{"Ratelimit-Reset": {"7"}}, 7 * time.Second},           // a delta
		{http.Header{"Retry-After": {"soon"}, "Ratelimit-Reset": {"2"}}, 2 * time.Second},
		{http.Header{}, 0},
	}
	for _, c := range cases {
		if got := retryAfter(c.header, now); got != c.want {
			t.Errorf("%v: %v, want %v", c.header, got, c.want)
		}
	}
}

func TestNotImplemented(t *testing.T) {
	t.Parallel()
	for status, name := range map[int]string{404: "", 501: "MethodNotImplemented", 401: "AuthMissing", 400: "MethodNotImplemented"} {
		if !notImplemented(&XRPCError{Status: status, Name: name}) {
			t.Errorf("%d %s: not taken for a missing method", status, name)
		}
	}
	for status, name := range map[int]string{400: "InvalidRequest", 429: "RateLimitExceeded", 500: "", 502: ""} {
		if notImplemented(&XRPCError{Status: status, Name: name}) {
			t.Errorf("%d %s: taken for a missing method", status, name)
		}
	}
}
