package appview

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/ingest"
	"github.com/lexview/lexview/appview/internal/clientkeys"
	"github.com/lexview/lexview/appview/internal/eventlog"
	"github.com/lexview/lexview/appview/internal/indexer"
	"github.com/lexview/lexview/storage"
)

// jetstreamCursor names the live stream's stored position.
const jetstreamCursor = "jetstream"

// ValidationSettingPrefix, followed by a collection NSID, names the
// instance setting that turns record validation off for that collection
// (value "off"). Changes apply within validationRefresh.
const ValidationSettingPrefix = "validation."

const validationRefresh = 5 * time.Second

// lexiconRefresh is how soon lexicon changes made through another instance
// sharing the database reach this one.
const lexiconRefresh = 5 * time.Second

// scriptRefresh is how soon script changes made through another instance
// take effect here (changes through this instance apply at once).
const scriptRefresh = 5 * time.Second

// tombstoneRetention is how long deletes are remembered against replays.
const tombstoneRetention = 7 * 24 * time.Hour

// validationToggles caches which collections have validation turned off.
type validationToggles struct {
	store storage.SettingsStore
	mu    sync.RWMutex
	off   map[string]bool
}

func (v *validationToggles) isOff(collection string) bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return v.off[collection]
}

func (v *validationToggles) refresh(ctx context.Context) error {
	all, err := v.store.ListSettings(ctx)
	if err != nil {
		return err
	}
	off := map[string]bool{}
	for k, val := range all {
		if c, ok := strings.CutPrefix(k, ValidationSettingPrefix); ok && strings.EqualFold(val, "off") {
			off[c] = true
		}
	}
	v.mu.Lock()
	v.off = off
	v.mu.Unlock()
	return nil
}

// newWriter builds the one batch writer.
func (a *App) newWriter() *indexer.Writer {
	a.validation = &validationToggles{store: a.store, off: map[string]bool{}}
	return indexer.New(a.store, a.lexicons, indexer.Options{
		ValidationOff: a.validation.isOff, Hook: withGoHooks(a.scripts, a.cfg.RecordHooks), Metrics: a.metrics, Logger: a.log, Now: a.cfg.Now,
	})
}

// startSync launches the writer, live ingestion, the metrics listener and
// the sync sweeps; the caller holds mu.
func (a *App) startSync() {
	_ = a.validation.refresh(a.bg)
	a.goWorker(a.writer.Run)
	a.goWorker(func(ctx context.Context) {
		every(ctx, validationRefresh, func() {
			if err := a.validation.refresh(ctx); err != nil && ctx.Err() == nil {
				a.log.Warn("reading validation settings failed", "err", err)
			}
		})
	})
	a.goWorker(func(ctx context.Context) {
		every(ctx, time.Hour, func() {
			if _, err := a.store.PurgeTombstones(ctx, a.cfg.Now().Add(-tombstoneRetention)); err != nil && ctx.Err() == nil {
				a.log.Warn("purging tombstones failed", "err", err)
			}
			a.reportRejections(ctx)
			if _, err := clientkeys.Sweep(ctx, a.store, a.events, a.cfg.Now()); err != nil && ctx.Err() == nil {
				a.log.Warn("sweeping retiring client authentication keys failed", "err", err)
			}
		})
	})
	if a.source != nil {
		a.goWorker(func(ctx context.Context) {
			changed, unsubscribe := a.lexicons.Subscribe()
			defer unsubscribe()
			wanted := func() []string { return a.lexicons.Snapshot().RecordCollections() }
			if err := a.source.Run(ctx, wanted, changed, &syncSink{app: a}); err != nil {
				a.log.Error("live ingestion stopped", "err", err)
			}
		})
	}
	if a.cfg.MetricsAddr != "" && a.metrics != nil {
		a.goWorker(a.serveMetrics)
	}
}

// syncStatus reports live ingestion and the writer for GET /admin/stats.
func (a *App) syncStatus() map[string]any {
	out := map[string]any{"writer": a.writer.Stats()}
	if a.backfill != nil {
		if sum, err := a.backfill.Summary(context.Background()); err == nil {
			out["backfill"] = sum
		}
	}
	if a.source != nil {
		out["ingest"] = a.source.Status()
	} else {
		out["ingest"] = map[string]any{"enabled": false}
	}
	return out
}

// every runs fn now and then every interval until ctx ends.
func every(ctx context.Context, interval time.Duration, fn func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		fn()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// reportRejections summarises validation rejections in the event log.
func (a *App) reportRejections(ctx context.Context) {
	for collection, n := range a.writer.TakeRejections() {
		a.events.Record(ctx, eventlog.Entry{Type: "ingest.rejected", Severity: eventlog.Warn, Subject: collection,
			Detail: map[string]any{"count": n, "reason": "lexicon validation"}})
	}
}

// serveMetrics serves Prometheus metrics on METRICS_ADDR until ctx ends.
func (a *App) serveMetrics(ctx context.Context) {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", a.metrics.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	ln, err := net.Listen("tcp", a.cfg.MetricsAddr)
	if err != nil {
		a.log.Error("metrics listener failed", "addr", a.cfg.MetricsAddr, "err", err)
		return
	}
	a.log.Info("metrics listening", "addr", "http://"+ln.Addr().String()+"/metrics")
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		a.log.Error("metrics server failed", "err", err)
	}
}

// syncSink connects the live stream to the writer, the identity cache and
// the event log.
type syncSink struct{ app *App }

func (s *syncSink) Records(ctx context.Context, changes []storage.Change, cursor int64) error {
	_, err := s.app.writer.Submit(ctx, "jetstream", changes, &storage.StreamCursor{Name: jetstreamCursor, Value: cursor})
	return err
}

func (s *syncSink) Identity(ctx context.Context, e ingest.IdentityEvent) {
	if did, err := syntax.ParseDID(e.DID); err == nil {
		_ = s.app.cfg.Directory.Purge(ctx, did.AtIdentifier())
	}
}

// Account removes the records of deleted accounts; other statuses
// (deactivated, suspended, taken down) can be reversed, so records stay.
func (s *syncSink) Account(ctx context.Context, e ingest.AccountEvent) {
	if e.Active || e.Status != "deleted" {
		return
	}
	n, err := s.app.store.DeleteRecordsByDID(ctx, e.DID)
	if err != nil {
		s.app.log.Error("removing a deleted account's records failed", "did", e.DID, "err", err)
		return
	}
	if n > 0 {
		s.app.events.Record(ctx, eventlog.Entry{Type: "ingest.account_deleted", Subject: e.DID, Detail: map[string]any{"records_removed": n}})
	}
}

func (s *syncSink) Resume(ctx context.Context) (int64, bool, error) {
	c, err := s.app.store.GetStreamCursor(ctx, jetstreamCursor)
	if errors.Is(err, storage.ErrNotFound) {
		return 0, false, nil
	}
	return c, err == nil, err
}

func (s *syncSink) StateChanged(ctx context.Context, connected bool, detail map[string]any) {
	entry := eventlog.Entry{Type: "jetstream.disconnected", Severity: eventlog.Warn, Subject: s.app.cfg.JetstreamURL, Detail: detail}
	if connected {
		entry.Type, entry.Severity = "jetstream.connected", eventlog.Info
	}
	s.app.events.Record(ctx, entry)
}
