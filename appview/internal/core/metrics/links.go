package metrics

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// LinkIndexState is the link index's state as the link-index collector
// reports it at each scrape.
type LinkIndexState struct {
	// Done is true once the records stored before the index existed are
	// indexed.
	Done bool
	// Scanned counts the stored records the background pass has read.
	Scanned int64
	// Skipped counts the links not indexed because a record exceeded a
	// bound, since the process started.
	Skipped int64
}

// linkCollector reads the link index's state when scraped.
type linkCollector struct {
	read    atomic.Pointer[func() (LinkIndexState, bool)]
	done    *prometheus.Desc
	scanned *prometheus.Desc
	skipped *prometheus.Desc
}

func newLinkCollector() *linkCollector {
	return &linkCollector{
		done: prometheus.NewDesc("lexview_link_index_ready",
			"1 once the link index covers every stored record, 0 while its background pass indexes the records stored before it.", nil, nil),
		scanned: prometheus.NewDesc("lexview_link_index_pass_records",
			"Stored records the link index's background pass has read.", nil, nil),
		skipped: prometheus.NewDesc("lexview_links_skipped_total",
			"Links not indexed because their record exceeded a bound (links per record, depth, target or path length).", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *linkCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.done
	ch <- c.scanned
	ch <- c.skipped
}

// Collect implements prometheus.Collector.
func (c *linkCollector) Collect(ch chan<- prometheus.Metric) {
	read := c.read.Load()
	if read == nil {
		return
	}
	s, ok := (*read)()
	if !ok {
		return
	}
	done := 0.0
	if s.Done {
		done = 1
	}
	ch <- prometheus.MustNewConstMetric(c.done, prometheus.GaugeValue, done)
	ch <- prometheus.MustNewConstMetric(c.scanned, prometheus.GaugeValue, float64(s.Scanned))
	ch <- prometheus.MustNewConstMetric(c.skipped, prometheus.CounterValue, float64(s.Skipped))
}

// WatchLinkIndex makes the metrics report the link index's state as read
// reports it at each scrape (lexview_link_index_ready,
// lexview_link_index_pass_records, lexview_links_skipped_total); read
// returns false when the state cannot be read. A later call replaces read.
func (m *Metrics) WatchLinkIndex(read func() (LinkIndexState, bool)) {
	if m != nil {
		m.links.read.Store(&read)
	}
}
