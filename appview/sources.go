package appview

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/ingest"
	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/metrics"
	"github.com/lexview/lexview/internal/textclip"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/lexicon/lexresolve"
	"github.com/lexview/lexview/storage"
)

// Event-log types of the event sources' connection changes. The entry's
// subject is the source's name; its detail holds what the source reported
// (Jetstream: url, collections, cursor, and on disconnection the reason)
// and "source", the name again.
const (
	eventSourceConnected    = "source.connected"
	eventSourceDisconnected = "source.disconnected"
)

// eventSourceSkipped is the event-log type of an event a source went past
// unused (ingest.Sink.Skipped). Its subject is the source's name; its
// detail holds "source", "reason" (too_large, undecodable, invalid),
// "position" (the event's stream position, 0 when unknown), "bytes",
// "error", and what could be read of the event ("kind", "did",
// "collection", "rkey"; strings cut at 256 bytes).
const eventSourceSkipped = "source.event_skipped"

// eventSourceResync is the event-log type of a repository whose history,
// as a verified source (the firehose) followed it, has a gap
// (ingest.CommitSink.Resync). Its subject is the repository's DID; its
// detail holds "source", "reason" (since_mismatch, prev_data_mismatch,
// sync_event, refused_commit, account_reactivated), "position" (the event's sequence number),
// "rev" (the revision the event brought), "have_rev" and "have_data" (the
// state applied before it, empty when none).
const eventSourceResync = "source.resync_needed"

// sourceWorker runs one event source as a component: it follows the
// wanted collections of the lexicon registry and hands what it reads to a
// sink bound to the source's name.
func (a *App) sourceWorker(src ingest.Source) component {
	sink := &sourceSink{app: a, name: src.Name(), cursorKey: ingest.CursorKey(src.Name())}
	return &worker{run: func(ctx context.Context) {
		sink.life = ctx
		changed, unsubscribe := a.lexicons.Subscribe()
		defer unsubscribe()
		wanted := a.wantedCollections
		if err := src.Run(ctx, wanted, changed, sink); err != nil {
			a.log.Error("event source stopped", "source", sink.name, "err", err)
		}
	}}
}

// sourceSink is the ingest.Sink of one event source, bound to its name:
// its records go to the writer labelled with the name, with the position
// stored under the source's own cursor key (ingest.CursorKey), which is
// also the only one Resume reads; its connection changes go to the event
// log and the connection metrics under the name.
type sourceSink struct {
	app         *App
	name        string
	cursorKey   string
	connections atomic.Int64

	mu          sync.Mutex
	lastSkipped int64 // position of the last skipped event reported

	resyncs resyncQueue // repositories being fetched again (resync.go)
	// life is the source worker's context, which outlives connections:
	// resyncs run under it (nil: under the context of the request).
	life context.Context

	accounts accountsPending // account states submitted, not yet committed (accounts.go)
}

func (s *sourceSink) Records(ctx context.Context, changes []storage.Change, cursor int64) error {
	changes = s.app.takeSchemaCommits(changes)
	_, err := s.app.writer.Submit(ctx, s.name, changes, &storage.StreamCursor{Name: s.cursorKey, Value: cursor})
	return err
}

// MarkPosition implements ingest.PositionMarker: the position is stored
// before it returns.
func (s *sourceSink) MarkPosition(ctx context.Context, cursor int64) error {
	return s.app.writer.MarkPosition(ctx, s.name, storage.StreamCursor{Name: s.cursorKey, Value: cursor})
}

// Commit implements ingest.CommitSink: the repositories' states go to the
// writer with the changes and the cursor, in one transaction.
func (s *sourceSink) Commit(ctx context.Context, changes []storage.Change, repos []storage.RepoState, cursor int64) error {
	changes = s.app.takeSchemaCommits(changes)
	_, err := s.app.writer.SubmitCommit(ctx, s.name, changes, repos, &storage.StreamCursor{Name: s.cursorKey, Value: cursor})
	if err == nil && len(repos) > 0 {
		s.app.metrics.Verified(s.name, len(repos))
	}
	return err
}

// RepoState implements ingest.CommitSink.
func (s *sourceSink) RepoState(ctx context.Context, did string) (storage.RepoState, bool, error) {
	st, err := s.app.store.GetRepoState(ctx, did)
	if errors.Is(err, storage.ErrNotFound) {
		return storage.RepoState{}, false, nil
	}
	return st, err == nil, err
}

