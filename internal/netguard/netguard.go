// Package netguard makes the HTTP transport Lexview uses for outbound
// calls whose targets come from users or the network (PDS endpoints in DID
// documents, client metadata URLs, did:web hosts): it refuses to connect
// to loopback, private, link-local and other non-public addresses, checked
// on the resolved IP of every connection (so DNS rebinding cannot slip
// past), except for hosts the operator configured explicitly.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
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
	// AllowHosts are host names (or host:port) that may resolve to private
	// addresses, e.g. a PLC directory or relay the operator runs locally.
	AllowHosts []string
	// DialTimeout bounds connection set-up; default 10s.
	DialTimeout time.Duration
}

// cgnat is the shared address space of RFC 6598.
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// Public reports whether addr is a public unicast address.
func Public(addr netip.Addr) bool {
	addr = addr.Unmap()
	return addr.IsValid() && addr.IsGlobalUnicast() && !addr.IsPrivate() && !cgnat.Contains(addr)
}

// NewTransport returns an http.Transport with the guard and sensible
// timeouts.
func NewTransport(opt Options) *http.Transport {
	if opt.DialTimeout <= 0 {
		opt.DialTimeout = 10 * time.Second
	}
	allowed := map[string]bool{}
	for _, h := range opt.AllowHosts {
		allowed[strings.ToLower(h)] = true
	}
	open := &net.Dialer{Timeout: opt.DialTimeout, KeepAlive: 30 * time.Second}
	guarded := &net.Dialer{Timeout: opt.DialTimeout, KeepAlive: 30 * time.Second, Control: control}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 16
	t.ResponseHeaderTimeout = 30 * time.Second
	t.DialContext = func(ctx context.Context, network, address string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(address)
		if err != nil {
			return nil, err
		}
		if opt.AllowPrivate || allowed[strings.ToLower(host)] || allowed[strings.ToLower(address)] {
			return open.DialContext(ctx, network, address)
		}
		return guarded.DialContext(ctx, network, address)
	}
	return t
}

// control runs on the resolved address of every connection attempt.
func control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrBlocked, address)
	}
	if !Public(ap.Addr()) {
		return fmt.Errorf("%w: %s", ErrBlocked, ap.Addr())
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

// NewClient returns an HTTP client over NewTransport(opt) with an overall
// timeout per request: the client every component falls back to when it
// is given none, so that nothing reaches the network unguarded.
func NewClient(opt Options, timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: NewTransport(opt)}
}
