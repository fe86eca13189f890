package xrpcproxy

import (
	"context"
	"errors"
	"log/slog"
	"net/url"
	"strings"

	"github.com/bluesky-social/indigo/atproto/identity"
	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/lexicon/lexresolve"
)

// ServiceFragment is the DID-document service of the NSID's authority
// calls are forwarded to when the authority has one; otherwise its PDS
// (#atproto_pds) is used.
const ServiceFragment = "#atproto_appview"

// ErrNotForwarded answers a call that is not forwarded (refused by the
// policy, a loop, an authority that does not resolve) as an unknown
// method is answered: 404 `method not found`.
var ErrNotForwarded = fail.New(fail.NotFound, "method not found")

// errServiceFailed answers a forwarded call whose service could not be
// reached or read.
var errServiceFailed = fail.New(fail.Upstream, "the method's service failed")

// Metrics counts proxied calls (nil-safe *metrics.Metrics).
type Metrics interface {
	Proxied(outcome string)
}

// Options are what the router works with; all but Metrics and Logger are
// required.
type Options struct {
	Policies  *Policies
	Resolver  lexresolve.Resolver
	Directory identity.Directory
	Events    *eventlog.Log
	Metrics   Metrics
	// Self reports whether a host (host[:port], lower case) is this
	// instance's own: its public URL or a registered domain.
	Self   func(ctx context.Context, host string) bool
	Logger *slog.Logger
}

// Router decides whether and where a call for an NSID without a local
// lexicon is forwarded, within the policy, and counts (and, where an
// operator should know, audits) every call's outcome: forwarded, refused,
// unresolved, loop or upstream_failed. Forwarding the call itself is the
// front end's part (web/xrpcforward).
type Router struct{ opt Options }

// New returns the router.
func New(opt Options) *Router {
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	if opt.Metrics == nil {
		opt.Metrics = noMetrics{}
	}
	return &Router{opt: opt}
}

type noMetrics struct{}

func (noMetrics) Proxied(string) {}

// Call is what routing looks at in a call.
type Call struct {
	Method string // GET or POST
	NSID   string
	// Hop is set when the call was forwarded by a Lexview already.
	Hop bool
	// Proxy is the call's atproto-proxy header (did#service), if any.
	Proxy string
}

// Admit applies the policy to c, before its API client is identified. A
// call that cannot be forwarded (not GET or POST, not an NSID, a hop, an
// NSID the policy refuses) is ErrNotForwarded, counted.
func (rt *Router) Admit(ctx context.Context, c Call) error {
	if (c.Method != "GET" && c.Method != "POST") || lexicon.CheckNSID(c.NSID) != nil {
		return rt.notForwarded(ctx, c, "unresolved", nil)
	}
	// Outcomes the caller controls (an NSID with no authority, the hop
	// header) are counted, not logged: anyone can make them.
	if c.Hop {
		return rt.notForwarded(ctx, c, "loop", nil)
	}
	policy, err := rt.opt.Policies.Get(ctx)
	if err != nil {
		rt.opt.Logger.ErrorContext(ctx, "reading the xrpc proxy policy failed", "err", err)
		return rt.notForwarded(ctx, c, "refused", nil)
	}
	if !policy.Allows(c.NSID) {
		return rt.notForwarded(ctx, c, "refused", nil)
	}
	return nil
}

// Target returns the base URL an admitted call goes to: the service its
// atproto-proxy header names (did#fragment), else the NSID authority's
// ServiceFragment service, else its PDS. An unresolved target, or one
// that is this instance, is ErrNotForwarded, counted (a loop to this
// instance is audited too).
func (rt *Router) Target(ctx context.Context, c Call) (*url.URL, error) {
	target, err := rt.target(ctx, c.NSID, c.Proxy)
	if err != nil {
		rt.opt.Logger.DebugContext(ctx, "xrpc proxy: no target", "nsid", c.NSID, "err", err)
		return nil, rt.notForwarded(ctx, c, "unresolved", nil)
	}
	if rt.opt.Self != nil && rt.opt.Self(ctx, strings.ToLower(target.Host)) {
		return nil, rt.notForwarded(ctx, c, "loop", map[string]any{"reason": "the authority's service is this instance", "target": target.String()})
	}
	return target, nil
}

// Forwarded counts a call answered by its service.
func (rt *Router) Forwarded() { rt.opt.Metrics.Proxied("forwarded") }

// TooLarge counts a call refused for a body over the forwarding limit.
func (rt *Router) TooLarge() { rt.opt.Metrics.Proxied("refused") }

// Failed counts and audits a call whose service at target could not be
// reached or read, and returns its answer: an upstream failure, `the
// method's service failed`.
func (rt *Router) Failed(ctx context.Context, c Call, target *url.URL, err error) error {
	rt.opt.Metrics.Proxied("upstream_failed")
	rt.opt.Events.Record(ctx, eventlog.Entry{Type: "xrpc.proxy_upstream_failed", Severity: eventlog.Warn, Subject: c.NSID,
		Detail: map[string]any{"method": c.Method, "target": target.Scheme + "://" + target.Host, "error": err.Error()}})
	return fail.Wrap(errServiceFailed.Kind, errServiceFailed.Message, err)
}

// notForwarded counts a call not forwarded by outcome and, with a detail,
// audits it; it returns ErrNotForwarded.
func (rt *Router) notForwarded(ctx context.Context, c Call, outcome string, detail map[string]any) error {
	rt.opt.Metrics.Proxied(outcome)
	if detail != nil {
		detail["method"] = c.Method
		rt.opt.Events.Record(ctx, eventlog.Entry{Type: "xrpc.proxy_" + outcome, Severity: eventlog.Warn, Subject: c.NSID, Detail: detail})
	}
	return ErrNotForwarded
}

// target is the base URL calls for nsid go to (see Target).
func (rt *Router) target(ctx context.Context, nsid, proxyHeader string) (*url.URL, error) {
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
		ident, err := rt.opt.Directory.LookupDID(ctx, pdid)
		if err != nil {
			return nil, err
		}
		if endpoint = ident.GetServiceEndpoint(frag); endpoint == "" {
			return nil, errors.New("the atproto-proxy DID document has no service #" + frag)
		}
	} else {
		auth, err := rt.opt.Resolver.Authority(ctx, nsid)
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