// Resync implements ingest.CommitSink: the gap is counted and recorded in
// the event log, and the repository is fetched again whole as a verified
// CAR export (backfill.Manager.Resync) in the background, at most
// maxResyncs at a time and once at a time per repository (a request while
// the repository is being fetched fetches it once more after that); the
// outcome is recorded as source.resynced or source.resync_failed. The
// revision rule keeps the live changes newer than the export.
func (s *sourceSink) Resync(ctx context.Context, r ingest.ResyncRequest) {
	s.resync(ctx, r, nil)
}

// resync is Resync whose fetch waits, when after is not nil, until after
// is closed (an account state it must follow is committed).
func (s *sourceSink) resync(ctx context.Context, r ingest.ResyncRequest, after <-chan struct{}) {
	s.app.metrics.Resync(s.name, r.Reason)
	s.app.events.Record(ctx, eventlog.Entry{Type: eventSourceResync, Severity: eventlog.Warn, Subject: clip(r.DID),
		Detail: map[string]any{
			"source": s.name, "reason": r.Reason, "position": r.Seq, "rev": clip(r.Rev),
			"have_rev": clip(r.Have.Rev), "have_data": clip(r.Have.Data),
		}})
	if s.app.backfill == nil {
		return
	}
	if !s.resyncs.request(r.DID, after) {
		return // being fetched: it is fetched once more after that
	}
	if s.life != nil {
		// Not the connection's context: a reconnection must not cut a
		// fetch short.
		ctx = s.life
	}
	go func() {
		for after := range s.resyncs.runs(r.DID, after) {
			if !s.fetchAgain(ctx, r.DID, after) {
				s.resyncs.abandon(r.DID)
				return
			}
		}
	}()
}

// fetchAgain fetches did's repository by CAR once after is closed (nil:
// at once) and records the outcome. It returns false when ctx ended.
func (s *sourceSink) fetchAgain(ctx context.Context, did string, after <-chan struct{}) bool {
	if after != nil {
		select {
		case <-after:
		case <-ctx.Done():
			return false
		}
	}
	select {
	case s.app.resyncSlots <- struct{}{}:
		defer func() { <-s.app.resyncSlots }()
	case <-ctx.Done():
		return false
	}
	res, err := s.app.backfill.Resync(ctx, did)
	if ctx.Err() != nil {
		return false
	}
	if err != nil {
		s.app.events.Record(ctx, eventlog.Entry{Type: eventSourceResyncFailed, Severity: eventlog.Warn, Subject: clip(did),
			Detail: map[string]any{"source": s.name, "error": clip(err.Error())}})
		return true
	}
	s.app.events.Record(ctx, eventlog.Entry{Type: eventSourceResynced, Subject: clip(did),
		Detail: map[string]any{"source": s.name, "rev": res.Rev, "records": res.Records, "deleted": res.Deleted}})
	return true
}

// The event-log types of a repository fetched again after a gap: its
// subject is the DID; source.resynced's detail holds "source", "rev" (the
// export's), "records" and "deleted"; source.resync_failed's "source" and
// "error".
const (
	eventSourceResynced     = "source.resynced"
	eventSourceResyncFailed = "source.resync_failed"
)

// maxResyncs bounds the repositories fetched again at once after gaps.
const maxResyncs = 4

// wantedCollections are the collections the event sources follow: those
// of the record lexicons, and com.atproto.lexicon.schema while network
// lexicons are tracked (their authorities' schema commits).
func (a *App) wantedCollections() []string {
	cols := a.lexicons.Snapshot().RecordCollections()
	if a.svc.NetworkLexicons.Following() {
		if i, found := slices.BinarySearch(cols, lexresolve.SchemaCollection); !found {
			cols = slices.Insert(cols, i, lexresolve.SchemaCollection)
		}
	}
	return cols
}

// takeSchemaCommits hands the com.atproto.lexicon.schema commits among
// changes to the network lexicons service, which refreshes the tracked
// ones, and returns the other changes. Schema records are indexed only
// when an operator gave their collection a record lexicon of its own.
func (a *App) takeSchemaCommits(changes []storage.Change) []storage.Change {
	if l, ok := a.lexicons.Snapshot().Get(lexresolve.SchemaCollection); ok && l.Kind == lexicon.KindRecord {
		for _, c := range changes {
			if c.Collection == lexresolve.SchemaCollection {
				a.svc.NetworkLexicons.Commit(c.DID, c.RKey)
			}
		}
		return changes
	}
	return slices.DeleteFunc(changes, func(c storage.Change) bool {
		if c.Collection != lexresolve.SchemaCollection {
			return false
		}
		a.svc.NetworkLexicons.Commit(c.DID, c.RKey)
		return true
	})
}

func (s *sourceSink) Resume(ctx context.Context) (int64, bool, error) {
	c, err := s.app.store.GetStreamCursor(ctx, s.cursorKey)
	if errors.Is(err, storage.ErrNotFound) {
		return 0, false, nil
	}
	return c, err == nil, err
}

