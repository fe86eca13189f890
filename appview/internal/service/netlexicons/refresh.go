package netlexicons

import (
	"context"
	"errors"
	"time"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/lexicon/lexresolve"
	"github.com/lexview/lexview/storage"
)

// Refresh fetches a tracked lexicon again (reason: ReasonEvent or
// ReasonRecheck). A schema whose record CID changed is stored as a new
// revision (its scripts, target collection and backfill flag kept; no
// backfill job) and logged as lexicon.network_updated; an unchanged one
// only moves last_fetched_at. A schema the authority no longer publishes
// stays in use: the first time it is seen missing, the row notes it and
// lexicon.network_deleted_upstream is logged. Other failures are logged
// (lexicon.network_fetch_failed) and change nothing. An NSID that is not
// tracked, or whose lexicon was removed, is left alone (updated false).
func (s *Service) Refresh(ctx context.Context, nsid, reason string) (updated bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	row, err := s.opt.Store.GetNetworkLexicon(ctx, nsid)
	if errors.Is(err, storage.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	cur, ok := s.opt.Lexicons.Snapshot().Get(nsid)
	if !ok {
		return false, nil
	}
	sch, err := s.opt.Resolver.Schema(ctx, nsid)
	if err != nil {
		return false, s.fetchFailed(ctx, row, reason, err)
	}
	now := s.opt.Now()
	row.LastFetchedAt = now
	if !row.UpstreamDeletedAt.IsZero() {
		row.UpstreamDeletedAt = time.Time{}
		s.opt.Events.Record(ctx, eventlog.Entry{Type: EventRestoredUpstream, Subject: nsid,
			Detail: map[string]any{"authority_did": sch.Authority.DID, "reason": reason}})
	}
	changed := sch.CID != row.CID || sch.Authority.DID != row.AuthorityDID
	row.AuthorityDID = sch.Authority.DID
	if !changed {
		s.opt.Metrics.LexiconFetch(reason, "unchanged")
		return false, s.opt.Store.PutNetworkLexicon(ctx, row)
	}
	backfill := cur.Backfill
	res, err := s.opt.Lexicons.Revise(ctx, "", lexicon.Upload{Document: sch.Document, Backfill: &backfill,
		TargetCollection: cur.TargetCollection, Script: cur.Script, IndexHook: cur.IndexHook})
	if err != nil {
		return false, s.fetchFailed(ctx, row, reason, &lexresolve.Error{Step: lexresolve.StepLexicon, NSID: nsid, Msg: "storing the new revision failed", Err: err})
	}
	row.CID = sch.CID
	if err := s.opt.Store.PutNetworkLexicon(ctx, row); err != nil {
		return false, err
	}
	s.opt.Metrics.LexiconFetch(reason, "updated")
	s.opt.Events.Record(ctx, eventlog.Entry{Type: EventUpdated, Subject: nsid, Detail: map[string]any{
		"authority_did": sch.Authority.DID, "cid": sch.CID, "revision": res.Lexicon.Revision, "reason": reason,
	}})
	return true, nil
}

// fetchFailed records a failed refresh and returns err when it is not a
// resolution failure (a storage error).
func (s *Service) fetchFailed(ctx context.Context, row storage.NetworkLexicon, reason string, err error) error {
	e, ok := lexresolve.AsError(err)
	if !ok {
		return err
	}
	s.opt.Metrics.LexiconFetch(reason, string(e.Step))
	if e.Missing {
		if !row.UpstreamDeletedAt.IsZero() {
			return nil
		}
		row.UpstreamDeletedAt = s.opt.Now()
		s.opt.Events.Record(ctx, eventlog.Entry{Type: EventDeletedUpstream, Severity: eventlog.Warn, Subject: row.NSID,
			Detail: map[string]any{"authority_did": row.AuthorityDID, "reason": reason, "note": "the lexicon stays in use"}})
		return s.opt.Store.PutNetworkLexicon(ctx, row)
	}
	s.opt.Events.Record(ctx, eventlog.Entry{Type: EventFetchFailed, Severity: eventlog.Warn, Subject: row.NSID,
		Detail: map[string]any{"step": string(e.Step), "error": e.Error(), "upstream": e.Upstream, "reason": reason}})
	return nil
}

// RefreshAll refreshes every tracked lexicon (the periodic re-check) and
// returns how many were updated. A storage failure stops it.
func (s *Service) RefreshAll(ctx context.Context, reason string) (int, error) {
	rows, err := s.opt.Store.ListNetworkLexicons(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range rows {
		if ctx.Err() != nil {
			return n, ctx.Err()
		}
		updated, err := s.Refresh(ctx, r.NSID, reason)
		if err != nil {
			return n, err
		}
		if updated {
			n++
		}
	}
	return n, nil
}
