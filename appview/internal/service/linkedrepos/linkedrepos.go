// Package linkedrepos is the linked repos service: grants by which an
// account lets the instance write into its repository, the invites that
// carry a grant to whoever follows them, and the status of each grant's
// OAuth session. It runs no OAuth flow itself: the instance's OAuth client
// builds authorization URLs through an Authorizer and reports the outcome
// through MarkAuthorized, RedeemInvite, MarkRefreshed and MarkNeedsReauth.
package linkedrepos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"
	"unicode/utf8"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/storage"
)

// MaxReasonLength bounds a grant's reason, in characters.
const MaxReasonLength = 1000

// AuthorizeRequest asks the OAuth client for an authorization URL.
type AuthorizeRequest struct {
	GrantID string
	// InviteID is the invite being followed; "" for an admin's
	// authorize call.
	InviteID string
	// LoginHint is the handle or DID to sign in as; "" lets the account
	// choose (an open grant).
	LoginHint string
	// Scope is the grant's scope string.
	Scope string
}

// Authorizer is the instance's OAuth client as linked repos use it: it
// starts an authorization and returns the URL to send the account to.
type Authorizer interface {
	AuthorizeURL(ctx context.Context, req AuthorizeRequest) (string, error)
}

// Options configure a Service.
type Options struct {
	Store  storage.LinkedRepoStore
	Events *eventlog.Log
	// Authorizer is the OAuth client; nil until one is wired, and then
	// authorize and invite sign-in answer 503.
	Authorizer Authorizer
	// BaseURL returns the origin invite URLs are built on (the primary
	// domain, else PUBLIC_URL), without a trailing slash.
	BaseURL func(ctx context.Context) string
	Now     func() time.Time
	// Rand is the source of invite tokens; nil means crypto/rand.
	Rand   io.Reader
	Logger *slog.Logger
	// Linked, when set, is called with the DID of each account a finished
	// authorization bound to a grant (the on-demand backfill of its
	// repository); it must not wait.
	Linked func(did string)
}

// Service manages linked repo grants and their invites.
type Service struct{ opt Options }

// New returns a Service.
func New(opt Options) *Service {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	return &Service{opt: opt}
}

// Errors answered as the spec states.
var (
	errGrantNotFound = fail.New(fail.NotFound, "linked repo grant not found")
	errDIDTaken      = fail.New(fail.Conflict, "a linked repo grant already exists for the DID")
	errOpenGrant     = fail.New(fail.Invalid, "the grant is open (no handle): use an invite")
	errNoAuthorizer  = fail.New(fail.Unavailable, "the instance's OAuth client is not available yet")
)

// CreateInput is a new grant's fields as an admin sends them.
type CreateInput struct {
	Scopes string
	Handle string
	Reason string
}

// Create stores a new pending grant on behalf of actor.
func (s *Service) Create(ctx context.Context, actor string, in CreateInput) (storage.LinkedRepoGrant, error) {
	scopes, err := NormalizeScopes(in.Scopes)
	if err != nil {
		return storage.LinkedRepoGrant{}, err
	}
	handle, did, err := pinned(in.Handle)
	if err != nil {
		return storage.LinkedRepoGrant{}, err
	}
	if utf8.RuneCountInString(in.Reason) > MaxReasonLength {
		return storage.LinkedRepoGrant{}, fail.Invalidf("reason must be at most %d characters", MaxReasonLength)
	}
	if !utf8.ValidString(in.Reason) {
		return storage.LinkedRepoGrant{}, fail.New(fail.Invalid, "reason must be valid UTF-8")
	}
	g := storage.LinkedRepoGrant{
		ID: storage.NewID(), DID: did, Handle: handle, Reason: in.Reason, Scopes: scopes,
		Status: storage.LinkedRepoPending, CreatedBy: actor, CreatedAt: s.opt.Now().UTC(),
	}
	switch err := s.opt.Store.CreateLinkedRepo(ctx, g); {
	case errors.Is(err, storage.ErrConflict):
		return storage.LinkedRepoGrant{}, errDIDTaken
	case err != nil:
		return storage.LinkedRepoGrant{}, err
	}
	s.audit(ctx, eventlog.Entry{Type: "linked_repo.created", ActorDID: actor, Subject: g.ID,
		Detail: map[string]string{"handle": g.Handle, "scopes": g.Scopes}})
	return g, nil
}

// List returns every grant, newest first.
func (s *Service) List(ctx context.Context) ([]storage.LinkedRepoGrant, error) {
	return s.opt.Store.ListLinkedRepos(ctx)
}

// Get returns one grant, or a 404.
func (s *Service) Get(ctx context.Context, id string) (storage.LinkedRepoGrant, error) {
	g, err := s.opt.Store.GetLinkedRepo(ctx, id)
	if errors.Is(err, storage.ErrNotFound) {
		return g, errGrantNotFound
	}
	return g, err
}

// Delete removes a grant with its invites and stored session on behalf
// of actor. The authorization at the PDS is not revoked.
func (s *Service) Delete(ctx context.Context, actor, id string) error {
	g, err := s.Get(ctx, id)
	if err != nil {
		return err
	}
	if err := s.opt.Store.DeleteLinkedRepo(ctx, id); err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return errGrantNotFound
		}
		return err
	}
	s.audit(ctx, eventlog.Entry{Type: "linked_repo.deleted", ActorDID: actor, Subject: id,
		Detail: map[string]string{"did": g.DID, "handle": g.Handle}})
	return nil
}

// Authorize returns the URL that starts the authorization of a pinned
// grant. An open grant is a 400 (it is authorized through an invite).
func (s *Service) Authorize(ctx context.Context, id string) (string, error) {
	g, err := s.Get(ctx, id)
	if err != nil {
		return "", err
	}
	if g.Handle == "" {
		return "", errOpenGrant
	}
	return s.authorizeURL(ctx, AuthorizeRequest{GrantID: g.ID, LoginHint: g.Handle, Scope: g.Scopes})
}

func (s *Service) authorizeURL(ctx context.Context, req AuthorizeRequest) (string, error) {
	if s.opt.Authorizer == nil {
		return "", errNoAuthorizer
	}
	u, err := s.opt.Authorizer.AuthorizeURL(ctx, req)
	if err != nil {
		return "", fmt.Errorf("start the authorization of grant %s: %w", req.GrantID, err)
	}
	return u, nil
}

// SignInAvailable reports whether an OAuth client is wired, so invite
// pages can offer sign-in.
func (s *Service) SignInAvailable() bool { return s.opt.Authorizer != nil }

func (s *Service) audit(ctx context.Context, e eventlog.Entry) {
	if s.opt.Events != nil {
		s.opt.Events.Record(ctx, e)
	}
}
