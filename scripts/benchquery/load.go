package main

import (
	"cmp"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"
)

// loader drives GET requests over a fixed number of keep-alive connections.
type loader struct {
	conns  int
	client *http.Client
	tr     *http.Transport
}

func newLoader(conns int) *loader {
	tr := &http.Transport{
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		MaxConnsPerHost:     conns,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}
	return &loader{conns: conns, tr: tr, client: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

func (l *loader) close() { l.tr.CloseIdleConnections() }

// result is one load run: every request's latency and the totals.
type result struct {
	lat      []time.Duration // sorted after run
	errors   int
	firstErr string
	bytes    int64
	elapsed  time.Duration
}

func (r *result) rps() float64 { return float64(len(r.lat)) / r.elapsed.Seconds() }

func (r *result) bytesPerResp() float64 {
	if len(r.lat) == 0 {
		return 0
	}
	return float64(r.bytes) / float64(len(r.lat))
}

// pct returns the p-th percentile latency (nearest rank); 100 is the max.
func (r *result) pct(p float64) time.Duration {
	if len(r.lat) == 0 {
		return 0
	}
	i := int(float64(len(r.lat))*p/100+0.5) - 1
	return r.lat[min(max(i, 0), len(r.lat)-1)]
}

// run sends GET requests for urls from l.conns goroutines, each one
// request at a time, until d has passed; the goroutines share the URLs out
// and each cycles through its share. Latencies of successful (200)
// responses are kept; anything else counts as an error.
func (l *loader) run(d time.Duration, urls []string) *result {
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
	res := &result{elapsed: time.Since(start)}
	total := 0
	for i := range workers {
		total += len(workers[i].lat)
	}
	res.lat = make([]time.Duration, 0, total)
	for i := range workers {
		w := &workers[i]
		res.lat = append(res.lat, w.lat...)
		res.errors += w.errors
		res.bytes += w.bytes
		if res.firstErr == "" {
			res.firstErr = w.firstErr
		}
	}
	slices.Sort(res.lat)
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
		req.Header.Set("X-Client-Key", clientKey)
		out[i] = req
	}
	return out, nil
}

// merge returns the result of both runs, as if one: r may be nil.
func (r *result) merge(other *result) *result {
	if r == nil {
		return other
	}
	out := &result{
		lat:      append(slices.Clone(r.lat), other.lat...),
		errors:   r.errors + other.errors,
		firstErr: cmp.Or(r.firstErr, other.firstErr),
		bytes:    r.bytes + other.bytes,
		elapsed:  r.elapsed + other.elapsed,
	}
	slices.Sort(out.lat)
	return out
}
