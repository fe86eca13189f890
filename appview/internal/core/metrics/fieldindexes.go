package metrics

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// FieldIndexState is one declared field index as the field-index
// collector reports it at each scrape.
type FieldIndexState struct {
	Collection, Path, Kind string
	Ready                  bool
	// Done is the number of records its build has processed, of Total.
	Done, Total int64
}

// fieldIndexCollector reads the declared field indexes when scraped.
type fieldIndexCollector struct {
	read  atomic.Pointer[func() ([]FieldIndexState, bool)]
	ready *prometheus.Desc
	done  *prometheus.Desc
	total *prometheus.Desc
}

func newFieldIndexCollector() *fieldIndexCollector {
	labels := []string{"collection", "path", "kind"}
	return &fieldIndexCollector{
		ready: prometheus.NewDesc("lexview_field_index_ready",
			"1 once a declared field index is built and the query planner uses it, 0 while it builds or after its build failed.", labels, nil),
		done: prometheus.NewDesc("lexview_field_index_build_records",
			"Records the build of a declared field index has processed.", labels, nil),
		total: prometheus.NewDesc("lexview_field_index_build_total_records",
			"Records the collection of a declared field index held when its build started (those written since are indexed as they are written).", labels, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *fieldIndexCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.ready
	ch <- c.done
	ch <- c.total
}

// Collect implements prometheus.Collector.
func (c *fieldIndexCollector) Collect(ch chan<- prometheus.Metric) {
	read := c.read.Load()
	if read == nil {
		return
	}
	list, ok := (*read)()
	if !ok {
		return
	}
	for _, f := range list {
		ready := 0.0
		if f.Ready {
			ready = 1
		}
		ch <- prometheus.MustNewConstMetric(c.ready, prometheus.GaugeValue, ready, f.Collection, f.Path, f.Kind)
		ch <- prometheus.MustNewConstMetric(c.done, prometheus.GaugeValue, float64(f.Done), f.Collection, f.Path, f.Kind)
		ch <- prometheus.MustNewConstMetric(c.total, prometheus.GaugeValue, float64(f.Total), f.Collection, f.Path, f.Kind)
	}
}

// WatchFieldIndexes makes the metrics report the declared field indexes
// as read lists them at each scrape (lexview_field_index_ready,
// lexview_field_index_build_records,
// lexview_field_index_build_total_records); read returns false when they
// cannot be read. A later call replaces read.
func (m *Metrics) WatchFieldIndexes(read func() ([]FieldIndexState, bool)) {
	if m != nil {
		m.fieldIndexes.read.Store(&read)
	}
}

// IndexableScan counts a script's query answered by scanning collection
// where a value index would have served it
// (lexview_query_indexable_scans_total).
func (m *Metrics) IndexableScan(collection string) {
	if m != nil {
		m.IndexableScans.WithLabelValues(collection).Inc()
	}
}
