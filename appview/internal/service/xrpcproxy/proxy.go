package xrpcproxy

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

	"github.com/bluesky-social/indigo/atproto/identity"
	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/core/lexresolve"
	"github.com/lexview/lexview/appview/internal/web/respond"
	"github.com/lexview/lexview/lexicon"
)

// Limits of a forwarded call.
const (
	MaxRequestBody  = 1 << 20  // 413 above
	MaxResponseBody = 10 << 20 // an upstream failure (500) above
	Timeout         = 15 * time.Second
)

// HopHeader marks a call Lexview forwarded; a call arriving with it is not
// forwarded again (loop protection between instances).
const HopHeader = "X-Lexview-Proxied"

// ServiceFragment is the DID-document service of the NSID's authority
// calls are forwarded to when the authority has one; otherwise its PDS
// (#atproto_pds) is used.
const ServiceFragment = "#atproto_appview"

const msgMethodNotFound = "method not found"

// Metrics counts proxied calls (nil-safe *metrics.Metrics).
type Metrics interface {
	Proxied(outcome string)
}

// Options are what the forwarder works with; all but Metrics and Logger
// are required.
type Options struct {
	Policies  *Policies
	Resolver  lexresolve.Resolver
	Directory identity.Directory
	HTTP      *http.Client
	Events    *eventlog.Log
	Metrics   Metrics
	// Self reports whether a host (host[:port], lower case) is this
	// instance's own: its public URL or a registered domain.
	Self func(ctx context.Context, host string) bool
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
	if opt.Metrics == nil {
		opt.Metrics = noMetrics{}
	}
	f := &Forwarder{opt: opt}
	f.allowed = http.HandlerFunc(f.resolveAndForward)
	if opt.ClientMiddleware != nil {
		f.allowed = opt.ClientMiddleware(f.allowed)
	}
	return f
}

type noMetrics struct{}

func (noMetrics) Proxied(string) {}

// ServeHTTP forwards r (GET or POST /xrpc/{nsid}). Whatever cannot be
// forwarded (refused by the policy, a loop, an authority that does not
// resolve) answers 404 `method not found`, as an unknown method does; an
// upstream that fails or answers too much answers 500 `the method's
// service failed` (the specification's status of an upstream failure).
func (f *Forwarder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	nsid := r.PathValue("nsid")
	notFound := f.notFound(w, r, nsid)
	if (r.Method != http.MethodGet && r.Method != http.MethodPost) || lexicon.CheckNSID(nsid) != nil {
		notFound("unresolved", nil)
		return
	}
	// Outcomes the caller controls (an NSID with no authority, the hop
	// header) are counted, not logged: anyone can make them.
	if r.Header.Get(HopHeader) != "" {
		notFound("loop", nil)
		return
	}
	policy, err := f.opt.Policies.Get(ctx)
	if err != nil {
		f.opt.Logger.ErrorContext(ctx, "reading the xrpc proxy policy failed", "err", err)
		notFound("refused", nil)
		return
	}
	if !policy.Allows(nsid) {
		notFound("refused", nil)
		return
	}
	f.allowed.ServeHTTP(w, r)
}

// notFound returns the function answering 404 `method not found` for a
// call not forwarded, counted by outcome and, with a detail, logged.
func (f *Forwarder) notFound(w http.ResponseWriter, r *http.Request, nsid string) func(outcome string, detail map[string]any) {
	return func(outcome string, detail map[string]any) {
		f.opt.Metrics.Proxied(outcome)
		if detail != nil {
			detail["method"] = r.Method
			f.opt.Events.Record(r.Context(), eventlog.Entry{Type: "xrpc.proxy_" + outcome, Severity: eventlog.Warn, Subject: nsid, Detail: detail})
		}
		respond.Error(w, http.StatusNotFound, msgMethodNotFound)
	}
}

// resolveAndForward finds the call's target and forwards it.
func (f *Forwarder) resolveAndForward(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	nsid := r.PathValue("nsid")
	notFound := f.notFound(w, r, nsid)
	target, err := f.target(ctx, nsid, r.Header.Get("atproto-proxy"))
	if err != nil {
		f.opt.Logger.DebugContext(ctx, "xrpc proxy: no target", "nsid", nsid, "err", err)
		notFound("unresolved", nil)
		return
	}
	if f.opt.Self != nil && f.opt.Self(ctx, strings.ToLower(target.Host)) {
		notFound("loop", map[string]any{"reason": "the authority's service is this instance", "target": target.String()})
		return
	}
	f.forward(w, r, nsid, target)
}

