package backfilljobs

import (
	"context"

	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/backfill"
)

var (
	errLaneFull = fail.New(fail.Unavailable, "too many accounts are waiting to be fetched: try again later")
	errNothing  = fail.New(fail.Invalid, "no record lexicons to backfill")
)

// FetchAccount asks for one account's repository (a DID or a handle) to
// be fetched at once, beside the jobs, on behalf of actor. The answer's
// status is queued, pending (already queued or being fetched) or recent
// (fetched lately: not again before Again); a full queue is Unavailable,
// an instance without record lexicons Invalid.
// The fetch's outcome goes to the event log (backfill.on_demand).
func (s *Service) FetchAccount(ctx context.Context, actor, account string) (backfill.OnDemandAnswer, error) {
	m, err := s.manager()
	if err != nil {
		return backfill.OnDemandAnswer{}, err
	}
	a, err := m.RequestAccount(ctx, account, actor)
	if err != nil {
		return a, kind(err)
	}
	switch a.Status {
	case backfill.OnDemandFull:
		return a, errLaneFull
	case backfill.OnDemandNothing:
		return a, errNothing
	}
	return a, nil
}

// Accounts describes this instance's on-demand lane: the accounts being
// fetched and waiting.
func (s *Service) Accounts() (backfill.OnDemandState, error) {
	m, err := s.manager()
	if err != nil {
		return backfill.OnDemandState{}, err
	}
	return m.OnDemand(), nil
}

// Trigger returns the hook a sign-in flow calls with the DID of the
// account that signed in: it asks for the account's repository
// (backfill.Manager.FetchAccount) and returns at once. trigger is one of
// the backfill package's Trigger* names. An instance that runs no
// backfill ignores the calls.
func (s *Service) Trigger(trigger string) func(did string) {
	return func(did string) {
		if s.jobs == nil {
			return
		}
		// A sign-in names a verified DID: FetchAccount cannot refuse it.
		_, _ = s.jobs.FetchAccount(did, trigger, "")
	}
}
