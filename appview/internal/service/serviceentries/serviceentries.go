// Package serviceentries manages the instance's service entries: the
// services its DID document lists (a fragment and an atproto service type),
// the XRPC methods each is bound to, its access mode and the caller DIDs an
// allowlist entry admits. It also decides whether a call proxied by a PDS
// (a service-auth JWT) may reach a bound method.
package serviceentries

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/service/serviceid"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
)

// Store is the persistence the service needs: the entries, and the
// verification methods whose fragments entries may not reuse.
type Store interface {
	storage.ServiceEntryStore
	ListVerificationMethods(ctx context.Context) ([]storage.VerificationMethod, error)
}

// Snapshotter hands out the current lexicon snapshot.
type Snapshotter interface {
	Snapshot() *lexicon.Snapshot
}

// Options configure a Service.
type Options struct {
	Store    Store
	Lexicons Snapshotter
	Events   *eventlog.Log
	// Now is the clock: timestamps, and the age of the table Admit reads.
	Now func() time.Time
}

// Service manages service entries.
type Service struct {
	opt Options

	mu    sync.Mutex
	table *accessTable // what Admit reads; nil when it must be loaded
}

// New returns a Service. Now defaults to time.Now.
func New(opt Options) *Service {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	return &Service{opt: opt}
}

// MaxListLength bounds the NSIDs or DIDs one request binds or allows.
const MaxListLength = 1000

