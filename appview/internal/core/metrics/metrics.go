// Package metrics defines Lexview's Prometheus metrics. They are served on
// their own listener (METRICS_ADDR), never on the public one, and/or
// registered with an embedder's registerer (Register).
package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Metrics holds every collector. Its recording methods do nothing on a nil
// *Metrics, so components work without metrics.
type Metrics struct {
	registry *prometheus.Registry

	EventsReceived    *prometheus.CounterVec // source, collection
	RecordsIndexed    *prometheus.CounterVec // source, collection
	RecordsRejected   *prometheus.CounterVec // source, collection
	RecordsFlagged    *prometheus.CounterVec // source, collection
	EventsSkipped     *prometheus.CounterVec // source, reason
	CommitsVerified   *prometheus.CounterVec // source
	Resyncs           *prometheus.CounterVec // source, reason
	BatchSize         prometheus.Histogram
	CommitLag         *prometheus.HistogramVec // source
	CommitDuration    prometheus.Histogram
	QueueDepth        prometheus.Gauge
	Reconnects        *prometheus.CounterVec // source
	Connected         *prometheus.GaugeVec   // source
	BackfillRepos     *prometheus.CounterVec // outcome
	BackfillFailures  *prometheus.CounterVec // reason
	BackfillRecords   prometheus.Counter
	BackfillOnDemands *prometheus.CounterVec // trigger, outcome

	LabelsReceived     *prometheus.CounterVec // labeler
	LabelsStored       *prometheus.CounterVec // labeler
	LabelsRefused      *prometheus.CounterVec // labeler, reason
	LabelerConnections *prometheus.GaugeVec   // state
	LabelLag           *prometheus.GaugeVec   // labeler
	LexiconFetches     *prometheus.CounterVec // reason, outcome
	ProxiedCalls       *prometheus.CounterVec // outcome
	Leader             *prometheus.GaugeVec   // instance
	IndexableScans     *prometheus.CounterVec // collection

	sources      *sourceCollector
	links        *linkCollector
	fieldIndexes *fieldIndexCollector
	validation   *validationCollector
	plugins      *pluginCollector
}

// New creates the collectors, and a registry of its own holding them with
// Go runtime and process metrics (Gatherer).
func New() *Metrics {
	m := &Metrics{
		registry:     prometheus.NewRegistry(),
		sources:      newSourceCollector(),
		links:        newLinkCollector(),
		fieldIndexes: newFieldIndexCollector(),
		validation:   newValidationCollector(),
		plugins:      newPluginCollector(),
		EventsReceived: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lexview_events_received_total", Help: "Record events received, by source and collection.",
		}, []string{"source", "collection"}),
		RecordsIndexed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lexview_records_indexed_total", Help: "Record changes committed to the index, by source and collection.",
		}, []string{"source", "collection"}),
		RecordsRejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lexview_records_rejected_total", Help: "Record changes refused by lexicon validation, by source and collection.",
		}, []string{"source", "collection"}),
		RecordsFlagged: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lexview_records_flagged_total", Help: "Records their lexicon refuses that were stored with their validation error (validation modes flag and hide), by source and collection.",
		}, []string{"source", "collection"}),
		EventsSkipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lexview_events_skipped_total", Help: "Stream events an event source went past unused (too large, undecodable, invalid), by source and reason.",
		}, []string{"source", "reason"}),
		CommitsVerified: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lexview_commits_verified_total", Help: "Repository commits (and #sync events) a verified source checked and applied, by source.",
		}, []string{"source"}),
		Resyncs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lexview_repo_resyncs_total", Help: "Repositories a verified source found a gap in (missed or refused commits), by source and reason.",
		}, []string{"source", "reason"}),
		BatchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "lexview_batch_size", Help: "Record changes per committed batch.",
			Buckets: []float64{1, 5, 10, 50, 100, 250, 500, 1000, 2000},
		}),
		CommitLag: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "lexview_commit_lag_seconds", Help: "Time from a change's arrival to its commit, by source: observed once per batch and source, for the oldest change.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, .75, 1, 1.5, 2.5, 5, 10},
		}, []string{"source"}),
		CommitDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "lexview_commit_duration_seconds", Help: "Time to write one batch to the database.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}),
		QueueDepth: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "lexview_write_queue_depth", Help: "Record changes waiting for the batch writer.",
		}),
		Reconnects: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lexview_source_reconnects_total", Help: "Connections an event source opened after its first, by source.",
		}, []string{"source"}),
		Connected: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "lexview_source_connected", Help: "1 while an event source is connected, by source.",
		}, []string{"source"}),
		BackfillRepos: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lexview_backfill_repos_total", Help: "Repositories processed by backfill, by outcome.",
		}, []string{"outcome"}),
		BackfillFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lexview_backfill_repo_failures_total", Help: "Repositories backfill could not fetch, by reason.",
		}, []string{"reason"}),
		BackfillRecords: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "lexview_backfill_records_total", Help: "Records fetched by backfill.",
		}),
		BackfillOnDemands: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lexview_backfill_on_demand_total",
			Help: "Requests to fetch one account's repository at once, by trigger and outcome (fetched, failed, pending, recent, full).",
		}, []string{"trigger", "outcome"}),
		LabelsReceived: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lexview_labels_received_total", Help: "Labels received from labelers' streams, by labeler.",
		}, []string{"labeler"}),
		LabelsStored: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lexview_labels_stored_total", Help: "Labels verified and stored, by labeler.",
		}, []string{"labeler"}),
		LabelsRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lexview_labels_refused_total", Help: "Labels (or, for reason malformed_frame, frames) refused from labelers' streams, by labeler and reason.",
		}, []string{"labeler", "reason"}),
		LabelerConnections: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "lexview_labeler_connections", Help: "Labeler subscriptions by state (resolving, connecting, connected, waiting).",
		}, []string{"state"}),
		LabelLag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "lexview_label_lag_seconds", Help: "Time from the creation (cts) of a labeler's last stored label to its storing, by labeler.",
		}, []string{"labeler"}),
		LexiconFetches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lexview_network_lexicon_fetches_total",
			Help: "Lexicons resolved and fetched from their NSID's authority, by reason (add, resolve, event, recheck) and outcome (unchanged, updated, failed step).",
		}, []string{"reason", "outcome"}),
		ProxiedCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lexview_xrpc_proxied_total",
			Help: "XRPC calls for NSIDs without a local lexicon, by outcome (forwarded, refused, unresolved, loop, upstream_failed).",
		}, []string{"outcome"}),
		Leader: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "lexview_instance_leader",
			Help: "1 while this instance leads (runs the event sources and the other singleton work), 0 while it follows, by instance ID.",
		}, []string{"instance"}),
		IndexableScans: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lexview_query_indexable_scans_total",
			Help: "Scripts' db.query and db.count calls answered by scanning a collection where a value index would have served them, by collection.",
		}, []string{"collection"}),
	}
	for _, c := range append(m.collectors(),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})) {
		m.registry.MustRegister(c)
	}
	return m
}

