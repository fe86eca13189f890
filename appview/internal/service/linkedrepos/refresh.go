package linkedrepos

import (
	"context"
	"errors"
	"log/slog"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/storage"
)

// Refresher refreshes a kept OAuth session's tokens at its authorization
// server (oauthclient.Client).
type Refresher interface {
	Refresh(ctx context.Context, did syntax.DID, sessionID string) error
}

// RefreshAll refreshes the session of every active grant: a refreshed one
// is MarkRefreshed, a refused one (revoked at the PDS, expired, gone)
// MarkNeedsReauth with the error, until the account authorizes it again.
// It reports how many refreshes failed; the grants are independent, so a
// failure does not stop the pass.
func (s *Service) RefreshAll(ctx context.Context, r Refresher, log *slog.Logger) int {
	grants, err := s.List(ctx)
	if err != nil {
		log.WarnContext(ctx, "listing linked repo grants to refresh failed", "err", err)
		return 0
	}
	failed := 0
	for _, g := range grants {
		if ctx.Err() != nil {
			return failed
		}
		if g.Status != storage.LinkedRepoActive {
			continue
		}
		sess, err := s.opt.Store.GetLinkedRepoSession(ctx, g.ID)
		if err == nil {
			err = r.Refresh(ctx, syntax.DID(g.DID), sess.Sealed)
		}
		if err == nil {
			err = s.MarkRefreshed(ctx, g.ID, Session{Sealed: sess.Sealed})
			if err != nil {
				log.WarnContext(ctx, "recording a linked repo refresh failed", "grant", g.ID, "err", err)
			}
			continue
		}
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return failed
		}
		failed++
		log.InfoContext(ctx, "linked repo session refresh failed", "grant", g.ID, "did", g.DID, "err", err)
		if merr := s.MarkNeedsReauth(ctx, g.ID, err); merr != nil {
			log.WarnContext(ctx, "recording a linked repo refresh failure failed", "grant", g.ID, "err", merr)
		}
	}
	return failed
}
