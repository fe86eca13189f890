package history

import (
	"math"
	"sync"
	"time"
)

// bounds are the upper bounds of the latency buckets, in milliseconds;
// one more bucket holds the calls slower than the last.
var bounds = [...]float64{1, 2, 3, 5, 7.5, 10, 15, 20, 30, 50, 75, 100, 150, 200, 300, 500, 750, 1000, 1500, 2000, 3000, 5000, 10000}

// Buckets counts calls by latency: Buckets[i] those at most bounds[i]
// milliseconds (and above bounds[i-1]), the last those slower than every
// bound.
type Buckets [len(bounds) + 1]int64

// CallCounts are the counters of one XRPC method since start.
type CallCounts struct {
	Calls    int64 // calls answered
	Failures int64 // calls answered with a 5xx status
	Latency  Buckets
}

// OtherMethods names what is counted beyond maxMethods methods, and in
// the history the methods without a series of their own.
const OtherMethods = "other"

// AllMethods names every method together in the history.
const AllMethods = "all"

// maxMethods bounds the methods Calls counts apart; the calls of others
// count under OtherMethods.
const maxMethods = 500

// Calls counts XRPC calls by method, with their latency. It is safe for
// concurrent use; a nil *Calls counts nothing.
type Calls struct {
	mu      sync.Mutex
	methods map[string]*CallCounts
}

// NewCalls returns an empty Calls.
func NewCalls() *Calls { return &Calls{methods: map[string]*CallCounts{}} }

// Observe counts one call of method answered with status after took.
func (c *Calls) Observe(method string, status int, took time.Duration) {
	if c == nil {
		return
	}
	ms := float64(took) / float64(time.Millisecond)
	b := len(bounds)
	for i, ub := range bounds {
		if ms <= ub {
			b = i
			break
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.methods[method]
	if m == nil {
		if len(c.methods) >= maxMethods {
			method = OtherMethods
			m = c.methods[method]
		}
		if m == nil {
			m = &CallCounts{}
			c.methods[method] = m
		}
	}
	m.Calls++
	if status >= 500 {
		m.Failures++
	}
	m.Latency[b]++
}

// Read returns a copy of the counters by method.
func (c *Calls) Read() map[string]CallCounts {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]CallCounts, len(c.methods))
	for k, v := range c.methods {
		out[k] = *v
	}
	return out
}

// sub returns the calls counted in c since prev; a counter lower than
// prev's was reset and counts from zero.
func (c CallCounts) sub(prev CallCounts) CallCounts {
	if c.Calls < prev.Calls {
		return c
	}
	out := CallCounts{Calls: c.Calls - prev.Calls, Failures: max(0, c.Failures-prev.Failures)}
	for i := range c.Latency {
		out.Latency[i] = max(0, c.Latency[i]-prev.Latency[i])
	}
	return out
}

// add adds d's counts to c.
func (c *CallCounts) add(d CallCounts) {
	c.Calls += d.Calls
	c.Failures += d.Failures
	for i := range c.Latency {
		c.Latency[i] += d.Latency[i]
	}
}

// quantile estimates the q-quantile (0 < q < 1) of the latencies counted
// in b, in milliseconds, interpolating linearly within the bucket it falls
// in (the slowest bucket, unbounded, answers its lower bound); NaN when b
// counts nothing.
func (b Buckets) quantile(q float64) float64 {
	var total int64
	for _, n := range b {
		total += n
	}
	if total == 0 {
		return math.NaN()
	}
	rank := q * float64(total)
	var cum float64
	for i, n := range b {
		if n == 0 {
			continue
		}
		if cum+float64(n) >= rank {
			if i == len(bounds) {
				return bounds[len(bounds)-1]
			}
			lower := 0.0
			if i > 0 {
				lower = bounds[i-1]
			}
			return lower + (bounds[i]-lower)*(rank-cum)/float64(n)
		}
		cum += float64(n)
	}
	return bounds[len(bounds)-1]
}