// collectors lists Lexview's own collectors.
func (m *Metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{
		m.EventsReceived, m.RecordsIndexed, m.RecordsRejected, m.RecordsFlagged, m.EventsSkipped, m.CommitsVerified, m.Resyncs, m.BatchSize, m.CommitLag, m.CommitDuration, m.QueueDepth,
		m.Reconnects, m.Connected, m.BackfillRepos, m.BackfillFailures, m.BackfillRecords, m.BackfillOnDemands,
		m.LabelsReceived, m.LabelsStored, m.LabelsRefused, m.LabelerConnections, m.LabelLag,
		m.LexiconFetches, m.ProxiedCalls, m.Leader, m.IndexableScans, m.sources, m.links, m.fieldIndexes, m.validation, m.plugins,
	}
}

// Register registers Lexview's collectors (not the Go runtime and process
// ones, which belong to the program) with r, for an embedder that serves
// metrics itself. On failure (for example a name registered already) it
// unregisters what it registered and returns the error.
func (m *Metrics) Register(r prometheus.Registerer) error {
	cs := m.collectors()
	for i, c := range cs {
		if err := r.Register(c); err != nil {
			for _, done := range cs[:i] {
				r.Unregister(done)
			}
			return err
		}
	}
	return nil
}

// Unregister removes what Register registered with r.
func (m *Metrics) Unregister(r prometheus.Registerer) {
	for _, c := range m.collectors() {
		r.Unregister(c)
	}
}

// Gatherer is New's own registry, for the listener serving it
// (METRICS_ADDR) in the Prometheus text format.
func (m *Metrics) Gatherer() prometheus.Gatherer { return m.registry }

// Received counts events arriving from source.
func (m *Metrics) Received(source, collection string) {
	if m != nil {
		m.EventsReceived.WithLabelValues(source, collection).Inc()
	}
}

// Indexed counts committed changes.
func (m *Metrics) Indexed(source, collection string, n int) {
	if m != nil {
		m.RecordsIndexed.WithLabelValues(source, collection).Add(float64(n))
	}
}

// Rejected counts changes refused by validation.
func (m *Metrics) Rejected(source, collection string) {
	if m != nil {
		m.RecordsRejected.WithLabelValues(source, collection).Inc()
	}
}

