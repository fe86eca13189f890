package main

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// scrape is one reading of the service's /metrics.
type scrape struct {
	at       time.Time
	indexed  float64 // lexview_records_indexed_total of live ingestion (every source but backfill)
	rejected float64 // lexview_records_rejected_total of live ingestion
	queue    float64 // lexview_write_queue_depth
	lag      histogram
	batch    histogram
	// commitSeconds is lexview_commit_duration_seconds_sum: the time the
	// batch writer spent writing batches.
	commitSeconds float64
	// backfillIndexed and backfillRejected are lexview_records_indexed_total
	// and lexview_records_rejected_total of source="backfill".
	backfillIndexed, backfillRejected float64
}

// histogram is a Prometheus histogram: cumulative counts per upper bound.
type histogram struct {
	bounds []float64 // ascending, +Inf last
	counts []float64
	sum    float64
	count  float64
}

var metricsClient = &http.Client{Timeout: 10 * time.Second}

// scrapeMetrics reads and parses the text exposition at url.
func scrapeMetrics(ctx context.Context, url string) (scrape, error) {
	s := scrape{at: time.Now()}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return s, err
	}
	resp, err := metricsClient.Do(req)
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return s, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	lag, batch := map[float64]float64{}, map[float64]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, labels, value, ok := parseSample(line)
		if !ok {
			continue
		}
		switch name {
		case "lexview_records_indexed_total":
			if isBackfill(labels) {
				s.backfillIndexed += value
			} else {
				s.indexed += value
			}
		case "lexview_records_rejected_total":
			if isBackfill(labels) {
				s.backfillRejected += value
			} else {
				s.rejected += value
			}
		case "lexview_write_queue_depth":
			s.queue = value
		case "lexview_commit_lag_seconds_bucket":
			if liveSource(labels) {
				lag[leBound(labels)] = value
			}
		case "lexview_commit_lag_seconds_sum":
			if liveSource(labels) {
				s.lag.sum = value
			}
		case "lexview_commit_lag_seconds_count":
			if liveSource(labels) {
				s.lag.count = value
			}
		case "lexview_batch_size_bucket":
			batch[leBound(labels)] = value
		case "lexview_batch_size_sum":
			s.batch.sum = value
		case "lexview_batch_size_count":
			s.batch.count = value
		case "lexview_commit_duration_seconds_sum":
			s.commitSeconds = value
		}
	}
	if err := sc.Err(); err != nil {
		return s, err
	}
	s.lag.fill(lag)
	s.batch.fill(batch)
	return s, nil
}

// liveSource reports whether a sample's labels are those of live
// ingestion (the lag histogram is per source).
func liveSource(labels string) bool { return strings.Contains(labels, `source="jetstream"`) }

// isBackfill reports whether a sample's labels are those of backfill.
func isBackfill(labels string) bool { return strings.Contains(labels, `source="backfill"`) }

// parseSample splits `name{labels} value` (an optional timestamp follows).
func parseSample(line string) (name, labels string, value float64, ok bool) {
	rest := line
	if i := strings.IndexByte(line, '{'); i >= 0 {
		j := strings.LastIndexByte(line, '}')
		if j < i {
			return "", "", 0, false
		}
		name, labels, rest = line[:i], line[i+1:j], line[j+1:]
	} else {
		i := strings.IndexByte(line, ' ')
		if i < 0 {
			return "", "", 0, false
		}
		name, rest = line[:i], line[i:]
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return "", "", 0, false
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	return name, labels, v, err == nil
}

func leBound(labels string) float64 {
	for _, l := range strings.Split(labels, ",") {
		if v, ok := strings.CutPrefix(l, `le="`); ok {
			f, err := strconv.ParseFloat(strings.TrimSuffix(v, `"`), 64)
			if err == nil {
				return f
			}
		}
	}
	return math.NaN()
}

func (h *histogram) fill(m map[float64]float64) {
	h.bounds, h.counts = nil, nil
	for b := range m {
		if !math.IsNaN(b) {
			h.bounds = append(h.bounds, b)
		}
	}
	sort.Float64s(h.bounds)
	for _, b := range h.bounds {
		h.counts = append(h.counts, m[b])
	}
}

// minus is the histogram of the observations made between before and h.
func (h histogram) minus(before histogram) histogram {
	out := histogram{bounds: h.bounds, counts: make([]float64, len(h.counts)), sum: h.sum - before.sum, count: h.count - before.count}
	for i := range h.counts {
		out.counts[i] = h.counts[i]
		if i < len(before.counts) {
			out.counts[i] -= before.counts[i]
		}
	}
	return out
}

// quantile estimates the q-quantile like PromQL's histogram_quantile:
// linear interpolation inside the bucket that holds it. inf reports that
// it lies beyond the largest finite bound (the value is then that bound).
func (h histogram) quantile(q float64) (v float64, inf bool) {
	if len(h.counts) == 0 || h.counts[len(h.counts)-1] == 0 {
		return math.NaN(), false
	}
	total := h.counts[len(h.counts)-1]
	rank := q * total
	for i, c := range h.counts {
		if c < rank {
			continue
		}
		if math.IsInf(h.bounds[i], 1) {
			if i == 0 {
				return math.NaN(), true
			}
			return h.bounds[i-1], true
		}
		lo, below := 0.0, 0.0
		if i > 0 {
			lo, below = h.bounds[i-1], h.counts[i-1]
		}
		if c == below {
			return h.bounds[i], false
		}
		return lo + (h.bounds[i]-lo)*(rank-below)/(c-below), false
	}
	return math.NaN(), false
}

// mean is sum/count.
func (h histogram) mean() float64 {
	if h.count == 0 {
		return math.NaN()
	}
	return h.sum / h.count
}
