package appview

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/service/clientkeys"
)

// tombstoneRetention is how long deletes are remembered against replays.
const tombstoneRetention = 7 * 24 * time.Hour

// writerPart names the writer in the component list; StartWriting starts
// the list up to it.
const writerPart = "writer"

// components lists the App's background work in start order; Shutdown
// stops it in reverse. The order is the dependency order: the writer runs
// before anything that writes, and the leadership, which runs the event
// sources, starts last and stops first, so that at shutdown nothing new
// arrives while the writer drains. Every instance runs these:
//
//  1. settings: the ones read at use time (validation switches, the
//     live overrides of environment variables) read again before the
//     writer starts
//  2. writer: the one batch writer (StartWriting stops here)
//  3. script runtime: trigger reloads and automatic dead-letter retries
//  4. change feed: configuration changes made through other instances
//     (lexicons, scripts, settings, API clients, domains, service
//     entries), at once on PostgreSQL (LISTEN/NOTIFY) and by a periodic
//     reconciliation on both databases (changes.go)
//  5. backfill worker: one job at a time (across instances: job leases)
//  6. plugins: file-based and installed plugins loaded at start, the
//     registry index refreshed every Plugins.RegistryRefresh
//  7. history: the figures behind the dashboard's charts and status
//     indicator, sampled every Metrics.HistoryInterval (history.go)
//  8. metrics listener, when Metrics.Addr is set (a listen error fails Start)
//  9. leadership: the election among instances sharing a PostgreSQL
//     database (always won with SQLite), whose winner runs the singleton
//     work of leaderComponents (cluster.go)
func (a *App) components() []*part {
	parts := []*part{
		{name: "settings", component: &worker{
			init: func(ctx context.Context) error {
				if err := a.applySettings(ctx); err != nil {
					a.log.Warn("reading the settings failed; the last ones read apply until the next refresh", "err", err)
				}
				return nil
			},
			run: func(context.Context) {},
		}},
		{name: writerPart, component: a.writer},
		{name: "script runtime", component: &worker{run: func(ctx context.Context) { a.scripts.Run(ctx, time.Hour) }}},
		{name: "change feed", component: a.changeFeed()},
		{name: "backfill worker", component: &worker{run: a.backfill.Run}},
		{name: "plugins", component: &worker{
			init: a.plugins.Start,
			run:  func(ctx context.Context) { a.plugins.RunRegistry(ctx, a.cfg.Plugins.RegistryRefresh) },
		}},
		{name: "history", component: &worker{run: a.runHistory}},
	}
	if a.cfg.Metrics.Addr != "" {
		parts = append(parts, &part{name: "metrics listener", component: &metricsListener{app: a}})
	}
	return append(parts, &part{name: "leadership", component: a.leadership})
}

// leaderComponents lists the singleton work, which only the leader runs:
// started in this order when it is elected, stopped in reverse when it
// steps down or shuts down.
//
//  1. network lexicons: refreshes those whose schema commits the event
//     sources saw, and all every Network.LexiconRecheck (commits they missed)
//  2. sweeps: tombstones, rejection reports, retiring client keys, expired
//     OAuth requests and DPoP proofs (hourly)
//  3. link index pass: indexes the links of the records stored before
//     the link index existed, once, resuming where it stopped (indexbuild.go)
//  4. field index build: builds declared field indexes and removes the
//     entries of dropped ones, in short paced steps, resuming where it
//     stopped; woken by a declaration or a drop through this instance,
//     the change feed, and every 30 s (fieldindexes.Service.Run)
//  5. re-validation: validates the stored records of a collection again
//     after a revision of its lexicon, in short paced steps, resuming
//     where it stopped (revalidate.go)
//  6. linked repo refresh, when token encryption is on (LinkedRepoRefresh)
//  7. event-log purge: hourly, and at once when the retention changes
//     (EventLogRetentionDays or the setting event_log_retention_days;
//     none while it keeps everything)
//  8. labeler subscriptions: one per active labeler, in line with the
//     store at start, on every change through the labelers service, and
//     every 30 s (labelsub.DefaultReconcile)
//  9. event sources, one per source ("source NAME"), whose writes are
//     fenced by the leader's lease
func (a *App) leaderComponents() []*part {
	parts := []*part{
		{name: "network lexicons", component: &worker{run: func(ctx context.Context) {
			a.svc.NetworkLexicons.Run(ctx, a.cfg.Network.LexiconRecheck)
		}}},
		{name: "sweeps", component: &worker{run: func(ctx context.Context) { every(ctx, 0, time.Hour, func() { a.sweep(ctx) }) }}},
		{name: "link index pass", component: &worker{run: a.runLinkPass}},
		{name: "field index build", component: &worker{run: a.fieldIndexes.Run}},
		{name: "re-validation", component: &worker{run: a.runRevalidation}},
	}
	if a.sealer != nil {
		parts = append(parts, &part{name: "linked repo refresh", component: &worker{run: func(ctx context.Context) {
			every(ctx, a.cfg.LinkedRepoRefresh, a.cfg.LinkedRepoRefresh, func() { a.svc.LinkedRepos.RefreshAll(ctx, a.oauthClient, a.log) })
		}}})
	}
	parts = append(parts, &part{name: "event-log purge", component: &worker{run: func(ctx context.Context) {
		a.events.RunPurge(ctx, a.eventLogRetention, time.Hour, a.live.purge)
	}}})
	parts = append(parts, &part{name: "labeler subscriptions", component: &worker{run: a.labelSubs.Run}})
	for _, src := range a.sources {
		parts = append(parts, &part{name: "source " + src.Name(), component: a.sourceWorker(src)})
	}
	return parts
}

