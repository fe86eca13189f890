package metrics

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// SourceState is an event source's state as the source-state collector
// reports it at each scrape.
type SourceState struct {
	Name  string  // the source's name
	Host  string  // the host it connects to
	State string  // idle, connecting, connected or waiting
	Lag   float64 // seconds behind the head of its stream
	// Position is the last stream position handed over (a firehose
	// sequence number, a Jetstream time in microseconds).
	Position int64
}

// sourceStates are the states a source reports, each exported as 0 or 1.
var sourceStates = []string{"idle", "connecting", "connected", "waiting"}

// sourceCollector reads the sources' states when scraped.
type sourceCollector struct {
	read     atomic.Pointer[func() []SourceState]
	lag      *prometheus.Desc
	position *prometheus.Desc
	state    *prometheus.Desc
}

func newSourceCollector() *sourceCollector {
	return &sourceCollector{
		lag: prometheus.NewDesc("lexview_source_lag_seconds",
			"How far behind the head of its stream an event source is: from the stream's timestamp of the last event handed over to now (to its arrival while the stream is quiet), by source.",
			[]string{"source"}, nil),
		position: prometheus.NewDesc("lexview_source_position",
			"The last stream position an event source handed over (firehose sequence number, Jetstream time_us), by source.",
			[]string{"source"}, nil),
		state: prometheus.NewDesc("lexview_source_host_state",
			"1 for the connection state an event source is in with its host, 0 for the others, by source, host and state (idle, connecting, connected, waiting).",
			[]string{"source", "host", "state"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *sourceCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.lag
	ch <- c.position
	ch <- c.state
}

// Collect implements prometheus.Collector.
func (c *sourceCollector) Collect(ch chan<- prometheus.Metric) {
	read := c.read.Load()
	if read == nil {
		return
	}
	for _, s := range (*read)() {
		ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, s.Lag, s.Name)
		ch <- prometheus.MustNewConstMetric(c.position, prometheus.GaugeValue, float64(s.Position), s.Name)
		for _, st := range sourceStates {
			v := 0.0
			if st == s.State {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(c.state, prometheus.GaugeValue, v, s.Name, s.Host, st)
		}
	}
}

// WatchSources makes the metrics report the sources' states as read reports
// them at each scrape (lexview_source_lag_seconds, lexview_source_position,
// lexview_source_host_state). A later call replaces read.
func (m *Metrics) WatchSources(read func() []SourceState) {
	if m != nil {
		m.sources.read.Store(&read)
	}
}
