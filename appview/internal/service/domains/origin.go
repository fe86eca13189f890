package domains

import (
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/lexview/lexview/appview/internal/core/fail"
)

// ParseOrigin checks that raw is an origin, scheme://host[:port] with
// nothing else, and returns it normalised: scheme and host lower-cased,
// the scheme's default port dropped. http is accepted only when allowHTTP
// is set (PUBLIC_URL is a loopback address). Refusals are Invalid errors
// saying what is wrong.
func ParseOrigin(raw string, allowHTTP bool) (string, error) {
	invalid := func(why string) error { return fail.Invalidf("invalid domain url: %s", why) }
	if raw == "" {
		return "", invalid("url is required")
	}
	if strings.TrimSpace(raw) != raw || strings.ContainsAny(raw, " \t\r\n\\") {
		return "", invalid("whitespace or backslash in the url")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", invalid("not a URL")
	}
	scheme := strings.ToLower(u.Scheme)
	switch {
	case scheme != "https" && scheme != "http":
		return "", invalid("the scheme must be https")
	case scheme == "http" && !allowHTTP:
		return "", invalid("the scheme must be https (http only when PUBLIC_URL is a loopback address)")
	case u.Opaque != "" || u.Host == "":
		return "", invalid("no host")
	case u.User != nil:
		return "", invalid("user information is not allowed")
	case u.Path == "/" || strings.HasSuffix(raw, "/"):
		return "", invalid("no trailing slash")
	case u.Path != "" || u.RawPath != "":
		return "", invalid("no path")
	case u.RawQuery != "" || u.ForceQuery:
		return "", invalid("no query")
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return "", invalid("no fragment")
	}
	host, port := u.Hostname(), u.Port()
	if strings.HasSuffix(u.Host, ":") {
		return "", invalid("empty port")
	}
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || port[0] == '0' {
			return "", invalid("bad port")
		}
		if (scheme == "https" && n == 443) || (scheme == "http" && n == 80) {
			port = ""
		}
	}
	host = strings.ToLower(host)
	if !validHost(host) {
		return "", invalid("bad host name")
	}
	out := scheme + "://"
	if ip, err := netip.ParseAddr(host); err == nil && ip.Is6() {
		out += "[" + host + "]"
	} else {
		out += host
	}
	if port != "" {
		out += ":" + port
	}
	return out, nil
}

// validHost accepts an IP address or a DNS name of letters, digits and
// hyphens in dot-separated labels.
func validHost(host string) bool {
	if _, err := netip.ParseAddr(host); err == nil {
		return !strings.Contains(host, "%") // no IPv6 zones
	}
	if len(host) > 253 || host == "" {
		return false
	}
	for _, label := range strings.Split(host, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// IsLoopback reports whether rawURL's host is a loopback address
// (127.0.0.0/8, ::1) or localhost.
func IsLoopback(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil {
		return false
	}
	return isLoopbackName(u.Hostname())
}

// isLoopbackName reports whether a host name (no port, no brackets) is
// localhost, a name under .localhost, or a loopback address.
func isLoopbackName(name string) bool {
	name = strings.ToLower(name)
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return true
	}
	ip := net.ParseIP(name)
	return ip != nil && ip.IsLoopback()
}

// Host returns the host[:port] of an origin ParseOrigin returned.
func Host(origin string) string {
	_, host, _ := strings.Cut(origin, "://")
	return host
}

// DIDWeb returns the did:web naming host (host[:port], the port
// percent-encoded as did:web requires), or "" when host cannot be one (an
// IPv6 literal).
func DIDWeb(host string) string {
	host = strings.ToLower(host)
	if host == "" || strings.ContainsAny(host, "[]") {
		return ""
	}
	return "did:web:" + strings.ReplaceAll(host, ":", "%3A")
}
