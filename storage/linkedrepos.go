package storage

import (
	"context"
	"time"
)

// Linked repo grant statuses.
const (
	LinkedRepoPending     = "pending"      // not authorized yet
	LinkedRepoActive      = "active"       // authorized; its session works
	LinkedRepoNeedsReauth = "needs_reauth" // a session refresh failed
)

// LinkedRepoGrant is a grant by which an account lets the instance write
// into its repository with Scopes.
type LinkedRepoGrant struct {
	ID string // UUID
	// DID is the bound account; "" (NULL) for an open grant, or one
	// pinned to a handle, before authorization. A grant pinned to a DID
	// carries it from creation. Unique among grants.
	DID string
	// Handle is the handle or DID the grant is pinned to; "" for an open
	// grant.
	Handle string
	Reason string
	// Scopes is the whitespace-separated OAuth scope string; immutable.
	Scopes string
	Status string // LinkedRepoPending, LinkedRepoActive or LinkedRepoNeedsReauth
	// LastError is the last refresh failure; "" (NULL) when none.
	LastError       string
	LastRefreshedAt time.Time // zero (NULL) until the first authorization
	AuthorizedAt    time.Time // zero (NULL) until the first authorization
	CreatedBy       string    // the admin's DID
	CreatedAt       time.Time
}

// LinkedRepoInvite is an invite to authorize a grant. The token it was
// minted with is never stored: ID is its hex SHA-256.
type LinkedRepoInvite struct {
	ID        string
	GrantID   string
	CreatedAt time.Time
	ExpiresAt time.Time
	UsedAt    time.Time // zero while unused
	RevokedAt time.Time // zero while not revoked
}

// Outstanding reports whether the invite can still be used at now: not
// used, not revoked and not expired.
func (i LinkedRepoInvite) Outstanding(now time.Time) bool {
	return i.UsedAt.IsZero() && i.RevokedAt.IsZero() && now.Before(i.ExpiresAt)
}

// LinkedRepoSession is a grant's OAuth session, sealed by the OAuth
// client: the store keeps it as an opaque string.
type LinkedRepoSession struct {
	GrantID   string
	Sealed    string
	ExpiresAt time.Time // when the session's tokens expire
	UpdatedAt time.Time
}

// LinkedRepoStore keeps linked repo grants, their invites and their
// sealed sessions.
type LinkedRepoStore interface {
	// CreateLinkedRepo stores g; ErrConflict when g.DID is not "" and
	// another grant has it.
	CreateLinkedRepo(ctx context.Context, g LinkedRepoGrant) error
	// GetLinkedRepo returns one grant, or ErrNotFound.
	GetLinkedRepo(ctx context.Context, id string) (LinkedRepoGrant, error)
	// ListLinkedRepos returns every grant, newest first.
	ListLinkedRepos(ctx context.Context) ([]LinkedRepoGrant, error)
	// DeleteLinkedRepo removes a grant with its invites and its session;
	// ErrNotFound when absent.
	DeleteLinkedRepo(ctx context.Context, id string) error

	// AuthorizeLinkedRepo binds grant id to did and stores its session,
	// in one transaction: status LinkedRepoActive, LastError cleared,
	// AuthorizedAt and LastRefreshedAt at. ErrNotFound when the grant is
	// absent, ErrConflict when another grant has did.
	AuthorizeLinkedRepo(ctx context.Context, id, did string, s LinkedRepoSession, at time.Time) error
	// RefreshLinkedRepo replaces the session of grant id and sets
	// LastRefreshedAt to at; ErrNotFound when the grant is absent.
	RefreshLinkedRepo(ctx context.Context, id string, s LinkedRepoSession, at time.Time) error
	// LinkedRepoNeedsReauth sets grant id to LinkedRepoNeedsReauth with
	// LastError msg; ErrNotFound when absent.
	LinkedRepoNeedsReauth(ctx context.Context, id, msg string) error
	// GetLinkedRepoSession returns the session of grant id, or
	// ErrNotFound when it has none.
	GetLinkedRepoSession(ctx context.Context, id string) (LinkedRepoSession, error)

	// CreateLinkedRepoInvite stores inv; ErrNotFound when its grant is
	// absent.
	CreateLinkedRepoInvite(ctx context.Context, inv LinkedRepoInvite) error
	// GetLinkedRepoInvite returns an invite in any state, or ErrNotFound.
	GetLinkedRepoInvite(ctx context.Context, inviteID string) (LinkedRepoInvite, error)
	// ListLinkedRepoInvites returns the invites of grant id outstanding
	// at now, newest first; ErrNotFound when the grant is absent.
	ListLinkedRepoInvites(ctx context.Context, grantID string, now time.Time) ([]LinkedRepoInvite, error)
	// RevokeLinkedRepoInvite revokes an invite of grant grantID that is
	// outstanding at now; ErrNotFound when none is (unknown, used,
	// revoked or expired, or another grant's).
	RevokeLinkedRepoInvite(ctx context.Context, grantID, inviteID string, now time.Time) error
	// RedeemLinkedRepoInvite uses up an invite of grant id outstanding at
	// at and authorizes the grant as AuthorizeLinkedRepo does, in one
	// transaction: on any error nothing changes. ErrNotFound when the
	// invite is not outstanding (or not the grant's) or the grant is
	// absent, ErrConflict when another grant has did. Of concurrent calls
	// for one invite, one succeeds.
	RedeemLinkedRepoInvite(ctx context.Context, inviteID, id, did string, s LinkedRepoSession, at time.Time) error
}
