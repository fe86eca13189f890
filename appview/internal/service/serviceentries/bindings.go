package serviceentries

import (
	"context"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
)

// Methods returns the NSIDs entry id is bound to.
func (s *Service) Methods(ctx context.Context, id int64) ([]string, error) {
	list, err := s.opt.Store.ServiceEntryMethods(ctx, id)
	return list, notFound(err)
}

// isMethod reports whether nsid is a registered query or procedure
// lexicon: only methods can be bound.
func (s *Service) isMethod(nsid string) bool {
	l, ok := s.opt.Lexicons.Snapshot().Get(nsid)
	return ok && (l.Kind == lexicon.KindQuery || l.Kind == lexicon.KindProcedure)
}

// Bind binds entry id to the methods nsids on behalf of actor. Each must
// be a registered query or procedure lexicon.
func (s *Service) Bind(ctx context.Context, actor string, id int64, nsids []string) error {
	list, err := uniqueList("lexicon_ids", nsids, func(v string) error {
		if err := parseNSID(v); err != nil {
			return err
		}
		if !s.isMethod(v) {
			return fail.Invalidf("lexicon_ids: %s is not a registered query or procedure lexicon", v)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := s.opt.Store.BindServiceEntryMethods(ctx, id, list, s.opt.Now()); err != nil {
		return notFound(err)
	}
	s.invalidate()
	s.record(ctx, "identity.service_entry_bound", actor, id, map[string]any{"id": id, "lexicon_ids": list})
	return nil
}

// Unbind removes the bindings of entry id to nsids on behalf of actor.
// The NSIDs need not be registered lexicons any more (a deleted lexicon's
// binding can be removed).
func (s *Service) Unbind(ctx context.Context, actor string, id int64, nsids []string) error {
	list, err := uniqueList("lexicon_ids", nsids, parseNSID)
	if err != nil {
		return err
	}
	if err := s.opt.Store.UnbindServiceEntryMethods(ctx, id, list); err != nil {
		return notFound(err)
	}
	s.invalidate()
	s.record(ctx, "identity.service_entry_unbound", actor, id, map[string]any{"id": id, "lexicon_ids": list})
	return nil
}

// ForLexicon returns the entries bound to the lexicon nsid, whatever their
// access mode; 404 when no such lexicon is registered.
func (s *Service) ForLexicon(ctx context.Context, nsid string) ([]storage.ServiceEntry, error) {
	if _, ok := s.opt.Lexicons.Snapshot().Get(nsid); !ok {
		return nil, fail.New(fail.NotFound, "lexicon not found")
	}
	return s.opt.Store.ServiceEntriesForMethod(ctx, nsid)
}

// Allowlist returns the caller DIDs entry id admits in allowlist mode.
func (s *Service) Allowlist(ctx context.Context, id int64) ([]string, error) {
	list, err := s.opt.Store.ServiceEntryAllowlist(ctx, id)
	return list, notFound(err)
}

// Allow adds dids to entry id's allowlist on behalf of actor.
func (s *Service) Allow(ctx context.Context, actor string, id int64, dids []string) error {
	list, err := uniqueList("dids", dids, parseDID)
	if err != nil {
		return err
	}
	if err := s.opt.Store.AllowServiceEntryCallers(ctx, id, list, s.opt.Now()); err != nil {
		return notFound(err)
	}
	s.record(ctx, "identity.service_entry_allowed", actor, id, map[string]any{"id": id, "dids": list})
	return nil
}

// Disallow removes dids from entry id's allowlist on behalf of actor.
func (s *Service) Disallow(ctx context.Context, actor string, id int64, dids []string) error {
	list, err := uniqueList("dids", dids, parseDID)
	if err != nil {
		return err
	}
	if err := s.opt.Store.DisallowServiceEntryCallers(ctx, id, list); err != nil {
		return notFound(err)
	}
	s.record(ctx, "identity.service_entry_disallowed", actor, id, map[string]any{"id": id, "dids": list})
	return nil
}

// record logs a change to entry id, named by its fragment when it can
// still be read.
func (s *Service) record(ctx context.Context, typ, actor string, id int64, detail map[string]any) {
	sub := ""
	if e, err := s.opt.Store.GetServiceEntry(ctx, id); err == nil {
		sub = subject(e)
	}
	s.opt.Events.Record(ctx, eventlog.Entry{Type: typ, ActorDID: actor, Subject: sub, Detail: detail})
}
