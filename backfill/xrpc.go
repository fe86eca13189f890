package backfill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// XRPCError is an error answer from a relay or PDS.
type XRPCError struct {
	Method  string
	Status  int
	Name    string // the XRPC `error` field, e.g. RepoNotFound
	Message string
	// RetryAfter is how long a 429 answer asked to wait (0 when it named
	// no time).
	RetryAfter time.Duration
}

func (e *XRPCError) Error() string {
	msg := fmt.Sprintf("%s: HTTP %d", e.Method, e.Status)
	if e.Name != "" {
		msg += " " + e.Name
	}
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return msg
}

// notImplemented reports whether err says the server does not offer the
// method, so that a fallback method should be tried: 404, 405 or 501, a
// 400 naming the method as unknown, or a 401 or 403 (the reference PDS
// forwards methods it does not implement to an AppView, which asks for
// authentication).
func notImplemented(err error) bool {
	var xe *XRPCError
	if !errors.As(err, &xe) {
		return false
	}
	switch xe.Status {
	case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusNotImplemented,
		http.StatusUnauthorized, http.StatusForbidden:
		return true
	case http.StatusBadRequest:
		return xe.Name == "MethodNotImplemented" || xe.Name == "MethodNotFound" || xe.Name == "XRPCNotSupported"
	}
	return false
}

// fetcher makes XRPC GET calls with a timeout per request, limited retries
// with backoff for network errors and 5xx answers, and waits for 429
// answers as Retry-After or RateLimit-Reset ask.
type fetcher struct {
	client *http.Client
	// relayClient, when set, makes the calls to the relay (base relay).
	relay       string
	relayClient *http.Client
	timeout     time.Duration // per request
	retries     int           // retries after the first attempt (network errors, 5xx)
	backoff     time.Duration // first retry delay, doubled each retry
	maxWait     time.Duration // longest rate-limit wait honoured
	maxLimit    int           // rate-limit waits per call before 429 counts as a failure
	maxBody     int64
	now         func() time.Time
}

// get calls method on base with params and decodes the JSON answer into out.
func (f *fetcher) get(ctx context.Context, base, method string, params url.Values, out any) error {
	return f.call(ctx, base, method, params, "application/json", f.timeout, func(body io.Reader) error {
		b, err := io.ReadAll(io.LimitReader(body, f.maxBody+1))
		if err != nil {
			return fmt.Errorf("read answer: %w", err)
		}
		if int64(len(b)) > f.maxBody {
			return fmt.Errorf("%w: answer larger than %d bytes", errBadAnswer, f.maxBody)
		}
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%w: %w", errBadAnswer, err)
		}
		return nil
	})
}

// stream calls method on base with params, allowing timeout for the whole
// exchange, and hands a 200 answer's body to read as it arrives. What read
// returns is final, not retried, unless it is the body's own failure (the
// connection reset or cut short mid-body, the timeout passed): the request
// is then retried as a failed request is, with the same backoff and bound.
func (f *fetcher) stream(ctx context.Context, base, method string, params url.Values, accept string,
	timeout time.Duration, read func(body io.Reader) error) error {
	return f.call(ctx, base, method, params, accept, timeout, func(body io.Reader) error {
		tb := &transportBody{r: body}
		err := read(tb)
		switch {
		case err == nil:
			return nil
		case tb.err != nil && errors.Is(err, tb.err):
			return fmt.Errorf("read answer: %w", tb.err)
		}
		return finalError{err}
	})
}

// transportBody notes the first error of an answer's body other than
// io.EOF: a failure of the transport, not of what it carried.
type transportBody struct {
	r   io.Reader
	err error
}

func (b *transportBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) && b.err == nil {
		b.err = err
	}
	return n, err
}

// finalError is a failure that retrying will not mend: its message is the
// cause's.
type finalError struct{ error }

func (e finalError) Unwrap() error { return e.error }

