package netguard

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// guard is the transport NewTransport returns: it marks each request to
// an allowed origin, whose connection may then go to any address, and
// leaves every other request to the guarded dialer.
type guard struct {
	base     *http.Transport
	origins  map[string]string // allowed origin -> its dial address
	allowAll bool
}

// allowedAddr is the context key of the dial address a request to an
// allowed origin may connect to unguarded.
type allowedAddr struct{}

// RoundTrip implements http.RoundTripper. http.Client calls it once per
// hop, so every redirect is checked on its own origin. A mark inherited
// through the context of an earlier request is replaced.
func (g *guard) RoundTrip(req *http.Request) (*http.Response, error) {
	addr := ""
	if req.URL != nil {
		if origin, _, ok := originOf(req.URL); ok {
			addr = g.origins[origin]
		}
	}
	if prev, _ := req.Context().Value(allowedAddr{}).(string); prev != addr {
		req = req.WithContext(context.WithValue(req.Context(), allowedAddr{}, addr))
	}
	return g.base.RoundTrip(req)
}

// CloseIdleConnections closes the idle connections of the underlying
// transport (http.Client.CloseIdleConnections calls it).
func (g *guard) CloseIdleConnections() { g.base.CloseIdleConnections() }

// open reports whether a connection to address may skip the check of the
// resolved IP: the guard is off, the request is to an allowed origin and
// address is that origin's (not, say, a proxy's).
func (g *guard) open(ctx context.Context, address string) bool {
	if g.allowAll {
		return true
	}
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return false
	}
	want, _ := ctx.Value(allowedAddr{}).(string)
	return want != "" && want == joinHostPort(host, port)
}

// defaultPorts maps the schemes an origin may have to the scheme a request
// to it has and that scheme's default port.
var defaultPorts = map[string]struct{ scheme, port string }{
	"http": {"http", "80"}, "https": {"https", "443"},
	"ws": {"http", "80"}, "wss": {"https", "443"},
}

// originOf returns the origin of u ("scheme://host:port", ws and wss
// spelled http and https, the default port made explicit) and the address
// a connection to it dials; ok is false unless u is an absolute http,
// https, ws or wss URL.
func originOf(u *url.URL) (origin, addr string, ok bool) {
	d, known := defaultPorts[strings.ToLower(u.Scheme)]
	if !known || u.Hostname() == "" {
		return "", "", false
	}
	port := u.Port()
	if port == "" {
		port = d.port
	}
	addr = joinHostPort(u.Hostname(), port)
	return d.scheme + "://" + addr, addr, true
}

// joinHostPort spells host and port in one canonical way: host names
// lower-cased, IP addresses in their standard form.
func joinHostPort(host, port string) string {
	if a, err := netip.ParseAddr(host); err == nil {
		host = a.String()
	} else {
		host = strings.ToLower(host)
	}
	return net.JoinHostPort(host, port)
}

// OriginOf returns the canonical origin of an absolute http, https, ws or
// wss URL (ws and wss as http and https, the default port explicit), or
// "" for anything else: two URLs with one origin name the same service.
func OriginOf(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	origin, _, ok := originOf(u)
	if !ok {
		return ""
	}
	return origin
}
