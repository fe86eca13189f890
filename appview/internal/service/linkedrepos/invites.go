package linkedrepos

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/storage"
)

// Invite lifetimes, in seconds.
const (
	MinInviteLifetime     = 60
	MaxInviteLifetime     = 2_592_000
	DefaultInviteLifetime = 7 * 24 * 60 * 60
)

// InvitePath is where invite URLs point: the token follows it.
const InvitePath = "/invite/"

// tokenBytes is the size of an invite token's randomness (256 bits).
const tokenBytes = 32

var (
	errInviteNotFound = fail.New(fail.NotFound, "invite not found")
	// ErrInviteEnded is returned for an invite that exists but was used,
	// revoked or has expired.
	ErrInviteEnded = errors.New("this invite was already used, was revoked or has expired")
)

// InviteID returns the stored identifier of an invite token: the hex
// SHA-256 of the token's text.
func InviteID(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// Minted is a new invite: its URL (carrying the token, shown once) and
// its expiry.
type Minted struct {
	URL       string
	ExpiresAt time.Time
}

// Invite mints an invite for grant id on behalf of actor. expiresIn is
// its lifetime in seconds (nil: DefaultInviteLifetime); out of range is a
// 400.
func (s *Service) Invite(ctx context.Context, actor, id string, expiresIn *int64) (Minted, error) {
	life := int64(DefaultInviteLifetime)
	if expiresIn != nil {
		life = *expiresIn
	}
	if life < MinInviteLifetime || life > MaxInviteLifetime {
		return Minted{}, fail.Invalidf("expires_in must be between %d and %d seconds", MinInviteLifetime, MaxInviteLifetime)
	}
	if s.opt.BaseURL == nil {
		return Minted{}, errors.New("linked repos: no base URL for invites")
	}
	raw := make([]byte, tokenBytes)
	rnd := s.opt.Rand
	if rnd == nil {
		rnd = rand.Reader
	}
	if _, err := io.ReadFull(rnd, raw); err != nil {
		return Minted{}, fmt.Errorf("invite token: %w", err)
	}
	token := base64.RawURLEncoding.EncodeToString(raw)
	now := s.opt.Now().UTC()
	inv := storage.LinkedRepoInvite{ID: InviteID(token), GrantID: id, CreatedAt: now, ExpiresAt: now.Add(time.Duration(life) * time.Second)}
	if err := s.opt.Store.CreateLinkedRepoInvite(ctx, inv); err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return Minted{}, errGrantNotFound
		}
		return Minted{}, err
	}
	s.audit(ctx, eventlog.Entry{Type: "linked_repo.invite_created", ActorDID: actor, Subject: id,
		Detail: map[string]string{"invite_id": inv.ID}})
	return Minted{URL: s.opt.BaseURL(ctx) + InvitePath + token, ExpiresAt: inv.ExpiresAt}, nil
}

// Invites lists the outstanding invites of grant id, newest first.
func (s *Service) Invites(ctx context.Context, id string) ([]storage.LinkedRepoInvite, error) {
	list, err := s.opt.Store.ListLinkedRepoInvites(ctx, id, s.opt.Now())
	if errors.Is(err, storage.ErrNotFound) {
		return nil, errGrantNotFound
	}
	return list, err
}

// RevokeInvite revokes an outstanding invite of grant id on behalf of
// actor; 404 when none matches (unknown, used, revoked or expired).
func (s *Service) RevokeInvite(ctx context.Context, actor, id, inviteID string) error {
	err := s.opt.Store.RevokeLinkedRepoInvite(ctx, id, inviteID, s.opt.Now())
	if errors.Is(err, storage.ErrNotFound) {
		return errInviteNotFound
	}
	if err != nil {
		return err
	}
	s.audit(ctx, eventlog.Entry{Type: "linked_repo.invite_revoked", ActorDID: actor, Subject: id,
		Detail: map[string]string{"invite_id": inviteID}})
	return nil
}

// Opened is what an invite page shows: the grant it carries.
type Opened struct {
	Grant  storage.LinkedRepoGrant
	Invite storage.LinkedRepoInvite
}

// OpenInvite looks up an invite by its token: a 404 for an unknown one,
// ErrInviteEnded for one used, revoked or expired.
func (s *Service) OpenInvite(ctx context.Context, token string) (Opened, error) {
	inv, err := s.opt.Store.GetLinkedRepoInvite(ctx, InviteID(token))
	if errors.Is(err, storage.ErrNotFound) {
		return Opened{}, errInviteNotFound
	}
	if err != nil {
		return Opened{}, err
	}
	if !inv.Outstanding(s.opt.Now()) {
		return Opened{}, ErrInviteEnded
	}
	g, err := s.Get(ctx, inv.GrantID)
	if err != nil {
		return Opened{}, err
	}
	return Opened{Grant: g, Invite: inv}, nil
}

// StartInvite starts the sign-in of whoever follows an invite and
// returns the authorization URL. A pinned grant signs in its pinned
// account; an open grant the account named by loginHint (a handle or
// DID; "" lets the account choose at its PDS). The invite is not used
// up here: RedeemInvite does that when the authorization completes.
func (s *Service) StartInvite(ctx context.Context, token, loginHint string) (string, error) {
	o, err := s.OpenInvite(ctx, token)
	if err != nil {
		return "", err
	}
	hint := o.Grant.Handle
	if hint == "" && loginHint != "" {
		id, err := syntax.ParseAtIdentifier(loginHint)
		if err != nil {
			return "", fail.Invalidf("not a handle or DID: %q", loginHint)
		}
		hint = id.Normalize().String()
	}
	return s.authorizeURL(ctx, AuthorizeRequest{GrantID: o.Grant.ID, InviteID: o.Invite.ID, LoginHint: hint, Scope: o.Grant.Scopes})
}
