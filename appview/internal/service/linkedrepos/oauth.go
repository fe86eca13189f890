package linkedrepos

import (
	"context"
	"slices"
	"strings"

	"github.com/bluesky-social/indigo/atproto/identity"
	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/service/oauthclient"
)

// PurposeLinkedRepo names the OAuth flows that authorize a grant, so that
// the instance's callback hands them to CompleteAuthorization.
const PurposeLinkedRepo = "linked_repo"

// Flows is the instance's OAuth client as linked repos use it
// (oauthclient.Client).
type Flows interface {
	Authorize(ctx context.Context, req oauthclient.Request) (string, error)
	EndSession(ctx context.Context, did syntax.DID, sessionID string) error
}

// OAuthAuthorizer is the Authorizer over the instance's OAuth client: a
// grant's flow runs on the domain Origin names (the primary domain), asks
// for the grant's scopes, and comes back to the instance's callback as a
// flow of PurposeLinkedRepo.
type OAuthAuthorizer struct {
	// Flows returns the client (it may be built after the service).
	Flows  func() Flows
	Origin func(ctx context.Context) string
}

// AuthorizeURL implements Authorizer.
func (a OAuthAuthorizer) AuthorizeURL(ctx context.Context, req AuthorizeRequest) (string, error) {
	return a.Flows().Authorize(ctx, oauthclient.Request{
		DomainOrigin: a.Origin(ctx), Identifier: req.LoginHint, Scopes: strings.Fields(req.Scope),
		Purpose: PurposeLinkedRepo, Subject: flowSubject(req.GrantID, req.InviteID),
	})
}

// flowSubject is a flow's reference to its grant and, when it was started
// from an invite, the invite.
func flowSubject(grantID, inviteID string) string {
	if inviteID == "" {
		return grantID
	}
	return grantID + " " + inviteID
}

// Handles resolves a handle to its account (identity.Directory).
type Handles interface {
	LookupHandle(ctx context.Context, h syntax.Handle) (*identity.Identity, error)
}

// Authorized is a grant bound by a finished authorization.
type Authorized struct {
	GrantID string `json:"grant_id"`
	DID     string `json:"did"`
	Status  string `json:"status"`
}

// CompleteAuthorization binds the grant a finished authorization flow
// (res, of PurposeLinkedRepo) was started for to the account that
// finished it (MarkAuthorized, or RedeemInvite for a flow started from an
// invite), keeping the OAuth session's reference (the session itself
// stays, sealed, in the OAuth client's store). A grant pinned to a handle
// binds only an account that handle resolves to now (handles). A refused
// binding ends the new session (flows) and returns why.
func (s *Service) CompleteAuthorization(ctx context.Context, res oauthclient.Result, flows Flows, handles Handles) (Authorized, error) {
	grantID, inviteID, _ := strings.Cut(res.Subject, " ")
	acct := Account{DID: res.DID.String()}
	g, err := s.Get(ctx, grantID)
	if err == nil && g.DID == "" && g.Handle != "" {
		if h, perr := syntax.ParseHandle(g.Handle); perr == nil {
			if id, lerr := handles.LookupHandle(ctx, h); lerr == nil && id.DID == res.DID {
				acct.Handle = g.Handle
			}
		}
	}
	sess := Session{Sealed: res.SessionID}
	if err == nil {
		if inviteID != "" {
			err = s.RedeemInvite(ctx, grantID, inviteID, acct, sess)
		} else {
			err = s.MarkAuthorized(ctx, grantID, acct, sess)
		}
	}
	if err != nil {
		if eerr := flows.EndSession(ctx, res.DID, res.SessionID); eerr != nil {
			s.opt.Logger.WarnContext(ctx, "ending a refused linked-repo session failed", "did", res.DID, "err", eerr)
		}
		return Authorized{}, err
	}
	if s.opt.Linked != nil {
		s.opt.Linked(acct.DID)
	}
	return Authorized{GrantID: grantID, DID: acct.DID, Status: "active"}, nil
}

// Scopes lists every scope the grants ask for, each once: the instance's
// client metadata must declare them for authorization servers to grant
// them.
func (s *Service) Scopes(ctx context.Context) ([]string, error) {
	grants, err := s.List(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, g := range grants {
		for _, sc := range strings.Fields(g.Scopes) {
			if !slices.Contains(out, sc) {
				out = append(out, sc)
			}
		}
	}
	return out, nil
}
