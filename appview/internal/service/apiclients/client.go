// Package apiclients is the service for API clients: the Manager creates,
// edits and deletes them (the admin API, dev.service.* and the library
// call it), and the Registry identifies the client behind a client key,
// caches it, and keeps its rate-limit bucket. Reading the key and the
// other credentials from a request is the front end's part
// (web/clientauth).
package apiclients

import (
	"context"
	"errors"
)

// ErrInvalidClient is returned for an unknown or inactive client key.
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

type ctxKey struct{}

// WithClient returns a context carrying c.
func WithClient(ctx context.Context, c *Client) context.Context {
	return context.WithValue(ctx, ctxKey{}, c)
}

// FromContext returns the client identified for the call, if any.
func FromContext(ctx context.Context) (*Client, bool) {
	c, ok := ctx.Value(ctxKey{}).(*Client)
	return c, ok
}