// every runs fn after first and then every interval until ctx ends.
func every(ctx context.Context, first, interval time.Duration, fn func()) {
	wait := time.NewTimer(first)
	defer wait.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-wait.C:
		}
		fn()
		wait.Reset(interval)
	}
}

// sweep does the hourly housekeeping: it forgets old tombstones, reports
// validation rejections, retires client authentication keys, forgets
// expired OAuth authorization requests and expired DPoP proofs.
func (a *App) sweep(ctx context.Context) {
	if _, err := a.store.PurgeTombstones(ctx, a.cfg.Now().Add(-tombstoneRetention)); err != nil && ctx.Err() == nil {
		a.log.Warn("purging tombstones failed", "err", err)
	}
	a.reportRejections(ctx)
	if _, err := clientkeys.Sweep(ctx, a.store, a.events, a.cfg.Now()); err != nil && ctx.Err() == nil {
		a.log.Warn("sweeping retiring client authentication keys failed", "err", err)
	}
	if _, err := a.oauthClient.SweepRequests(ctx); err != nil && ctx.Err() == nil {
		a.log.Warn("sweeping expired OAuth authorization requests failed", "err", err)
	}
	if _, err := a.sweepDPoPProofs(ctx); err != nil && ctx.Err() == nil {
		a.log.Warn("sweeping expired DPoP proofs failed", "err", err)
	}
}

// dpopSweepSlack is how long past its expiry a remembered DPoP proof is
// kept: the sweeping instance's clock may run this much ahead of the
// others' without one of them accepting a proof again that it still
// considers within its window.
const dpopSweepSlack = 5 * time.Minute

// sweepDPoPProofs forgets the DPoP proofs remembered for replay checks
// across instances (dpop_replays) that expired more than dpopSweepSlack
// ago, and returns how many. One instance running it is enough.
func (a *App) sweepDPoPProofs(ctx context.Context) (int64, error) {
	n, err := a.store.PurgeDPoPProofs(ctx, a.cfg.Now().Add(-dpopSweepSlack))
	if err != nil {
		return 0, fmt.Errorf("sweep DPoP proofs: %w", err)
	}
	return n, nil
}

// reportRejections summarises validation rejections in the event log.
func (a *App) reportRejections(ctx context.Context) {
	for collection, n := range a.writer.TakeRejections() {
		a.events.Record(ctx, eventlog.Entry{Type: "ingest.rejected", Severity: eventlog.Warn, Subject: collection,
			Detail: map[string]any{"count": n, "reason": "lexicon validation"}})
	}
}

// metricsListener serves Prometheus metrics at /metrics on Metrics.Addr.
type metricsListener struct {
	app  *App
	srv  *http.Server
	done chan struct{}
}

func (m *metricsListener) Start(context.Context) error {
	ln, err := net.Listen("tcp", m.app.cfg.Metrics.Addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.app.metrics.Gatherer(), promhttp.HandlerOpts{}))
	m.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	m.done = make(chan struct{})
	m.app.log.Info("metrics listening", "addr", "http://"+ln.Addr().String()+"/metrics")
	go func() {
		defer close(m.done)
		if err := m.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.app.log.Error("metrics server failed", "err", err)
		}
	}()
	return nil
}

func (m *metricsListener) Stop(ctx context.Context) error {
	if err := m.srv.Shutdown(ctx); err != nil {
		return err
	}
	return waitDone(ctx, m.done)
}