// serviceTypeSyntax is an atproto service type (AtprotoLabeler,
// BskyFeedGenerator, BskyAppView): a letter, then up to 63 letters and
// digits.
var serviceTypeSyntax = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]{0,63}$`)

var (
	errNotFound        = fail.New(fail.NotFound, "service entry not found")
	errDuplicate       = fail.New(fail.Invalid, "invalid fragment_id: another service entry has it")
	errMethodFragment  = fail.New(fail.Invalid, "invalid fragment_id: a verification method has it (DID document ids must be unique)")
	errServiceType     = fail.New(fail.Invalid, "invalid service_type: use a letter and up to 63 letters and digits, e.g. AtprotoLabeler or BskyFeedGenerator")
	errServiceTypeNone = fail.New(fail.Invalid, "service_type is required")
	errAccessMode      = fail.New(fail.Invalid, "invalid access_mode: use all, allowlist or disabled")
)

// ParseID reads a service entry id from a path.
func ParseID(raw string) (int64, error) {
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id <= 0 {
		return 0, fail.New(fail.Invalid, "invalid service entry id: a positive integer is expected")
	}
	return id, nil
}

func parseServiceType(raw string) (string, error) {
	switch {
	case raw == "":
		return "", errServiceTypeNone
	case !serviceTypeSyntax.MatchString(raw):
		return "", errServiceType
	}
	return raw, nil
}

func parseAccessMode(raw string) (string, error) {
	switch raw {
	case storage.AccessAll, storage.AccessAllowlist, storage.AccessDisabled:
		return raw, nil
	}
	return "", errAccessMode
}

// checkFragment refuses a fragment a verification method has.
func (s *Service) checkFragment(ctx context.Context, fragment string) error {
	methods, err := s.opt.Store.ListVerificationMethods(ctx)
	if err != nil {
		return err
	}
	for _, m := range methods {
		if m.Fragment == fragment {
			return errMethodFragment
		}
	}
	return nil
}

// List returns every entry by id.
func (s *Service) List(ctx context.Context) ([]storage.ServiceEntry, error) {
	return s.opt.Store.ListServiceEntries(ctx)
}

// Create adds an entry (access mode all) on behalf of actor.
func (s *Service) Create(ctx context.Context, actor, fragmentID, serviceType string) (storage.ServiceEntry, error) {
	fragment, err := serviceid.ParseFragment(fragmentID)
	if err != nil {
		return storage.ServiceEntry{}, err
	}
	typ, err := parseServiceType(serviceType)
	if err != nil {
		return storage.ServiceEntry{}, err
	}
	if err := s.checkFragment(ctx, fragment); err != nil {
		return storage.ServiceEntry{}, err
	}
	now := s.opt.Now()
	e, err := s.opt.Store.CreateServiceEntry(ctx, storage.ServiceEntry{
		Fragment: fragment, ServiceType: typ, AccessMode: storage.AccessAll, CreatedAt: now, UpdatedAt: now,
	})
	if errors.Is(err, storage.ErrConflict) {
		return e, errDuplicate
	} else if err != nil {
		return e, err
	}
	s.opt.Events.Record(ctx, eventlog.Entry{Type: "identity.service_entry_created", ActorDID: actor, Subject: subject(e),
		Detail: map[string]any{"id": e.ID, "service_type": e.ServiceType}})
	return e, nil
}

// Patch is a change to an entry: nil fields stay as they are.
type Patch struct {
	FragmentID  *string
	ServiceType *string
	AccessMode  *string
}

// Update changes the given fields of entry id on behalf of actor.
func (s *Service) Update(ctx context.Context, actor string, id int64, p Patch) error {
	e, err := s.get(ctx, id)
	if err != nil {
		return err
	}
	if p.FragmentID != nil {
		if e.Fragment, err = serviceid.ParseFragment(*p.FragmentID); err != nil {
			return err
		}
		if err := s.checkFragment(ctx, e.Fragment); err != nil {
			return err
		}
	}
	if p.ServiceType != nil {
		if e.ServiceType, err = parseServiceType(*p.ServiceType); err != nil {
			return err
		}
	}
	if p.AccessMode != nil {
		if e.AccessMode, err = parseAccessMode(*p.AccessMode); err != nil {
			return err
		}
	}
	if p == (Patch{}) {
		return nil // nothing given, nothing changes
	}
	e.UpdatedAt = s.opt.Now()
	switch err := s.opt.Store.UpdateServiceEntry(ctx, e); {
	case errors.Is(err, storage.ErrConflict):
		return errDuplicate
	case errors.Is(err, storage.ErrNotFound):
		return errNotFound
	case err != nil:
		return err
	}
	s.invalidate()
	s.opt.Events.Record(ctx, eventlog.Entry{Type: "identity.service_entry_updated", ActorDID: actor, Subject: subject(e),
		Detail: map[string]any{"id": e.ID, "service_type": e.ServiceType, "access_mode": e.AccessMode}})
	return nil
}

// Delete removes entry id, its bindings and its allowlist, on behalf of
// actor.
func (s *Service) Delete(ctx context.Context, actor string, id int64) error {
	e, err := s.get(ctx, id)
	if err != nil {
		return err
	}
	if err := s.opt.Store.DeleteServiceEntry(ctx, id); errors.Is(err, storage.ErrNotFound) {
		return errNotFound
	} else if err != nil {
		return err
	}
	s.invalidate()
	s.opt.Events.Record(ctx, eventlog.Entry{Type: "identity.service_entry_deleted", ActorDID: actor, Subject: subject(e),
		Detail: map[string]any{"id": e.ID}})
	return nil
}

func (s *Service) get(ctx context.Context, id int64) (storage.ServiceEntry, error) {
	e, err := s.opt.Store.GetServiceEntry(ctx, id)
	if errors.Is(err, storage.ErrNotFound) {
		return e, errNotFound
	}
	return e, err
}

// subject names an entry in the event log: its fragment.
func subject(e storage.ServiceEntry) string { return "#" + e.Fragment }

// notFound maps the store's ErrNotFound to the entry's 404.
func notFound(err error) error {
	if errors.Is(err, storage.ErrNotFound) {
		return errNotFound
	}
	return err
}

// uniqueList checks a list of names given in field: not empty, not too
// long, each valid by parse; duplicates are dropped.
func uniqueList(field string, raw []string, parse func(string) error) ([]string, error) {
	if len(raw) == 0 {
		return nil, fail.Invalidf("%s is required: a non-empty array", field)
	}
	if len(raw) > MaxListLength {
		return nil, fail.Invalidf("%s: at most %d at a time", field, MaxListLength)
	}
	out := make([]string, 0, len(raw))
	for _, v := range raw {
		if err := parse(v); err != nil {
			return nil, err
		}
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out, nil
}

func parseNSID(v string) error {
	if _, err := syntax.ParseNSID(v); err != nil {
		return fail.Invalidf("lexicon_ids: %q is not a valid NSID", v)
	}
	return nil
}

func parseDID(v string) error {
	if _, err := syntax.ParseDID(v); err != nil {
		return fail.Invalidf("dids: %q is not a valid DID", v)
	}
	return nil
}
