package netlexicons

import (
	"context"
	"maps"
	"time"
)

// pendingEvents bounds the schema commits waiting for a refresh; when it
// is full, further ones are dropped (the periodic re-check catches them).
const pendingEvents = 256

// tracked is the in-memory copy of the rows the live event source
// filters on: authority DID → NSIDs.
type tracked map[string]map[string]bool

// reload re-reads the tracked set from the store.
func (s *Service) reload(ctx context.Context) error {
	rows, err := s.opt.Store.ListNetworkLexicons(ctx)
	if err != nil {
		return err
	}
	t := tracked{}
	for _, r := range rows {
		if t[r.AuthorityDID] == nil {
			t[r.AuthorityDID] = map[string]bool{}
		}
		t[r.AuthorityDID][r.NSID] = true
	}
	s.addingMu.Lock()
	for nsid, did := range s.adding {
		if t[did] == nil {
			t[did] = map[string]bool{}
		}
		t[did][nsid] = true
	}
	s.addingMu.Unlock()
	s.tracked.Store(&t)
	return nil
}

// doneAdding ends what track began for an Add of nsid: from now on a
// reload tracks nsid only if its row is stored.
func (s *Service) doneAdding(nsid string) {
	s.addingMu.Lock()
	delete(s.adding, nsid)
	s.addingMu.Unlock()
}

// track adds did → nsid to the tracked set, and keeps it there across
// reloads until doneAdding.
func (s *Service) track(did, nsid string) {
	s.addingMu.Lock()
	s.adding[nsid] = did
	s.addingMu.Unlock()
	t := tracked{}
	if cur := s.tracked.Load(); cur != nil {
		for d, ns := range *cur {
			t[d] = maps.Clone(ns)
		}
	}
	if t[did] == nil {
		t[did] = map[string]bool{}
	}
	t[did][nsid] = true
	s.tracked.Store(&t)
}

// Following reports whether any network lexicon is tracked: the live
// event source then follows com.atproto.lexicon.schema.
func (s *Service) Following() bool {
	t := s.tracked.Load()
	return t != nil && len(*t) > 0
}

// Commit hands over a com.atproto.lexicon.schema commit (create, update
// or delete) seen on the live event source: when did is the authority of
// the tracked lexicon rkey, a refresh of it is queued for Run and Commit
// reports true.
func (s *Service) Commit(did, rkey string) bool {
	t := s.tracked.Load()
	if t == nil || !(*t)[did][rkey] {
		return false
	}
	select {
	case s.pending <- rkey:
	default:
		s.opt.Logger.Warn("network lexicon refresh queue full; the periodic re-check will catch up", "nsid", rkey)
	}
	return true
}

// Run refreshes network lexicons until ctx ends: those whose schema
// commits the live event source reported (Commit), at once, and all of
// them every interval (the re-check of revisions the source missed).
func (s *Service) Run(ctx context.Context, interval time.Duration) {
	if err := s.reload(ctx); err != nil && ctx.Err() == nil {
		s.opt.Logger.Warn("reading network lexicons failed", "err", err)
	}
	recheck := time.NewTimer(interval)
	defer recheck.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case nsid := <-s.pending:
			if _, err := s.Refresh(ctx, nsid, ReasonEvent); err != nil && ctx.Err() == nil {
				s.opt.Logger.Warn("refreshing a network lexicon failed", "nsid", nsid, "err", err)
			}
		case <-recheck.C:
			if _, err := s.RefreshAll(ctx, ReasonRecheck); err != nil && ctx.Err() == nil {
				s.opt.Logger.Warn("re-checking network lexicons failed", "err", err)
			}
			if err := s.reload(ctx); err != nil && ctx.Err() == nil {
				s.opt.Logger.Warn("reading network lexicons failed", "err", err)
			}
			recheck.Reset(interval)
		}
	}
}
