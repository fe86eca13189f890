package appview

import (
	"context"
	"errors"
	"maps"
	"sync/atomic"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/ingest"
	"github.com/lexview/lexview/appview/internal/eventlog"
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

// sourceWorker runs one event source as a component: it follows the
// wanted collections of the lexicon registry and hands what it reads to a
// sink bound to the source's name.
func (a *App) sourceWorker(src ingest.Source) component {
	sink := &sourceSink{app: a, name: src.Name(), cursorKey: ingest.CursorKey(src.Name())}
	return &worker{run: func(ctx context.Context) {
		changed, unsubscribe := a.lexicons.Subscribe()
		defer unsubscribe()
		wanted := func() []string { return a.lexicons.Snapshot().RecordCollections() }
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
}

func (s *sourceSink) Records(ctx context.Context, changes []storage.Change, cursor int64) error {
	_, err := s.app.writer.Submit(ctx, s.name, changes, &storage.StreamCursor{Name: s.cursorKey, Value: cursor})
	return err
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
		_ = s.app.cfg.Directory.Purge(ctx, did.AtIdentifier())
	}
}

// Account removes the records of deleted accounts; other statuses
// (deactivated, suspended, taken down) can be reversed, so records stay.
func (s *sourceSink) Account(ctx context.Context, e ingest.AccountEvent) {
	if e.Active || e.Status != "deleted" {
		return
	}
	n, err := s.app.store.DeleteRecordsByDID(ctx, e.DID)
	if err != nil {
		s.app.log.Error("removing a deleted account's records failed", "source", s.name, "did", e.DID, "err", err)
		return
	}
	if n > 0 {
		s.app.events.Record(ctx, eventlog.Entry{Type: "ingest.account_deleted", Subject: e.DID,
			Detail: map[string]any{"records_removed": n, "source": s.name}})
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

// syncStatus reports ingestion, backfill and the writer for GET
// /admin/stats:
//
//   - "writer": the writer's totals (indexer.Stats);
//   - "backfill": the backfill summary;
//   - "sources": each event source's status (ingest.Status) by name, {}
//     when live ingestion is off;
//   - "ingest": the status of the record stream (the first source, that
//     is Config.EventSource or Jetstream), or {"enabled": false} when
//     live ingestion is off. It predates "sources" and is kept as it was.
func (a *App) syncStatus() map[string]any {
	out := map[string]any{"writer": a.writer.Stats()}
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