// call makes an XRPC GET with retries (network errors and 5xx, with
// jittered backoff) and rate-limit waits, handing a 200 answer's body to
// read; an error wrapping errBadAnswer from read is not retried.
func (f *fetcher) call(ctx context.Context, base, method string, params url.Values, accept string,
	timeout time.Duration, read func(body io.Reader) error) error {
	u := strings.TrimSuffix(base, "/") + "/xrpc/" + method
	if len(params) > 0 {
		u += "?" + params.Encode()
	}
	client := f.client
	if f.relayClient != nil && base == f.relay {
		client = f.relayClient
	}
	attempt, limited := 0, 0
	retries, maxLimit := f.retries, f.maxLimit
	if onceOnly(ctx) {
		retries, maxLimit = 0, 0
	}
	for {
		wait, err := f.once(ctx, client, u, method, accept, timeout, read)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var xe *XRPCError
		isXRPC := errors.As(err, &xe)
		switch {
		case isXRPC && xe.Status == http.StatusTooManyRequests && limited < maxLimit:
			limited++
			if wait <= 0 {
				wait = f.backoff << min(limited-1, 6)
			}
			wait = min(wait, f.maxWait)
		case isXRPC && xe.Status < 500 && xe.Status != http.StatusTooManyRequests, attempt >= retries:
			return err
		case errors.Is(err, errBadAnswer), errors.As(err, new(finalError)):
			return err
		default:
			attempt++
			d := f.backoff << (attempt - 1)
			wait = d/2 + rand.N(d/2+1) // jitter
		}
		if err := sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// errBadAnswer marks answers that will not get better by retrying.
var errBadAnswer = errors.New("malformed answer")

// once makes one request. For a 429 it returns the wait the server asked
// for (0 when it named none).
func (f *fetcher) once(ctx context.Context, client *http.Client, u, method, accept string, timeout time.Duration,
	read func(body io.Reader) error) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, fmt.Errorf("%s: %w: %w", method, errBadAnswer, err)
	}
	req.Header.Set("Accept", accept)
	req.Header.Set("User-Agent", "lexview-backfill")
	resp, err := client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", method, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, err := io.ReadAll(io.LimitReader(resp.Body, f.maxBody))
		if err != nil {
			return 0, fmt.Errorf("%s: read answer: %w", method, err)
		}
		xe := &XRPCError{Method: method, Status: resp.StatusCode}
		var eb struct {
			Error   string `json:"error"`
			Message string `json:"message"`
		}
		if json.Unmarshal(body, &eb) == nil {
			xe.Name, xe.Message = eb.Error, eb.Message
		}
		var wait time.Duration
		if resp.StatusCode == http.StatusTooManyRequests {
			wait = retryAfter(resp.Header, f.now())
			xe.RetryAfter = wait
		}
		return wait, xe
	}
	if p := quotaProbeOf(ctx); p != nil {
		p.observe(resp.Header, f.now())
	}
	if err := read(resp.Body); err != nil {
		return 0, fmt.Errorf("%s: %w", method, err)
	}
	return 0, nil
}

// retryAfter reads how long a 429 answer asks to wait: Retry-After in
// seconds or as an HTTP date, else RateLimit-Reset as epoch seconds (or,
// for small values, seconds from now). 0 means no usable header.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
			return time.Duration(n) * time.Second
		}
		if t, err := http.ParseTime(v); err == nil {
			return max(t.Sub(now), 0)
		}
	}
	if v := strings.TrimSpace(h.Get("RateLimit-Reset")); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
			if n < 1_000_000_000 { // a delta, as the IETF draft has it
				return time.Duration(n) * time.Second
			}
			return max(time.Unix(n, 0).Sub(now), 0)
		}
	}
	return 0
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// onceKey marks a context whose calls make one attempt: the caller
// schedules retries itself (the dispatcher).
type onceKey struct{}

// withOnce makes the fetcher's calls under ctx single attempts.
func withOnce(ctx context.Context) context.Context { return context.WithValue(ctx, onceKey{}, true) }

func onceOnly(ctx context.Context) bool { v, _ := ctx.Value(onceKey{}).(bool); return v }

// quotaProbe notes the RateLimit-Remaining and RateLimit-Reset headers of
// the last successful answer of a fetch.
type quotaProbe struct {
	mu sync.Mutex
	q  *quota
}

type quotaKey struct{}

func withQuotaProbe(ctx context.Context, p *quotaProbe) context.Context {
	return context.WithValue(ctx, quotaKey{}, p)
}

func quotaProbeOf(ctx context.Context) *quotaProbe {
	p, _ := ctx.Value(quotaKey{}).(*quotaProbe)
	return p
}

func (p *quotaProbe) observe(h http.Header, now time.Time) {
	remaining, err := strconv.Atoi(strings.TrimSpace(h.Get("RateLimit-Remaining")))
	if err != nil {
		return
	}
	reset := now.Add(retryAfter(http.Header{"RateLimit-Reset": h.Values("RateLimit-Reset")}, now))
	p.mu.Lock()
	defer p.mu.Unlock()
	p.q = &quota{remaining: remaining, reset: reset}
}

func (p *quotaProbe) get() *quota {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.q
}
