package linkedrepos

import (
	"context"
	"errors"
	"time"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/storage"
)

// Session is a grant's OAuth session as the OAuth client hands it over,
// opaque here: what finds the session again, and the expiry of its
// tokens when known. A finished authorization (CompleteAuthorization)
// hands over the session's ID; the tokens stay sealed in the client's own
// store.
type Session struct {
	Sealed    string
	ExpiresAt time.Time
}

// MaxErrorLength bounds a stored refresh error.
const MaxErrorLength = 1000

var (
	errNotActive    = fail.New(fail.Invalid, "the grant is not active")
	errInviteGrant  = fail.New(fail.NotFound, "invite not found")
	errEmptySession = fail.New(fail.Invalid, "the session is empty")
)

// MarkAuthorized records a completed authorization of grant id by acct:
// pending or needs_reauth → active, binding the grant to acct.DID and
// storing sess. It refuses (403) an account the grant is not pinned to
// (CheckBinding) and answers 409 when another grant has the DID.
func (s *Service) MarkAuthorized(ctx context.Context, id string, acct Account, sess Session) error {
	g, err := s.Get(ctx, id)
	if err != nil {
		return err
	}
	return s.authorize(ctx, g, acct, sess, "")
}

// RedeemInvite records an authorization completed through an invite: the
// invite must be outstanding and belong to grant id. The invite is used
// up and the grant authorized (as MarkAuthorized does) in one
// transaction, so a refused authorization (a wrong account, a DID another
// grant has) leaves the invite usable and stores nothing.
func (s *Service) RedeemInvite(ctx context.Context, id, inviteID string, acct Account, sess Session) error {
	g, err := s.Get(ctx, id)
	if err != nil {
		return err
	}
	inv, err := s.opt.Store.GetLinkedRepoInvite(ctx, inviteID)
	if errors.Is(err, storage.ErrNotFound) || err == nil && inv.GrantID != id {
		return errInviteGrant
	}
	if err != nil {
		return err
	}
	if !inv.Outstanding(s.opt.Now()) {
		return ErrInviteEnded
	}
	return s.authorize(ctx, g, acct, sess, inviteID)
}

func (s *Service) authorize(ctx context.Context, g storage.LinkedRepoGrant, acct Account, sess Session, inviteID string) error {
	if err := CheckBinding(g, acct); err != nil {
		return err
	}
	if sess.Sealed == "" {
		return errEmptySession
	}
	now := s.opt.Now().UTC()
	stored := storage.LinkedRepoSession{GrantID: g.ID, Sealed: sess.Sealed, ExpiresAt: sess.ExpiresAt, UpdatedAt: now}
	var err error
	if inviteID == "" {
		err = s.opt.Store.AuthorizeLinkedRepo(ctx, g.ID, acct.DID, stored, now)
	} else {
		err = s.opt.Store.RedeemLinkedRepoInvite(ctx, inviteID, g.ID, acct.DID, stored, now)
	}
	switch {
	case errors.Is(err, storage.ErrConflict):
		return errDIDTaken
	case errors.Is(err, storage.ErrNotFound) && inviteID != "":
		// The invite ended (or the grant went) since it was read.
		return ErrInviteEnded
	case errors.Is(err, storage.ErrNotFound):
		return errGrantNotFound
	case err != nil:
		return err
	}
	detail := map[string]string{"did": acct.DID, "previous_status": g.Status}
	if inviteID != "" {
		detail["invite_id"] = inviteID
	}
	s.audit(ctx, eventlog.Entry{Type: "linked_repo.authorized", ActorDID: acct.DID, Subject: g.ID, Detail: detail})
	return nil
}

// MarkRefreshed records a successful refresh of an active grant's
// session: sess replaces the stored one and last_refreshed_at moves.
func (s *Service) MarkRefreshed(ctx context.Context, id string, sess Session) error {
	g, err := s.Get(ctx, id)
	if err != nil {
		return err
	}
	if g.Status != storage.LinkedRepoActive {
		return errNotActive
	}
	if sess.Sealed == "" {
		return errEmptySession
	}
	now := s.opt.Now().UTC()
	err = s.opt.Store.RefreshLinkedRepo(ctx, id, storage.LinkedRepoSession{GrantID: id, Sealed: sess.Sealed, ExpiresAt: sess.ExpiresAt, UpdatedAt: now}, now)
	if errors.Is(err, storage.ErrNotFound) {
		return errGrantNotFound
	}
	return err
}

// MarkNeedsReauth records a failed refresh: active → needs_reauth with
// last_error (cause's text, bounded). A grant already in needs_reauth
// keeps its status and takes the newer error; a pending one is a 400.
func (s *Service) MarkNeedsReauth(ctx context.Context, id string, cause error) error {
	g, err := s.Get(ctx, id)
	if err != nil {
		return err
	}
	if g.Status == storage.LinkedRepoPending {
		return errNotActive
	}
	msg := "refresh failed"
	if cause != nil {
		msg = cause.Error()
	}
	if r := []rune(msg); len(r) > MaxErrorLength {
		msg = string(r[:MaxErrorLength])
	}
	if err := s.opt.Store.LinkedRepoNeedsReauth(ctx, id, msg); err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return errGrantNotFound
		}
		return err
	}
	s.audit(ctx, eventlog.Entry{Type: "linked_repo.refresh_failed", Severity: eventlog.Warn, ActorDID: g.DID, Subject: id,
		Detail: map[string]string{"error": msg, "previous_status": g.Status}})
	return nil
}
