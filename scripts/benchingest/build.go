package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"slices"
	"strings"
	"time"
)

// indexSpec is a field index the build phase declares (-build-index).
type indexSpec struct {
	collection, path, kind string
}

func (s indexSpec) String() string { return s.collection + ":" + s.path + " (" + s.kind + ")" }

// parseIndexSpecs reads -build-index: comma-separated collection:path or
// collection:path:kind, kind value (the default) or text, the collection one
// of the stream's. The path is checked by the service.
func parseIndexSpecs(s string) ([]indexSpec, error) {
	var out []indexSpec
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		parts := strings.Split(item, ":")
		if len(parts) < 2 || len(parts) > 3 || parts[1] == "" {
			return nil, fmt.Errorf("-build-index %q: want collection:path or collection:path:kind", item)
		}
		spec := indexSpec{collection: parts[0], path: parts[1], kind: "value"}
		if len(parts) == 3 {
			spec.kind = parts[2]
		}
		if !slices.Contains(collections, spec.collection) {
			return nil, fmt.Errorf("-build-index %q: the collection is none of the stream's (%s)", item, strings.Join(collections, ", "))
		}
		if spec.kind != "value" && spec.kind != "text" {
			return nil, fmt.Errorf("-build-index %q: kind must be value or text", item)
		}
		if slices.Contains(out, spec) {
			return nil, fmt.Errorf("-build-index %q: listed twice", item)
		}
		out = append(out, spec)
	}
	return out, nil
}

// fieldIndex is the admin API's shape of a declared field index.
type fieldIndex struct {
	ID         int64   `json:"id"`
	Collection string  `json:"collection"`
	Path       string  `json:"path"`
	Kind       string  `json:"kind"`
	State      string  `json:"state"`
	Done       int64   `json:"done"`
	Total      int64   `json:"total"`
	Error      *string `json:"error"`
	CreatedAt  string  `json:"created_at"`
	UpdatedAt  string  `json:"updated_at"`
}

func (f fieldIndex) describe() string {
	s := fmt.Sprintf("index %d %s:%s (%s): %s, %d of %d records", f.ID, f.Collection, f.Path, f.Kind, f.State, f.Done, f.Total)
	if f.Error != nil {
		s += ", error " + *f.Error
	}
	return s
}

// builtIndex is what the phase reports of one index.
type builtIndex struct {
	spec indexSpec
	// total is the records the collection held when the build started
	// (the index's total); done those the build processed.
	total, done int64
	// took is the time from the declaration to the index being ready as
	// the service stamps them (created_at → updated_at), 0 when not ready.
	took time.Duration
}

// buildSummary totals the indexes: the records their builds processed,
// and the time from the first declaration to the last index ready (the
// service's timestamps); ok is false when an index is not ready or a
// timestamp does not parse.
func buildSummary(list []fieldIndex) (records int64, took time.Duration, ok bool) {
	var first, last time.Time
	ok = len(list) > 0
	for _, f := range list {
		records += f.Done
		created, err1 := time.Parse(time.RFC3339Nano, f.CreatedAt)
		updated, err2 := time.Parse(time.RFC3339Nano, f.UpdatedAt)
		if f.State != "ready" || err1 != nil || err2 != nil {
			ok = false
			continue
		}
		if first.IsZero() || created.Before(first) {
			first = created
		}
		if updated.After(last) {
			last = updated
		}
	}
	if !ok {
		return records, 0, false
	}
	return records, last.Sub(first), true
}

// adminKey bootstraps an admin API key on the database once (a second
// `appview admin bootstrap` would be refused) and returns it.
func (r *runner) adminKey(ctx context.Context, dbURL string) (string, error) {
	if r.keyDB == dbURL {
		return r.key, nil
	}
	key, err := bootstrapAdmin(ctx, r.bin, dbURL, r.work)
	if err != nil {
		return "", err
	}
	r.keyDB, r.key = dbURL, key
	return key, nil
}

