package storage

import (
	"context"
	"time"
)

// OAuthAuthRequest is an authorization request the instance, as an OAuth
// client, has pushed to an account's authorization server and is waiting
// to see come back on its callback. The state is single use: taking it
// removes it.
type OAuthAuthRequest struct {
	State string // the random `state`; the primary key
	// Purpose names what the callback finishes (an admin sign-in, a
	// linked-repo grant); Subject is the purpose's own reference (a grant
	// ID), empty when it needs none.
	Purpose string
	Subject string
	// DomainOrigin is the registered domain the flow started on; the
	// callback must arrive on it. ClientID is the client_id used.
	DomainOrigin string
	ClientID     string
	// AccountDID is the account the flow was started for; empty when
	// started without one.
	AccountDID string
	// SealedData is the sealed request state (PKCE verifier, DPoP private
	// key, endpoints, nonces); only the OAuth client can open it.
	SealedData string
	CreatedAt  time.Time
	ExpiresAt  time.Time
}

// OAuthClientSession is a session the instance holds at an account's
// authorization server, as an OAuth client: keyed by the account's DID and
// a session ID.
type OAuthClientSession struct {
	DID       string
	SessionID string
	// Purpose and DomainOrigin are copied from the authorization request
	// that made the session; ClientID is the client_id it was issued to.
	Purpose      string
	DomainOrigin string
	ClientID     string
	// SealedData is the sealed session (tokens, DPoP private key, nonces,
	// endpoints); only the OAuth client can open it.
	SealedData string
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// OAuthClientStore keeps the instance's own OAuth client state: pending
// authorization requests and the sessions they produce.
type OAuthClientStore interface {
	// CreateOAuthAuthRequest stores a pending request; ErrConflict when
	// its state is taken.
	CreateOAuthAuthRequest(ctx context.Context, r OAuthAuthRequest) error
	// TakeOAuthAuthRequest removes the request state and returns it, in
	// one statement, so that a state is used at most once even under
	// concurrent callbacks. ErrNotFound for an unknown, used or expired
	// (ExpiresAt not after now) state; an expired one is removed too.
	TakeOAuthAuthRequest(ctx context.Context, state string, now time.Time) (OAuthAuthRequest, error)
	// DeleteExpiredOAuthAuthRequests removes requests expired at now and
	// returns how many.
	DeleteExpiredOAuthAuthRequests(ctx context.Context, now time.Time) (int64, error)

	// PutOAuthClientSession stores s, replacing the session with the same
	// DID and SessionID (its CreatedAt is kept).
	PutOAuthClientSession(ctx context.Context, s OAuthClientSession) error
	// GetOAuthClientSession returns one session, or ErrNotFound.
	GetOAuthClientSession(ctx context.Context, did, sessionID string) (OAuthClientSession, error)
	// DeleteOAuthClientSession removes one session; ErrNotFound when there
	// was none.
	DeleteOAuthClientSession(ctx context.Context, did, sessionID string) error
}
