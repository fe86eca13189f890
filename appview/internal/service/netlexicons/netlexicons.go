// Package netlexicons is the service for network lexicons: lexicons
// fetched from their NSID's authority (lexresolve) instead of uploaded,
// stored as any other lexicon through the lexicons service, with a row
// saying where each came from. It adds them, lists and removes them,
// resolves NSIDs without storing anything, and refreshes tracked ones
// when their authority publishes a new revision (Refresh, from the live
// event source or the periodic re-check).
package netlexicons

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/service/lexicons"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/lexicon/lexresolve"
	"github.com/lexview/lexview/storage"
)

// Event-log types. Their subject is the NSID.
const (
	EventAdded            = "lexicon.network_added"             // detail: authority_did, cid, revision
	EventRemoved          = "lexicon.network_removed"           // detail: authority_did
	EventUpdated          = "lexicon.network_updated"           // detail: authority_did, cid, revision, reason
	EventFetchFailed      = "lexicon.network_fetch_failed"      // warn; detail: step, error, reason
	EventDeletedUpstream  = "lexicon.network_deleted_upstream"  // warn; detail: authority_did; the lexicon stays in use
	EventRestoredUpstream = "lexicon.network_restored_upstream" // detail: authority_did
)

// Reasons for a fetch, in metrics and event details.
const (
	ReasonAdd     = "add"
	ReasonResolve = "resolve"
	ReasonEvent   = "event"
	ReasonRecheck = "recheck"
)

// Metrics counts fetches (nil-safe *metrics.Metrics).
type Metrics interface {
	LexiconFetch(reason, outcome string)
}

// Options are what the service works with; all but Logger and Metrics
// are required.
type Options struct {
	Store    storage.NetworkLexiconStore
	Lexicons *lexicons.Service
	Resolver lexresolve.Resolver
	Events   *eventlog.Log
	Metrics  Metrics
	Now      func() time.Time
	Logger   *slog.Logger
}

// Service manages network lexicons.
type Service struct {
	opt     Options
	mu      sync.Mutex // serialises adds, removals and refreshes
	tracked atomic.Pointer[tracked]
	pending chan string // NSIDs whose schema commits the live source saw

	// adding holds the lexicons an Add is storing (NSID → authority DID):
	// a reload while their rows are not yet written keeps them tracked,
	// so that an event source woken by the lexicon's store still follows
	// the schema collection.
	addingMu sync.Mutex
	adding   map[string]string
}

// New returns the service.
func New(opt Options) *Service {
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	if opt.Metrics == nil {
		opt.Metrics = noMetrics{}
	}
	return &Service{opt: opt, pending: make(chan string, pendingEvents), adding: map[string]string{}}
}

// Resolved is what resolving an NSID found.
type Resolved struct {
	Schema lexresolve.Schema
	Kind   lexicon.Kind
}

// Added is what adding a network lexicon did.
type Added struct {
	Row     storage.NetworkLexicon
	Lexicon *lexicon.Lexicon
	// Created is false when the NSID was tracked already (then it was
	// fetched again and stored as a new revision).
	Created bool
	// Upload is the result of storing the lexicon (backfill job,
	// warnings, script errors), as for an upload.
	Upload lexicons.Result
}

// ResolveError turns a resolution failure into the service error an
// admin sees: 400 for a definitive answer (bad NSID, no TXT record, no
// such record, an invalid lexicon), an upstream failure (500) when an
// upstream failed. The message names the step.
func ResolveError(err error) error {
	e, ok := lexresolve.AsError(err)
	if !ok {
		return err
	}
	kind := fail.Invalid
	if e.Upstream {
		kind = fail.Upstream
	}
	return fail.Wrap(kind, e.Error(), err)
}

// Resolve resolves nsid and fetches its schema without storing anything.
func (s *Service) Resolve(ctx context.Context, nsid string) (Resolved, error) {
	sch, err := s.opt.Resolver.Schema(ctx, nsid)
	if err != nil {
		s.opt.Metrics.LexiconFetch(ReasonResolve, outcome(err))
		return Resolved{}, ResolveError(err)
	}
	doc, err := lexicon.Parse(sch.Document)
	if err != nil { // a Resolver of an embedder's that skipped the check
		s.opt.Metrics.LexiconFetch(ReasonResolve, string(lexresolve.StepLexicon))
		return Resolved{}, fail.Wrap(fail.Invalid, "resolving "+nsid+": lexicon: not a valid lexicon: "+err.Error(), err)
	}
	s.opt.Metrics.LexiconFetch(ReasonResolve, "fetched")
	return Resolved{Schema: sch, Kind: doc.Kind}, nil
}