// Flagged counts invalid records stored with their validation error.
func (m *Metrics) Flagged(source, collection string) {
	if m != nil {
		m.RecordsFlagged.WithLabelValues(source, collection).Inc()
	}
}

// Skipped counts an event source went past unused.
func (m *Metrics) Skipped(source, reason string) {
	if m != nil {
		m.EventsSkipped.WithLabelValues(source, reason).Inc()
	}
}

// Verified counts n commits a verified source applied.
func (m *Metrics) Verified(source string, n int) {
	if m != nil {
		m.CommitsVerified.WithLabelValues(source).Add(float64(n))
	}
}

// Resync counts a repository gap a verified source found.
func (m *Metrics) Resync(source, reason string) {
	if m != nil {
		m.Resyncs.WithLabelValues(source, reason).Inc()
	}
}

// Committed records a batch of n changes that took took to write.
func (m *Metrics) Committed(n int, took time.Duration) {
	if m != nil {
		m.BatchSize.Observe(float64(n))
		m.CommitDuration.Observe(took.Seconds())
	}
}

// Lag records the lag of the oldest change of source in a committed batch.
func (m *Metrics) Lag(source string, lag time.Duration) {
	if m != nil {
		m.CommitLag.WithLabelValues(source).Observe(lag.Seconds())
	}
}

// Queue sets the writer queue depth.
func (m *Metrics) Queue(n int) {
	if m != nil {
		m.QueueDepth.Set(float64(n))
	}
}

// SourceConnected records a connection state change of an event source;
// reconnect is true for every connection after its first.
func (m *Metrics) SourceConnected(source string, up, reconnect bool) {
	if m == nil {
		return
	}
	if up {
		m.Connected.WithLabelValues(source).Set(1)
		if reconnect {
			m.Reconnects.WithLabelValues(source).Inc()
		}
	} else {
		m.Connected.WithLabelValues(source).Set(0)
	}
}

// BackfillRepo counts a processed repository, its records, and for a
// failed one its reason.
func (m *Metrics) BackfillRepo(outcome, reason string, records int) {
	if m != nil {
		m.BackfillRepos.WithLabelValues(outcome).Inc()
		if reason != "" {
			m.BackfillFailures.WithLabelValues(reason).Inc()
		}
		m.BackfillRecords.Add(float64(records))
	}
}

// BackfillOnDemand counts a request for one account's repository by its
// trigger and outcome, and the records a fetch wrote
// (backfill.OnDemandMetrics).
func (m *Metrics) BackfillOnDemand(trigger, outcome string, records int64) {
	if m != nil {
		m.BackfillOnDemands.WithLabelValues(trigger, outcome).Inc()
		m.BackfillRecords.Add(float64(records))
	}
}

// LabelsArrived counts n labels received from labeler.
func (m *Metrics) LabelsArrived(labeler string, n int) {
	if m != nil {
		m.LabelsReceived.WithLabelValues(labeler).Add(float64(n))
	}
}

// LabelsKept counts n labels of labeler stored, and sets its lag.
func (m *Metrics) LabelsKept(labeler string, n int, lag time.Duration) {
	if m != nil {
		m.LabelsStored.WithLabelValues(labeler).Add(float64(n))
		m.LabelLag.WithLabelValues(labeler).Set(lag.Seconds())
	}
}

// LabelRefused counts a label of labeler refused for reason.
func (m *Metrics) LabelRefused(labeler, reason string) {
	if m != nil {
		m.LabelsRefused.WithLabelValues(labeler, reason).Inc()
	}
}

// LabelerState moves one labeler subscription from state from to state
// to; "" is no state (a subscription starting or ending).
func (m *Metrics) LabelerState(from, to string) {
	if m == nil || from == to {
		return
	}
	if from != "" {
		m.LabelerConnections.WithLabelValues(from).Dec()
	}
	if to != "" {
		m.LabelerConnections.WithLabelValues(to).Inc()
	}
}

// LexiconFetch counts a network lexicon resolution by reason and outcome.
func (m *Metrics) LexiconFetch(reason, outcome string) {
	if m != nil {
		m.LexiconFetches.WithLabelValues(reason, outcome).Inc()
	}
}

// Proxied counts an XRPC call for an NSID without a local lexicon.
func (m *Metrics) Proxied(outcome string) {
	if m != nil {
		m.ProxiedCalls.WithLabelValues(outcome).Inc()
	}
}

// Leading records whether this instance (named instance) leads.
func (m *Metrics) Leading(instance string, leading bool) {
	if m != nil {
		v := 0.0
		if leading {
			v = 1
		}
		m.Leader.WithLabelValues(instance).Set(v)
	}
}
