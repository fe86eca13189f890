// Package clientauth identifies the API client behind every XRPC request.
// Every XRPC call carries a client key (the X-Client-Key header, else the
// client_key query parameter); an Identifier turns it into a Client, and
// Middleware refuses what it cannot identify and what its client's
// rate-limit bucket does not allow. The decisions are the apiclients
// service's (Registry.Identify, Registry.Allow); this package reads the
// request and answers it.
package clientauth

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/web/respond"
)

// Identifier resolves a client key presented on a request.
type Identifier interface {
	// Identify returns the client holding key. It returns
	// apiclients.ErrInvalidClient (possibly wrapped) when the key is
	// unknown or the client inactive; any other error is a server
	// failure.
	Identify(ctx context.Context, key string, r *http.Request) (*apiclients.Client, error)
}

// IdentifierFunc adapts a function to the Identifier interface.
type IdentifierFunc func(ctx context.Context, key string, r *http.Request) (*apiclients.Client, error)

// Identify implements Identifier.
func (f IdentifierFunc) Identify(ctx context.Context, key string, r *http.Request) (*apiclients.Client, error) {
	return f(ctx, key, r)
}

// Limiter takes a token from a client's rate-limit bucket
// (apiclients.Registry).
type Limiter interface {
	// Allow reports whether the request may proceed, and if not, how long
	// until it could.
	Allow(c *apiclients.Client) (ok bool, retryAfter time.Duration)
}

// Stored is the Identifier of the instance's stored API clients: it hands
// the request's credentials (its key, Origin and X-Client-Secret) to
// the registry.
func Stored(reg *apiclients.Registry) Identifier { return stored{reg} }

type stored struct{ reg *apiclients.Registry }

func (s stored) Identify(ctx context.Context, key string, r *http.Request) (*apiclients.Client, error) {
	return s.reg.Identify(ctx, apiclients.Credentials{
		Key: key, Origin: header(r.Header, "Origin"), Secret: header(r.Header, "X-Client-Secret"),
	})
}

// Unverified is an Identifier that accepts any non-empty key as an
// anonymous client. It exists for embedders that run Lexview behind their
// own gateway; it performs no authentication.
type Unverified struct{}

// Identify implements Identifier.
func (Unverified) Identify(_ context.Context, key string, _ *http.Request) (*apiclients.Client, error) {
	return &apiclients.Client{Key: key}, nil
}

// KeyFromRequest returns the client key of r: the X-Client-Key header, else
// the client_key query parameter.
func KeyFromRequest(r *http.Request) string {
	if k := header(r.Header, "X-Client-Key"); k != "" {
		return k
	}
	return r.URL.Query().Get("client_key")
}

// header is h.Get(key) for a key already in canonical form, without
// canonicalising it again (this is on every XRPC request).
func header(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// Middleware requires a valid client key on every request it wraps, takes
// a token from the client's bucket (when lim is not nil; an empty bucket
// answers 429 with Retry-After), and puts the Client in the request
// context (apiclients.WithClient).
func Middleware(id Identifier, lim Limiter, log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			key := KeyFromRequest(r)
			if key == "" {
				respond.Fail(w, r, log, apiclients.ErrMissingClient)
				return
			}
			c, err := id.Identify(r.Context(), key, r)
			switch {
			case errors.Is(err, apiclients.ErrInvalidClient):
				respond.Fail(w, r, log, apiclients.ErrBadClient)
				return
			case err != nil:
				respond.Internal(w, r, log, err)
				return
			}
			if lim != nil {
				if ok, wait := lim.Allow(c); !ok {
					respond.Fail(w, r, log, apiclients.RateLimited(wait))
					return
				}
			}
			next.ServeHTTP(w, r.WithContext(apiclients.WithClient(r.Context(), c)))
		})
	}
}
