// Package xrpcforward is the XRPC proxy's front end: it forwards calls for
// NSIDs without a local lexicon to the service the xrpcproxy router
// chooses (within the policy an admin sets through
// /admin/settings/xrpc-proxy), and copies the answer back.
package xrpcforward

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/service/xrpcproxy"
	"github.com/lexview/lexview/appview/internal/web/respond"
)

// Limits of a forwarded call.
const (
	MaxRequestBody  = 1 << 20  // 413 above
	MaxResponseBody = 10 << 20 // an upstream failure above
	Timeout         = 15 * time.Second
)

// HopHeader marks a call Lexview forwarded; a call arriving with it is not
// forwarded again (loop protection between instances).
const HopHeader = "X-Lexview-Proxied"

var errTooLarge = fail.New(fail.TooLarge, "request body too large")

// Options configure a Forwarder; Router and HTTP are required.
type Options struct {
	Router *xrpcproxy.Router
	// HTTP makes the forwarded calls (the guarded outbound client).
	HTTP *http.Client
	// ClientMiddleware identifies and rate-limits the API client of a call
	// the policy lets through, as for a local method.
	ClientMiddleware func(http.Handler) http.Handler
	UserAgent        string
	Logger           *slog.Logger
}

// Forwarder forwards calls for NSIDs without a local lexicon.
type Forwarder struct {
	opt     Options
	allowed http.Handler // resolution and forwarding, behind client identification
}

// New returns the forwarder.
func New(opt Options) *Forwarder {
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	f := &Forwarder{opt: opt}
	f.allowed = http.HandlerFunc(f.resolveAndForward)
	if opt.ClientMiddleware != nil {
		f.allowed = opt.ClientMiddleware(f.allowed)
	}
	return f
}

// call is what the router sees of r.
func call(r *http.Request) xrpcproxy.Call {
	return xrpcproxy.Call{Method: r.Method, NSID: r.PathValue("nsid"), Hop: r.Header.Get(HopHeader) != "",
		Proxy: r.Header.Get("atproto-proxy")}
}

// ServeHTTP forwards r (GET or POST /xrpc/{nsid}). Whatever cannot be
// forwarded (refused by the policy, a loop, an authority that does not
// resolve) answers 404 `method not found`, as an unknown method does; an
// upstream that fails or answers too much answers an upstream failure,
// `the method's service failed`. The policy applies before the API client
// is identified.
func (f *Forwarder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := f.opt.Router.Admit(r.Context(), call(r)); err != nil {
		respond.Fail(w, r, f.opt.Logger, err)
		return
	}
	f.allowed.ServeHTTP(w, r)
}

// resolveAndForward finds the call's target and forwards it.
func (f *Forwarder) resolveAndForward(w http.ResponseWriter, r *http.Request) {
	c := call(r)
	target, err := f.opt.Router.Target(r.Context(), c)
	if err != nil {
		respond.Fail(w, r, f.opt.Logger, err)
		return
	}
	f.forward(w, r, c, target)
}

// forwardedHeaders are the request headers passed on. Credentials
// (Authorization, DPoP, cookies, the API client key) are not: they were
// issued for this instance.
var forwardedHeaders = []string{"Content-Type", "Accept", "Accept-Language", "Atproto-Accept-Labelers"}

// forward makes the call and copies the answer back.
func (f *Forwarder) forward(w http.ResponseWriter, r *http.Request, c xrpcproxy.Call, target *url.URL) {
	ctx, cancel := context.WithTimeout(r.Context(), Timeout)
	defer cancel()
	var body io.Reader
	if r.Method == http.MethodPost {
		if r.ContentLength > MaxRequestBody {
			f.opt.Router.TooLarge()
			respond.Fail(w, r, f.opt.Logger, errTooLarge)
			return
		}
		data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBody))
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			f.opt.Router.TooLarge()
			respond.Fail(w, r, f.opt.Logger, errTooLarge)
			return
		case err != nil:
			respond.Error(w, http.StatusBadRequest, "invalid request body")
			return
		}
		body = bytes.NewReader(data)
	}
	u := *target
	u.Path = strings.TrimRight(u.Path, "/") + "/xrpc/" + c.NSID
	u.RawQuery = r.URL.RawQuery
	failed := func(err error) {
		respond.Fail(w, r, f.opt.Logger, f.opt.Router.Failed(r.Context(), c, &u, err))
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, u.String(), body)
	if err != nil {
		failed(err)
		return
	}
	for _, h := range forwardedHeaders {
		if v := r.Header.Values(h); len(v) > 0 {
			req.Header[h] = v
		}
	}
	req.Header.Set(HopHeader, "1")
	if f.opt.UserAgent != "" {
		req.Header.Set("User-Agent", f.opt.UserAgent)
	}
	resp, err := f.opt.HTTP.Do(req)
	if err != nil {
		failed(err)
		return
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBody+1))
	if err != nil {
		failed(err)
		return
	}
	if len(data) > MaxResponseBody {
		failed(errors.New("the answer is larger than the proxy's limit"))
		return
	}
	for _, h := range []string{"Content-Type", "Content-Language", "Cache-Control"} {
		if v := resp.Header.Get(h); v != "" {
			w.Header().Set(h, v)
		}
	}
	f.opt.Router.Forwarded()
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(data)
}
