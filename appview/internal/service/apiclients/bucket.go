package apiclients

import (
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// bucket is one client's token bucket on this instance. When n instances
// share the traffic (behind a load balancer), each sizes its bucket to
// 1/n of the client's limits, so that together they allow about the
// limits: see perInstance.
type bucket struct {
	lim *rate.Limiter

	mu     sync.Mutex   // serialises re-sizing
	limits Limits       // the client's limits, for all instances together; under mu
	n      atomic.Int64 // the instance count lim is sized for
}

// newBucket returns a full bucket for limits shared by n instances.
func newBucket(limits Limits, n int) *bucket {
	per := perInstance(limits, n)
	b := &bucket{lim: rate.NewLimiter(rate.Limit(per.RefillRate), per.Capacity), limits: limits}
	b.n.Store(int64(n))
	return b
}

// set applies new client limits, or a new instance count, from at. The
// level is kept (capped at a smaller capacity; a larger one fills at the
// refill rate).
func (b *bucket) set(at time.Time, limits Limits, n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.resize(at, limits, n)
}

// follow re-sizes the bucket at now when the instance count moved from the
// one it is sized for; it costs one atomic load when it did not.
func (b *bucket) follow(now time.Time, n int) {
	if b.n.Load() == int64(n) {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.n.Load() != int64(n) {
		b.resize(now, b.limits, n)
	}
}

// resize sets limits for n instances from at; b.mu is held.
func (b *bucket) resize(at time.Time, limits Limits, n int) {
	per := perInstance(limits, n)
	b.lim.SetLimitAt(at, rate.Limit(per.RefillRate))
	b.lim.SetBurstAt(at, per.Capacity)
	b.limits = limits
	b.n.Store(int64(n))
}

// perInstance is one instance's share of a client's limits when n
// instances share its traffic: the capacity divided by n, rounded down
// but at least 1 token, and the refill rate divided by n. With a load
// balancer spreading a client's requests evenly, the instances together
// allow the limits (a little more when the capacity is smaller than n,
// since no instance gets less than one token). n below 1 counts as 1.
func perInstance(l Limits, n int) Limits {
	if n <= 1 {
		return l
	}
	if l.Capacity > 0 {
		l.Capacity = max(1, l.Capacity/n)
	}
	l.RefillRate /= float64(n)
	return l
}
