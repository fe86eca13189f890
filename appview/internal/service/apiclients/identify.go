// Package apiclients identifies the API client behind every XRPC request.
// Every XRPC call carries a client key (the X-Client-Key header, else the
// client_key query parameter); an Identifier turns it into a Client.
package apiclients

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/lexview/lexview/appview/internal/web/respond"
)

// Error strings the specification fixes.
const (
	msgMissing = "Missing client identification"
	msgInvalid = "Invalid client"
	// msgRateLimited answers a request whose client's bucket is empty.
	msgRateLimited = "rate limit exceeded"
)

// ErrInvalidClient is returned by an Identifier for an unknown or inactive
// client key.
var ErrInvalidClient = errors.New("invalid client")

// Client is an identified API client.
type Client struct {
	ID   string
	Key  string
	Name string
	// ParentID is set for third-party (child) clients.
	ParentID string

	bucket *bucket // the client's bucket, when rate limited
}

// Limiter takes a token from a client's rate-limit bucket.
type Limiter interface {
	// Allow reports whether the request may proceed, and if not, how long
	// until it could.
	Allow(c *Client) (ok bool, retryAfter time.Duration)
}

// Identifier resolves a client key presented on a request.
type Identifier interface {
	// Identify returns the client holding key. It returns ErrInvalidClient
	// (possibly wrapped) when the key is unknown or the client inactive;
	// any other error is a server failure.
	Identify(ctx context.Context, key string, r *http.Request) (*Client, error)
}

// IdentifierFunc adapts a function to the Identifier interface.
type IdentifierFunc func(ctx context.Context, key string, r *http.Request) (*Client, error)

// Identify implements Identifier.
func (f IdentifierFunc) Identify(ctx context.Context, key string, r *http.Request) (*Client, error) {
	return f(ctx, key, r)
}

// KeyFromRequest returns the client key of r: the X-Client-Key header, else
// the client_key query parameter.
func KeyFromRequest(r *http.Request) string {
	if k := header(r.Header, "X-Client-Key"); k != "" {
		return k
	}
	return r.URL.Query().Get("client_key")
}

type ctxKey struct{}

// WithClient returns a context carrying c.
func WithClient(ctx context.Context, c *Client) context.Context {
	return context.WithValue(ctx, ctxKey{}, c)
}

// FromContext returns the client identified for the request, if any.
func FromContext(ctx context.Context) (*Client, bool) {
	c, ok := ctx.Value(ctxKey{}).(*Client)
	return c, ok
}

// Middleware requires a valid client key on every request it wraps, takes
// a token from the client's bucket (when lim is not nil; an empty bucket
// answers 429 with Retry-After), and puts the Client in the request context.
func Middleware(id Identifier, lim Limiter, log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			key := KeyFromRequest(r)
			if key == "" {
				respond.Error(w, http.StatusUnauthorized, msgMissing)
				return
			}
			c, err := id.Identify(r.Context(), key, r)
			switch {
			case errors.Is(err, ErrInvalidClient):
				respond.Error(w, http.StatusUnauthorized, msgInvalid)
				return
			case err != nil:
				respond.Internal(w, r, log, err)
				return
			}
			if lim != nil {
				if ok, wait := lim.Allow(c); !ok {
					RateLimited(w, wait)
					return
				}
			}
			next.ServeHTTP(w, r.WithContext(WithClient(r.Context(), c)))
		})
	}
}

// RateLimited answers 429 for an empty bucket: {"error":"rate limit
// exceeded"} with Retry-After in whole seconds (at least one). Every
// rate-limited endpoint answers through it.
func RateLimited(w http.ResponseWriter, wait time.Duration) {
	secs := int64(math.Ceil(wait.Seconds()))
	w.Header().Set("Retry-After", strconv.FormatInt(max(secs, 1), 10))
	respond.Error(w, http.StatusTooManyRequests, msgRateLimited)
}

// Unverified is an Identifier that accepts any non-empty key as an
// anonymous client. It exists for embedders that run Lexview behind their
// own gateway; it performs no authentication.
type Unverified struct{}

// Identify implements Identifier.
func (Unverified) Identify(_ context.Context, key string, _ *http.Request) (*Client, error) {
	return &Client{Key: key}, nil
}
