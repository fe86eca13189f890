// Package netguard makes the HTTP transport Lexview uses for outbound
// calls whose targets come from users or the network (PDS endpoints in DID
// documents, client metadata URLs, did:web hosts, scripts' http.*): it
// refuses to connect to addresses that are not globally reachable
// (loopback, private, link-local, every other row of the IANA
// special-purpose address registries, and IPv6 forms that embed such an
// IPv4 address), checked on the resolved IP of every connection so that
// DNS rebinding cannot slip past, except for the origins (scheme, host
// and port) the operator configured explicitly.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// ErrBlocked is returned when a connection would reach a non-public address.
var ErrBlocked = errors.New("netguard: destination address is not public")

// Options configures a guarded transport.
type Options struct {
	// AllowPrivate turns the guard off (local development and tests).
	AllowPrivate bool
	// AllowOrigins are URLs whose origins may be reached whatever address
	// they resolve to, e.g. a PLC directory or relay the operator runs
	// locally. Only the scheme, host and port count (ws and wss are http
	// and https, default ports made explicit): "http://vm:2582/x" allows
	// http://vm:2582 and nothing else on vm. Entries that are not absolute
	// http, https, ws or wss URLs allow nothing.
	AllowOrigins []string
	// DialTimeout bounds connection set-up; default 10s.
	DialTimeout time.Duration
}

// NewTransport returns an http.RoundTripper with the guard and sensible
// timeouts. A request to an allowed origin connects to whatever address
// its host resolves to; any other request, including each redirect hop,
// connects only to public addresses.
func NewTransport(opt Options) http.RoundTripper {
	if opt.DialTimeout <= 0 {
		opt.DialTimeout = 10 * time.Second
	}
	g := &guard{origins: map[string]string{}, allowAll: opt.AllowPrivate}
	for _, raw := range opt.AllowOrigins {
		if u, err := url.Parse(raw); err == nil {
			if origin, addr, ok := originOf(u); ok {
				g.origins[origin] = addr
			}
		}
	}
	open := &net.Dialer{Timeout: opt.DialTimeout, KeepAlive: 30 * time.Second}
	guarded := &net.Dialer{Timeout: opt.DialTimeout, KeepAlive: 30 * time.Second, Control: control}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 16
	t.ResponseHeaderTimeout = 30 * time.Second
	t.DialContext = func(ctx context.Context, network, address string) (net.Conn, error) {
		if g.open(ctx, address) {
			return open.DialContext(ctx, network, address)
		}
		return guarded.DialContext(ctx, network, address)
	}
	g.base = t
	return g
}

// NewClient returns an HTTP client over NewTransport(opt) with an overall
// timeout per request: the client every component falls back to when it
// is given none, so that nothing reaches the network unguarded.
func NewClient(opt Options, timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: NewTransport(opt)}
}

// control runs on the resolved address of every guarded connection attempt.
func control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrBlocked, address)
	}
	if why := classify(ap.Addr()); why != "" {
		return fmt.Errorf("%w: %s: %s", ErrBlocked, ap.Addr(), why)
	}
	return nil
}

// HostOf returns the host of a URL, or "" when it does not parse.
func HostOf(rawURL string) string {
	i := strings.Index(rawURL, "://")
	if i < 0 {
		return ""
	}
	rest := rawURL[i+3:]
	if j := strings.IndexAny(rest, "/?#"); j >= 0 {
		rest = rest[:j]
	}
	if h, _, err := net.SplitHostPort(rest); err == nil {
		return h
	}
	return rest
}