// target is the base URL calls for nsid go to: the service an
// atproto-proxy header names (did#fragment), else the authority's
// ServiceFragment service, else its PDS.
func (f *Forwarder) target(ctx context.Context, nsid, proxyHeader string) (*url.URL, error) {
	var endpoint string
	if proxyHeader != "" {
		did, frag, ok := strings.Cut(proxyHeader, "#")
		if !ok || frag == "" {
			return nil, errors.New("atproto-proxy header is not did#service")
		}
		pdid, err := syntax.ParseDID(did)
		if err != nil {
			return nil, errors.New("atproto-proxy header names no DID")
		}
		ident, err := f.opt.Directory.LookupDID(ctx, pdid)
		if err != nil {
			return nil, err
		}
		if endpoint = ident.GetServiceEndpoint(frag); endpoint == "" {
			return nil, errors.New("the atproto-proxy DID document has no service #" + frag)
		}
	} else {
		auth, err := f.opt.Resolver.Authority(ctx, nsid)
		if err != nil {
			return nil, err
		}
		if auth.Identity != nil {
			endpoint = auth.Identity.GetServiceEndpoint(strings.TrimPrefix(ServiceFragment, "#"))
		}
		if endpoint == "" {
			endpoint = auth.PDS()
		}
		if endpoint == "" {
			return nil, errors.New("the authority " + auth.DID + " names no service and no PDS")
		}
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, errors.New("the service endpoint is not an http(s) URL")
	}
	return u, nil
}

// errServiceFailed answers a forwarded call whose service could not be
// reached or read.
var errServiceFailed = fail.New(fail.Upstream, "the method's service failed")

// forwardedHeaders are the request headers passed on. Credentials
// (Authorization, DPoP, cookies, the API client key) are not: they were
// issued for this instance.
var forwardedHeaders = []string{"Content-Type", "Accept", "Accept-Language", "Atproto-Accept-Labelers"}

// forward makes the call and copies the answer back.
func (f *Forwarder) forward(w http.ResponseWriter, r *http.Request, nsid string, target *url.URL) {
	ctx, cancel := context.WithTimeout(r.Context(), Timeout)
	defer cancel()
	var body io.Reader
	if r.Method == http.MethodPost {
		if r.ContentLength > MaxRequestBody {
			f.opt.Metrics.Proxied("refused")
			respond.Error(w, http.StatusRequestEntityTooLarge, "request body too large")
			return
		}
		data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBody))
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			f.opt.Metrics.Proxied("refused")
			respond.Error(w, http.StatusRequestEntityTooLarge, "request body too large")
			return
		case err != nil:
			respond.Error(w, http.StatusBadRequest, "invalid request body")
			return
		}
		body = bytes.NewReader(data)
	}
	u := *target
	u.Path = strings.TrimRight(u.Path, "/") + "/xrpc/" + nsid
	u.RawQuery = r.URL.RawQuery
	req, err := http.NewRequestWithContext(ctx, r.Method, u.String(), body)
	if err != nil {
		f.failed(w, r, nsid, &u, err)
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
		f.failed(w, r, nsid, &u, err)
		return
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBody+1))
	if err != nil {
		f.failed(w, r, nsid, &u, err)
		return
	}
	if len(data) > MaxResponseBody {
		f.failed(w, r, nsid, &u, errors.New("the answer is larger than the proxy's limit"))
		return
	}
	for _, h := range []string{"Content-Type", "Content-Language", "Cache-Control"} {
		if v := resp.Header.Get(h); v != "" {
			w.Header().Set(h, v)
		}
	}
	f.opt.Metrics.Proxied("forwarded")
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(data)
}

// failed answers an upstream failure (500) for an upstream that could not
// be reached or read.
func (f *Forwarder) failed(w http.ResponseWriter, r *http.Request, nsid string, target *url.URL, err error) {
	f.opt.Metrics.Proxied("upstream_failed")
	f.opt.Events.Record(r.Context(), eventlog.Entry{Type: "xrpc.proxy_upstream_failed", Severity: eventlog.Warn, Subject: nsid,
		Detail: map[string]any{"method": r.Method, "target": target.Scheme + "://" + target.Host, "error": err.Error()}})
	respond.Fail(w, r, f.opt.Logger, errServiceFailed)
}
