package metrics

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// ValidationState is what the validation collector reports at each
// scrape: the records stored with a validation error, and the
// re-validation passes.
type ValidationState struct {
	// Invalid counts the flagged records per collection.
	Invalid map[string]int64
	// Passes are the re-validation passes, one per collection.
	Passes []ValidationPass
}

// ValidationPass is one collection's re-validation pass.
type ValidationPass struct {
	Collection string
	Checked    int64
	Done       bool
}

// validationCollector reads the validation state when scraped.
type validationCollector struct {
	read    atomic.Pointer[func() (ValidationState, bool)]
	invalid *prometheus.Desc
	checked *prometheus.Desc
	done    *prometheus.Desc
}

func newValidationCollector() *validationCollector {
	return &validationCollector{
		invalid: prometheus.NewDesc("lexview_records_invalid",
			"Stored records flagged with a validation error (validation modes flag and hide), by collection.", []string{"collection"}, nil),
		checked: prometheus.NewDesc("lexview_revalidation_records",
			"Stored records the re-validation pass of the collection's latest lexicon revision has validated.", []string{"collection"}, nil),
		done: prometheus.NewDesc("lexview_revalidation_done",
			"1 once the re-validation pass of the collection's latest lexicon revision is over, 0 while it runs.", []string{"collection"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *validationCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.invalid
	ch <- c.checked
	ch <- c.done
}

// Collect implements prometheus.Collector.
func (c *validationCollector) Collect(ch chan<- prometheus.Metric) {
	read := c.read.Load()
	if read == nil {
		return
	}
	s, ok := (*read)()
	if !ok {
		return
	}
	for coll, n := range s.Invalid {
		ch <- prometheus.MustNewConstMetric(c.invalid, prometheus.GaugeValue, float64(n), coll)
	}
	for _, p := range s.Passes {
		done := 0.0
		if p.Done {
			done = 1
		}
		ch <- prometheus.MustNewConstMetric(c.checked, prometheus.GaugeValue, float64(p.Checked), p.Collection)
		ch <- prometheus.MustNewConstMetric(c.done, prometheus.GaugeValue, done, p.Collection)
	}
}

// WatchValidation makes the metrics report the validation state as read
// reports it at each scrape (lexview_records_invalid,
// lexview_revalidation_records, lexview_revalidation_done); read returns
// false when the state cannot be read. A later call replaces read.
func (m *Metrics) WatchValidation(read func() (ValidationState, bool)) {
	if m != nil {
		m.validation.read.Store(&read)
	}
}
