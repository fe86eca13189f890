// Package benchkit holds what the HTTP load benchmarks under scripts/
// share: the load generator and its results, the server child processes
// and their measuring, the benchmark databases, the API client the load
// generator identifies as, and the pieces of the tuned bare handlers (the
// baselines) that do not depend on the queries they serve.
package benchkit

import (
	"cmp"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Loader drives GET requests over a fixed number of keep-alive connections.
type Loader struct {
	conns  int
	client *http.Client
	tr     *http.Transport
}

// NewLoader returns a Loader of conns connections.
func NewLoader(conns int) *Loader {
	tr := &http.Transport{
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		MaxConnsPerHost:     conns,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}
	return &Loader{conns: conns, tr: tr, client: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

// Close closes the idle connections.
func (l *Loader) Close() { l.tr.CloseIdleConnections() }

// Result is one load run: every request's latency and the totals.
type Result struct {
	Lat      []time.Duration // of the successful requests, sorted
	Errors   int
	FirstErr string
	Bytes    int64
	Elapsed  time.Duration
}

// RPS is the successful requests per second.
func (r *Result) RPS() float64 { return float64(len(r.Lat)) / r.Elapsed.Seconds() }

// BytesPerResp is the mean size of a successful answer.
func (r *Result) BytesPerResp() float64 {
	if len(r.Lat) == 0 {
		return 0
	}
	return float64(r.Bytes) / float64(len(r.Lat))
}

// Pct returns the p-th percentile latency (nearest rank); 100 is the max.
func (r *Result) Pct(p float64) time.Duration {
	if len(r.Lat) == 0 {
		return 0
	}
	i := int(float64(len(r.Lat))*p/100+0.5) - 1
	return r.Lat[min(max(i, 0), len(r.Lat)-1)]
}

// Run sends GET requests for urls from l.conns goroutines, each one
// request at a time, until d has passed; the goroutines share the URLs out
// and each cycles through its share. Latencies of successful (200)
// responses are kept; anything else counts as an error.
func (l *Loader) Run(d time.Duration, urls []string) *Result {
	type worker struct {
		lat      []time.Duration
		errors   int
		firstErr string
		bytes    int64
	}
	workers := make([]worker, l.conns)
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for i := range workers {
		w := &workers[i]
		w.lat = make([]time.Duration, 0, 1<<14)
		wg.Add(1)
		go func() {
			defer wg.Done()
			reqs, err := requests(urls, i, l.conns)
			if err != nil {
				w.errors, w.firstErr = 1, err.Error()
				return
			}
			next := 0
			for {
				t0 := time.Now()
				if !t0.Before(deadline) {
					return
				}
				req := reqs[next]
				next = (next + 1) % len(reqs)
				resp, err := l.client.Do(req)
				if err != nil {
					w.errors++
					if w.firstErr == "" {
						w.firstErr = err.Error()
					}
					continue
				}
				n, err := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				took := time.Since(t0)
				switch {
				case err != nil:
					w.errors++
					if w.firstErr == "" {
						w.firstErr = "read body: " + err.Error()
					}
				case resp.StatusCode != http.StatusOK:
					w.errors++
					if w.firstErr == "" {
						w.firstErr = fmt.Sprintf("status %d", resp.StatusCode)
					}
				default:
					w.lat = append(w.lat, took)
					w.bytes += n
				}
			}
		}()
	}
	wg.Wait()
	res := &Result{Elapsed: time.Since(start)}
	total := 0
	for i := range workers {
		total += len(workers[i].lat)
	}
	res.Lat = make([]time.Duration, 0, total)
	for i := range workers {
		w := &workers[i]
		res.Lat = append(res.Lat, w.lat...)
		res.Errors += w.errors
		res.Bytes += w.bytes
		if res.FirstErr == "" {
			res.FirstErr = w.firstErr
		}
	}
	slices.Sort(res.Lat)
	return res
}

// requests builds worker w's share of urls (every n-th from w, or one URL
// when there are fewer than n), each with the client key.
func requests(urls []string, w, n int) ([]*http.Request, error) {
	var share []string
	for i := w; i < len(urls); i += n {
		share = append(share, urls[i])
	}
	if len(share) == 0 {
		share = []string{urls[w%len(urls)]}
	}
	out := make([]*http.Request, len(share))
	for i, u := range share {
		req, err := http.NewRequest(http.MethodGet, u, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("X-Client-Key", ClientKey)
		out[i] = req
	}
	return out, nil
}

// Merge returns the result of both runs, as if one: r may be nil.
func (r *Result) Merge(other *Result) *Result {
	if r == nil {
		return other
	}
	out := &Result{
		Lat:      append(slices.Clone(r.Lat), other.Lat...),
		Errors:   r.Errors + other.Errors,
		FirstErr: cmp.Or(r.FirstErr, other.FirstErr),
		Bytes:    r.Bytes + other.Bytes,
		Elapsed:  r.Elapsed + other.Elapsed,
	}
	slices.Sort(out.Lat)
	return out
}
