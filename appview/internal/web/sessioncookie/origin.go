package sessioncookie

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/lexview/lexview/storage"
)

// DomainMatcher finds the registered domain a host names.
type DomainMatcher interface {
	Match(ctx context.Context, host string) (storage.Domain, bool)
}

// Safe reports whether method cannot change state (GET, HEAD, OPTIONS,
// TRACE): such requests need no cross-site check.
func Safe(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	return false
}

// SameSite reports whether r, a state-changing request authenticated by
// the session cookie, comes from a page of a registered domain: its
// Origin header, else the origin of its Referer, must be a registered
// domain's origin (scheme, host and port). An Origin header must be in
// the exact form browsers send, scheme://host[:port], with nothing after
// it (no path, not even "/", no query, no credentials). A request with
// neither is refused: the cookie alone does not show who sent it.
func SameSite(r *http.Request, domains DomainMatcher) bool {
	origin := r.Header.Get("Origin")
	if origin == "" || origin == "null" {
		ref, err := url.Parse(r.Header.Get("Referer"))
		if err != nil || ref.Scheme == "" || ref.Host == "" {
			return false
		}
		origin = ref.Scheme + "://" + ref.Host
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || !exactOrigin(u, origin) {
		return false
	}
	d, ok := domains.Match(r.Context(), u.Host)
	if !ok {
		return false
	}
	scheme, _, _ := strings.Cut(d.URL, "://")
	return strings.EqualFold(u.Scheme, scheme)
}

// exactOrigin reports whether raw, parsed as u, is an origin in its
// serialized form: scheme://host[:port] and nothing else.
func exactOrigin(u *url.URL, raw string) bool {
	return u.Opaque == "" && u.User == nil && u.Path == "" && u.RawPath == "" && !u.ForceQuery && u.RawQuery == "" &&
		u.Fragment == "" && raw == u.Scheme+"://"+u.Host
}
