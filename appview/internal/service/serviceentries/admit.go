package serviceentries

import (
	"context"
	"strings"
	"time"

	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/storage"
)

// The refusals of a proxied call (403).
const (
	MsgNotServed   = "service entry does not serve this method"
	MsgNotAllowed  = "caller is not on the service entry's allowlist"
	MsgDisabled    = "method is disabled for proxied calls"
	msgNotServedAs = MsgNotServed + ": #"
)

// Admit decides whether a call proxied by a PDS may reach the method nsid:
// the call carries a service-auth JWT issued by caller (its `iss`) for the
// audience aud (this service's DID, bare or with a fragment). A method
// bound to no entry admits every proxied call. Otherwise the entries
// decide: an aud with a fragment names the entry, which must be bound to
// the method and admit the caller; a bare aud is admitted when any bound
// entry admits the caller. An entry in mode all admits everyone, one in
// mode allowlist the DIDs on its list, a disabled one nobody. A refusal is
// a Forbidden error.
func (s *Service) Admit(ctx context.Context, nsid, caller, aud string) error {
	entries, err := s.entriesFor(ctx, nsid)
	if err != nil || len(entries) == 0 {
		return err
	}
	if _, fragment, named := strings.Cut(aud, "#"); named {
		i := 0
		for i < len(entries) && entries[i].Fragment != fragment {
			i++
		}
		if i == len(entries) {
			return fail.New(fail.Forbidden, msgNotServedAs+fragment)
		}
		entries = entries[i : i+1]
	}
	var allowlists []int64
	for _, e := range entries {
		switch e.AccessMode {
		case storage.AccessAll:
			return nil
		case storage.AccessAllowlist:
			allowlists = append(allowlists, e.ID)
		}
	}
	if len(allowlists) == 0 {
		return fail.New(fail.Forbidden, MsgDisabled)
	}
	ok, err := s.opt.Store.ServiceEntryAllows(ctx, allowlists, caller)
	if err != nil {
		return err
	}
	if !ok {
		return fail.New(fail.Forbidden, MsgNotAllowed)
	}
	return nil
}

// RefreshAfter is how long the cached entries and bindings Admit reads are
// trusted: a change made through this process applies at once, one made
// by another process sharing the database within this time.
const RefreshAfter = 5 * time.Second

// accessTable is the entries bound to each method.
type accessTable struct {
	byMethod map[string][]storage.ServiceEntry
	loadedAt time.Time
}

// entriesFor returns the entries bound to nsid, by id, from the cached
// table, (re)loaded when stale.
func (s *Service) entriesFor(ctx context.Context, nsid string) ([]storage.ServiceEntry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.table == nil || s.opt.Now().Sub(s.table.loadedAt) >= RefreshAfter {
		t, err := s.loadTable(ctx)
		if err != nil {
			return nil, err
		}
		s.table = t
	}
	return s.table.byMethod[nsid], nil
}

func (s *Service) loadTable(ctx context.Context) (*accessTable, error) {
	loadedAt := s.opt.Now()
	entries, err := s.opt.Store.ListServiceEntries(ctx)
	if err != nil {
		return nil, err
	}
	bindings, err := s.opt.Store.ListServiceEntryBindings(ctx)
	if err != nil {
		return nil, err
	}
	byID := make(map[int64]storage.ServiceEntry, len(entries))
	for _, e := range entries {
		byID[e.ID] = e
	}
	t := &accessTable{byMethod: map[string][]storage.ServiceEntry{}, loadedAt: loadedAt}
	for _, b := range bindings { // by entry id: each method's entries stay by id
		if e, ok := byID[b.EntryID]; ok {
			t.byMethod[b.NSID] = append(t.byMethod[b.NSID], e)
		}
	}
	return t, nil
}

// invalidate drops the cached table after a change: the next Admit reads
// the store again.
func (s *Service) invalidate() {
	s.mu.Lock()
	s.table = nil
	s.mu.Unlock()
}

// Invalidate drops the cached entries and bindings, for a change made by
// another instance sharing the database.
func (s *Service) Invalidate() { s.invalidate() }