func (s *sourceSink) Identity(ctx context.Context, e ingest.IdentityEvent) {
	if did, err := syntax.ParseDID(e.DID); err == nil {
		_ = s.app.cfg.Network.Directory.Purge(ctx, did.AtIdentifier())
	}
}

func (s *sourceSink) StateChanged(ctx context.Context, connected bool, detail map[string]any) {
	reconnect := false
	if connected {
		reconnect = s.connections.Add(1) > 1
	}
	s.app.metrics.SourceConnected(s.name, connected, reconnect)
	d := maps.Clone(detail)
	if d == nil {
		d = map[string]any{}
	}
	d["source"] = s.name
	entry := eventlog.Entry{Type: eventSourceDisconnected, Severity: eventlog.Warn, Subject: s.name, Detail: d}
	if connected {
		entry.Type, entry.Severity = eventSourceConnected, eventlog.Info
	}
	s.app.events.Record(ctx, entry)
}

// Skipped records an event the source went past, once: in the event log
// and the metrics. Replays of a reported event (a position not above the
// last reported one) are not recorded again.
func (s *sourceSink) Skipped(ctx context.Context, e ingest.SkippedEvent) {
	if e.Position > 0 {
		s.mu.Lock()
		replay := e.Position <= s.lastSkipped
		if !replay {
			s.lastSkipped = e.Position
		}
		s.mu.Unlock()
		if replay {
			return
		}
	}
	reason := e.Reason
	switch reason {
	case ingest.SkipTooLarge, ingest.SkipUndecodable, ingest.SkipInvalid, ingest.SkipInactive,
		ingest.RefuseBadSignature, ingest.RefuseBadCommit, ingest.RefuseUnverifiable, ingest.RefuseNoIdentity:
	default:
		reason = "other" // metrics labels stay few
	}
	s.app.metrics.Skipped(s.name, reason)
	s.app.events.Record(ctx, eventlog.Entry{Type: eventSourceSkipped, Severity: eventlog.Warn, Subject: s.name,
		Detail: map[string]any{
			"source": s.name, "reason": clip(e.Reason), "position": e.Position, "bytes": e.Size, "error": clip(e.Err),
			"kind": clip(e.Kind), "did": clip(e.DID), "collection": clip(e.Collection), "rkey": clip(e.RKey),
		}})
}

// maxClip bounds the untrusted strings of a skipped event's log entry.
const maxClip = 256

// clip makes an untrusted string fit for the event log: valid UTF-8,
// without NUL (which PostgreSQL's jsonb cannot hold), at most maxClip
// bytes.
func clip(s string) string {
	return textclip.Clip(strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD"), maxClip)
}

// sourceStates reports the sources' states for the metrics.
func (a *App) sourceStates() []metrics.SourceState {
	out := make([]metrics.SourceState, 0, len(a.sources))
	for _, src := range a.sources {
		st := src.Status()
		out = append(out, metrics.SourceState{Name: src.Name(), Host: st.Host, State: st.State, Lag: st.Lag, Position: st.Cursor})
	}
	return out
}

// syncStatus reports ingestion, backfill and the writer for GET
// /admin/stats:
//
//   - "writer": the writer's totals (indexer.Stats);
//   - "backfill": the backfill summary;
//   - "refusals": the latest changes validation refused, newest first
//     (indexer.Refusal; this instance's, kept in memory);
//   - "sources": each event source's status (ingest.Status) by name, {}
//     when live ingestion is off;
//   - "ingest": the status of the record stream (the first source, that
//     is Config.Ingest.EventSource or Jetstream), or {"enabled": false} when
//     live ingestion is off. It predates "sources" and is kept as it was;
//   - "app_folder": the app folder applied and watched (AppFolderStatus),
//     only when a program set one (appview dev, appview serve --app).
func (a *App) syncStatus() map[string]any {
	out := map[string]any{"writer": a.writer.Stats(), "refusals": a.writer.Refusals()}
	if st := a.appFolderStatus(); st != nil {
		out["app_folder"] = st
	}
	if a.backfill != nil {
		if sum, err := a.backfill.Summary(context.Background()); err == nil {
			out["backfill"] = sum
		}
	}
	sources := map[string]ingest.Status{}
	for _, src := range a.sources {
		sources[src.Name()] = src.Status()
	}
	out["sources"] = sources
	if len(a.sources) > 0 {
		out["ingest"] = sources[a.sources[0].Name()]
	} else {
		out["ingest"] = map[string]any{"enabled": false}
	}
	return out
}
