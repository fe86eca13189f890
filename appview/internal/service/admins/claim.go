package admins

import (
	"context"
	"crypto/subtle"
	"encoding/base64"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/storage"
)

// ClaimTokenHeader carries the claim token on the admin request that
// claims a fresh instance (ClaimPolicy with a token).
const ClaimTokenHeader = "X-Claim-Token"

// ClaimTokenPrefix starts every claim token.
const ClaimTokenPrefix = "hvclaim_"

// ClaimPolicy says which admin request may claim a fresh instance, one
// with no admin user yet, making its caller the super user.
type ClaimPolicy struct {
	// FirstRequest lets the first authenticated admin request claim it
	// (the interface specification's rule).
	FirstRequest bool
	// Token, when set, lets the first authenticated admin request that
	// carries it claim the instance.
	Token string
	// Command is the shell command that claims the instance, as its
	// operator types it ("appview admin bootstrap --did <your DID>");
	// empty when a program embedding Lexview claims it through the Go
	// API (appview's App.Bootstrap).
	Command string
}

// How says how an operator claims the instance: the command, quoted, or
// the Go API.
func (p ClaimPolicy) How() string {
	if p.Command != "" {
		return "`" + p.Command + "`"
	}
	return "App.Bootstrap (the program embedding Lexview calls it)"
}

// ClaimTokenFrom returns the claim token made of secret (its first 24
// bytes), for a token that must stay the same across restarts without
// being stored: secret is derived from a stored one.
func ClaimTokenFrom(secret []byte) string {
	return ClaimTokenPrefix + base64.RawURLEncoding.EncodeToString(secret[:min(len(secret), 24)])
}

// unclaimedError refuses a request that may not claim a fresh instance,
// saying how to claim it.
func (p ClaimPolicy) unclaimedError() error {
	msg := "this instance has no admin yet: claim it with " + p.How()
	if p.Token != "" {
		msg += ", or send the claim token printed at start-up in the " + ClaimTokenHeader + " header"
	}
	return fail.New(fail.Forbidden, msg)
}

// mayClaim reports whether a request carrying token may claim the
// instance.
func (p ClaimPolicy) mayClaim(token string) bool {
	if p.FirstRequest {
		return true
	}
	return p.Token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(p.Token)) == 1
}

// ClaimCommand is the command that claims the instance (ClaimPolicy's
// Command), for the pages that say how.
func (s *Service) ClaimCommand() string { return s.claimPolicy.Command }

// Unclaimed reports whether the instance has no admin user yet.
func (s *Service) Unclaimed(ctx context.Context) (bool, error) {
	users, err := s.store.ListAdminUsers(ctx)
	return len(users) == 0, err
}

// claim is ByDID's path for a DID with no admin user: the claim when the
// policy allows it, else a refusal that says how to claim a fresh
// instance, or the plain Forbidden of a claimed one.
func (s *Service) claim(ctx context.Context, did syntax.DID, token string) (storage.AdminUser, error) {
	if s.claimPolicy.mayClaim(token) {
		return s.ClaimFirst(ctx, did)
	}
	if unclaimed, err := s.Unclaimed(ctx); err != nil {
		return storage.AdminUser{}, err
	} else if unclaimed {
		return storage.AdminUser{}, s.claimPolicy.unclaimedError()
	}
	return storage.AdminUser{}, errForbidden
}

var errForbidden = fail.New(fail.Forbidden, "forbidden")
