package appview

import (
	"context"
	"errors"
	"sync"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/ingest"
	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/storage"
)

// eventAccountInactive is the event-log type of an account an event source
// reported inactive (deactivated, takendown, suspended, deleted, ...): its
// records are removed and no longer indexed until it is active again. Its
// subject is the DID; its detail holds "source" and "status".
const eventAccountInactive = "ingest.account_inactive"

// Account implements ingest.Sink. An inactive account (any status but
// active) is stored as such through the writer, behind the changes handed
// over before it: the store removes the account's records in the batch
// that stores the status, after that batch's changes, and skips the
// account's records from then on (storage.AccountState). An account
// active again after being inactive is stored active, and its repository
// is fetched again (a resync, reason account_reactivated) once that is
// committed. An active event for an account not known inactive changes
// nothing. An event whose DID does not parse is reported as skipped.
func (s *sourceSink) Account(ctx context.Context, e ingest.AccountEvent) {
	if _, err := syntax.ParseDID(e.DID); err != nil {
		s.Skipped(ctx, ingest.SkippedEvent{Reason: ingest.SkipInvalid, Kind: "account", DID: e.DID, Err: "invalid DID: " + err.Error()})
		return
	}
	state := storage.AccountState{DID: e.DID, Active: e.Active, Status: e.Status}
	if e.Active {
		state.Status = ""
		inactive, err := s.wasInactive(ctx, e.DID)
		if err != nil {
			s.app.log.Error("reading an account's status failed", "source", s.name, "did", e.DID, "err", err)
			return
		}
		if !inactive {
			return
		}
	} else if state.Status == "" {
		state.Status = "inactive"
	}
	done, err := s.submitAccount(ctx, state)
	if err != nil {
		s.app.log.Error("storing an account's status failed", "source", s.name, "did", e.DID, "status", state.Status, "err", err)
		return
	}
	if !e.Active {
		s.app.events.Record(ctx, eventlog.Entry{Type: eventAccountInactive, Subject: e.DID,
			Detail: map[string]any{"source": s.name, "status": clip(state.Status)}})
		return
	}
	s.resync(ctx, ingest.ResyncRequest{DID: e.DID, Reason: ingest.GapReactivated}, done)
}

// AccountState implements ingest.CommitSink.
func (s *sourceSink) AccountState(ctx context.Context, did string) (storage.AccountState, bool, error) {
	if st, ok := s.accounts.get(did); ok {
		return st, true, nil
	}
	st, err := s.app.store.GetAccountState(ctx, did)
	if errors.Is(err, storage.ErrNotFound) {
		return storage.AccountState{}, false, nil
	}
	return st, err == nil, err
}

// wasInactive reports whether the last status submitted or stored for did
// is inactive.
func (s *sourceSink) wasInactive(ctx context.Context, did string) (bool, error) {
	st, ok, err := s.AccountState(ctx, did)
	return ok && !st.Active, err
}

// submitAccount hands an account state to the writer, and remembers it
// until it is committed (a status read meanwhile is the submitted one).
func (s *sourceSink) submitAccount(ctx context.Context, st storage.AccountState) (<-chan struct{}, error) {
	gen := s.accounts.put(st)
	done, err := s.app.writer.SubmitAccounts(ctx, s.name, []storage.AccountState{st})
	if err != nil {
		s.accounts.forget(st.DID, gen)
		return nil, err
	}
	go func() {
		<-done
		s.accounts.forget(st.DID, gen)
	}()
	return done, nil
}

// accountsPending are the account states a sink submitted and the writer
// has not committed yet, the last one per DID: the store does not hold
// them yet, and the events after them must see them.
type accountsPending struct {
	mu    sync.Mutex
	gen   uint64
	byDID map[string]pendingAccount
}

type pendingAccount struct {
	st  storage.AccountState
	gen uint64
}

func (p *accountsPending) get(did string) (storage.AccountState, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	a, ok := p.byDID[did]
	return a.st, ok
}

// put remembers st and returns its generation, for forget.
func (p *accountsPending) put(st storage.AccountState) uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.byDID == nil {
		p.byDID = map[string]pendingAccount{}
	}
	p.gen++
	p.byDID[st.DID] = pendingAccount{st: st, gen: p.gen}
	return p.gen
}

// forget drops did's pending state if it is still the one of generation
// gen (a later one stays until it is committed itself).
func (p *accountsPending) forget(did string, gen uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if a, ok := p.byDID[did]; ok && a.gen == gen {
		delete(p.byDID, did)
	}
}