// build publishes live events at -steady-rate, continuing the stream with
// g as they are sent, so that the phase lasts as long as the build; after
// the warmup it measures a window of -build-baseline (base), then declares
// the -build-index indexes through POST /admin/indexes and measures the
// window from just before the declaration until every index is ready
// (during), polling GET /admin/indexes. An index not ready within -timeout
// leaves during incomplete, measured up to then; a failed one is an error.
func (r *runner) build(ctx context.Context, backend, dbURL string, g *generator) (base, during phaseResult, err error) {
	during = phaseResult{name: "build", inProcess: r.opt.inProcess}
	key, err := r.adminKey(ctx, dbURL)
	if err != nil {
		return base, during, err
	}
	w, err := r.startLive(ctx, serviceConfig{dbURL: dbURL}, &stream{g: g}, backend, "build", &during)
	if err != nil {
		return base, during, err
	}
	defer w.close()
	svc, pub := w.svc, w.pub
	r1 := w.first
	if r.opt.buildBaseline > 0 { // else base stays unnamed: not reported
		base = phaseResult{name: "build-base", inProcess: r.opt.inProcess}
		if err := sleepUntil(ctx, pub.start.Add(r.opt.steadyWarmup+r.opt.buildBaseline)); err != nil {
			return base, during, err
		}
		if r1, err = r.measure(ctx, svc); err != nil {
			return base, during, err
		}
		base.window(w.first, r1)
		base.events = int(pub.sent.Load())
		base.complete = true
	}
	sent0 := pub.sent.Load()
	var ids []int64
	for _, spec := range r.opt.buildIndexes {
		var f fieldIndex
		if err := callJSON(ctx, http.MethodPost, svc.baseURL()+"/admin/indexes", key,
			map[string]string{"collection": spec.collection, "path": spec.path, "kind": spec.kind}, &f); err != nil {
			return base, during, err
		}
		if f.State != "building" {
			return base, during, fmt.Errorf("a new index is %s, want building (%s)", f.State, f.describe())
		}
		ids = append(ids, f.ID)
	}
	list, maxQueue, err := r.waitIndexes(ctx, svc, key, ids, r1.metrics)
	if err != nil {
		return base, during, err
	}
	r2, err := r.measure(ctx, svc)
	if err != nil {
		return base, during, err
	}
	w.stopProfile()
	during.maxQueue = maxQueue
	during.window(r1, r2)
	during.events = int(pub.sent.Load() - sent0)
	var took time.Duration
	during.buildRecords, took, during.complete = buildSummary(list)
	during.buildSeconds = took.Seconds()
	if !during.complete { // not ready within -timeout: the window is what there is
		during.buildSeconds = during.wall.Seconds()
	}
	during.buildRate = float64(during.buildRecords) / during.buildSeconds
	for i, f := range list {
		b := builtIndex{spec: r.opt.buildIndexes[i], total: f.Total, done: f.Done}
		if _, d, ok := buildSummary(list[i : i+1]); ok {
			b.took = d
		}
		during.indexes = append(during.indexes, b)
	}
	return base, during, nil
}

// waitIndexes polls the admin API until every index of ids is ready or
// -timeout has passed (it then returns them as they are), scraping the
// write queue's depth on the way and logging, every 10 s, the progress and
// the live commit lag since the last report (since from at first); it
// returns the indexes, in the order of ids, and the largest depth seen. A
// failed or vanished index is an error.
func (r *runner) waitIndexes(ctx context.Context, svc service, key string, ids []int64, from scrape) ([]fieldIndex, float64, error) {
	const poll = 100 * time.Millisecond // the duration comes from the service's timestamps
	var maxQueue float64
	deadline := time.Now().Add(r.opt.timeout)
	nextScrape, nextReport := time.Now(), time.Now().Add(10*time.Second)
	for {
		var page struct {
			Indexes []fieldIndex `json:"indexes"`
		}
		if err := callJSON(ctx, http.MethodGet, svc.baseURL()+"/admin/indexes", key, nil, &page); err != nil {
			return nil, maxQueue, err
		}
		list, ready := make([]fieldIndex, len(ids)), true
		for i, id := range ids {
			j := slices.IndexFunc(page.Indexes, func(f fieldIndex) bool { return f.ID == id })
			if j < 0 {
				return nil, maxQueue, fmt.Errorf("index %d is no longer listed", id)
			}
			list[i] = page.Indexes[j]
			switch list[i].State {
			case "ready":
			case "building":
				ready = false
			default:
				return nil, maxQueue, errors.New(list[i].describe())
			}
		}
		if ready {
			return list, maxQueue, nil
		}
		if time.Now().After(nextScrape) {
			if s, err := scrapeMetrics(ctx, svc.metricsURL()); err == nil {
				maxQueue = max(maxQueue, s.queue)
			}
			nextScrape = time.Now().Add(250 * time.Millisecond)
		}
		if time.Now().After(nextReport) {
			for _, f := range list {
				log.Print(f.describe())
			}
			if s, err := scrapeMetrics(ctx, svc.metricsURL()); err == nil {
				lag := s.lag.minus(from.lag)
				p50, _ := lag.quantile(0.5)
				p99, inf := lag.quantile(0.99)
				log.Printf("  live commit lag p50 / p99 over the last %s: %s / %s", s.at.Sub(from.at).Round(time.Second), seconds(p50, false), seconds(p99, inf))
				from = s
			}
			nextReport = nextReport.Add(10 * time.Second)
		}
		if c, ok := svc.(*child); ok {
			if gone, err := c.exited(); gone {
				return nil, maxQueue, fmt.Errorf("appview exited (%v):\n%s", err, logTail(c.logPath, 20))
			}
		}
		if time.Now().After(deadline) {
			for _, f := range list {
				log.Printf("NOT READY after %s: %s", r.opt.timeout, f.describe())
			}
			return list, maxQueue, nil
		}
		if err := sleepUntil(ctx, time.Now().Add(poll)); err != nil {
			return nil, maxQueue, err
		}
	}
}