// Add resolves nsid, stores its lexicon (as an upload would: a new
// revision when it exists; scripts attached to it are kept) and tracks it.
func (s *Service) Add(ctx context.Context, actor, nsid, targetCollection string) (Added, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sch, err := s.opt.Resolver.Schema(ctx, nsid)
	if err != nil {
		s.opt.Metrics.LexiconFetch(ReasonAdd, outcome(err))
		return Added{}, ResolveError(err)
	}
	// Tracked before the lexicon is stored: storing it wakes the event
	// sources, which then read Following.
	s.track(sch.Authority.DID, nsid)
	added := false
	defer func() {
		if !added {
			s.doneAdding(nsid)
		}
	}()
	up := lexicon.Upload{Document: sch.Document, TargetCollection: targetCollection}
	if cur, ok := s.opt.Lexicons.Snapshot().Get(nsid); ok {
		up.Script, up.IndexHook = cur.Script, cur.IndexHook
	}
	res, err := s.opt.Lexicons.Put(ctx, actor, up)
	if err != nil {
		s.opt.Metrics.LexiconFetch(ReasonAdd, string(lexresolve.StepLexicon))
		s.doneAdding(nsid)
		if rerr := s.reload(ctx); rerr != nil { // untrack what was not stored
			s.opt.Logger.WarnContext(ctx, "reading network lexicons failed", "err", rerr)
		}
		return Added{}, err
	}
	_, err = s.opt.Store.GetNetworkLexicon(ctx, nsid)
	created := errors.Is(err, storage.ErrNotFound)
	if err != nil && !created {
		return Added{}, err
	}
	now := s.opt.Now()
	row := storage.NetworkLexicon{NSID: nsid, AuthorityDID: sch.Authority.DID, TargetCollection: targetCollection,
		CID: sch.CID, LastFetchedAt: now, CreatedAt: now}
	if err := s.opt.Store.PutNetworkLexicon(ctx, row); err != nil {
		return Added{}, err
	}
	if row, err = s.opt.Store.GetNetworkLexicon(ctx, nsid); err != nil {
		return Added{}, err
	}
	s.doneAdding(nsid) // its row is stored: a reload finds it
	added = true
	if err := s.reload(ctx); err != nil {
		s.opt.Logger.WarnContext(ctx, "reading network lexicons failed", "err", err)
	}
	s.opt.Metrics.LexiconFetch(ReasonAdd, "updated")
	s.opt.Events.Record(ctx, eventlog.Entry{Type: EventAdded, ActorDID: actor, Subject: nsid, Detail: map[string]any{
		"authority_did": sch.Authority.DID, "pds": sch.Authority.PDS(), "cid": sch.CID, "revision": res.Lexicon.Revision,
	}})
	return Added{Row: row, Lexicon: res.Lexicon, Created: created, Upload: res}, nil
}

// List returns the tracked network lexicons by NSID.
func (s *Service) List(ctx context.Context) ([]storage.NetworkLexicon, error) {
	return s.opt.Store.ListNetworkLexicons(ctx)
}

var errNotTracked = fail.New(fail.NotFound, "network lexicon not found")

// Delete stops tracking nsid and deletes its lexicon (records stay, as
// for any lexicon removal).
func (s *Service) Delete(ctx context.Context, actor, nsid string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	row, err := s.opt.Store.GetNetworkLexicon(ctx, nsid)
	if errors.Is(err, storage.ErrNotFound) {
		return errNotTracked
	}
	if err != nil {
		return err
	}
	// Untracked before the lexicon is deleted: deleting it wakes the event
	// sources, which then read Following.
	if err := s.opt.Store.DeleteNetworkLexicon(ctx, nsid); err != nil && !errors.Is(err, storage.ErrNotFound) {
		return err
	}
	if err := s.reload(ctx); err != nil {
		s.opt.Logger.WarnContext(ctx, "reading network lexicons failed", "err", err)
	}
	if err := s.opt.Lexicons.Delete(ctx, actor, nsid); err != nil && fail.KindOf(err) != fail.NotFound {
		return err
	}
	s.opt.Events.Record(ctx, eventlog.Entry{Type: EventRemoved, ActorDID: actor, Subject: nsid,
		Detail: map[string]any{"authority_did": row.AuthorityDID}})
	return nil
}

// outcome is the metrics label of a failed resolution: its step.
func outcome(err error) string {
	if e, ok := lexresolve.AsError(err); ok {
		return string(e.Step)
	}
	return "error"
}

type noMetrics struct{}

func (noMetrics) LexiconFetch(string, string) {}
