package metrics

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// PluginMemory is the plugins' linear memory as the plugin-memory
// collector reports it at each scrape.
type PluginMemory struct {
	// ByPlugin is the memory each plugin's instances hold, in bytes.
	ByPlugin map[string]int64
	// Limit is the ceiling of all plugins together, in bytes.
	Limit int64
}

// pluginCollector reads the plugins' memory when scraped.
type pluginCollector struct {
	read  atomic.Pointer[func() PluginMemory]
	inUse *prometheus.Desc
	limit *prometheus.Desc
}

func newPluginCollector() *pluginCollector {
	return &pluginCollector{
		inUse: prometheus.NewDesc("lexview_plugin_memory_bytes",
			"Linear memory the instances of a WASM plugin hold, by plugin.", []string{"plugin"}, nil),
		limit: prometheus.NewDesc("lexview_plugin_memory_limit_bytes",
			"The ceiling on the linear memory of every WASM plugin instance together (plugins.max_memory_bytes).", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *pluginCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.inUse
	ch <- c.limit
}

// Collect implements prometheus.Collector.
func (c *pluginCollector) Collect(ch chan<- prometheus.Metric) {
	read := c.read.Load()
	if read == nil {
		return
	}
	s := (*read)()
	for plugin, n := range s.ByPlugin {
		ch <- prometheus.MustNewConstMetric(c.inUse, prometheus.GaugeValue, float64(n), plugin)
	}
	ch <- prometheus.MustNewConstMetric(c.limit, prometheus.GaugeValue, float64(s.Limit))
}

// WatchPluginMemory makes the metrics report the plugins' memory as
// read reports it at each scrape (lexview_plugin_memory_bytes,
// lexview_plugin_memory_limit_bytes). A later call replaces read.
func (m *Metrics) WatchPluginMemory(read func() PluginMemory) {
	if m != nil {
		m.plugins.read.Store(&read)
	}
}
