package apiclients_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lexview/lexview/appview/internal/service/apiclients"
)

// liveCount is a settable instance count, as the instance registry would
// report it.
type liveCount struct{ n atomic.Int64 }

func (c *liveCount) get() int  { return int(c.n.Load()) }
func (c *liveCount) set(n int) { c.n.Store(int64(n)) }

// TestBucketsDividedByInstances: with n live instances each bucket holds
// 1/n of the client's capacity and refills at 1/n of its rate.
func TestBucketsDividedByInstances(t *testing.T) {
	f := newFixture(t, apiclients.Limits{Capacity: 10, RefillRate: 1})
	live := &liveCount{}
	live.set(2)
	f.reg.SetInstances(live.get)
	def := f.create(t, nil, nil, "")
	own := f.create(t, ptr(9), ptr(3.0), "")
	if got := f.calls(t, def.Key, 20); got != 5 {
		t.Fatalf("defaults at 2 instances allowed %d, want 5", got)
	}
	if got := f.calls(t, own.Key, 20); got != 4 {
		t.Fatalf("capacity 9 at 2 instances allowed %d, want 4 (rounded down)", got)
	}
	c, _ := f.identify(t, def.Key)
	if ok, wait := f.reg.Allow(c); ok || wait != 2*time.Second {
		t.Fatalf("empty bucket at 0.5 tokens/s: %v %v, want a 2s wait", ok, wait)
	}
	f.clk.advance(2 * time.Second)
	if got := f.calls(t, def.Key, 5); got != 1 {
		t.Fatalf("2 s at 0.5 tokens/s allowed %d", got)
	}
	// own was emptied 2 s ago: 3 tokens at 1.5 tokens/s, then 4 (its
	// capacity) a second later.
	if got := f.calls(t, own.Key, 5); got != 3 {
		t.Fatalf("2 s at 1.5 tokens/s allowed %d", got)
	}
	f.clk.advance(time.Hour)
	if got := f.calls(t, own.Key, 9); got != 4 {
		t.Fatalf("a full bucket of capacity 9 at 2 instances allowed %d", got)
	}
}

// TestBucketsFollowInstanceCount: a bucket is re-sized on the first
// request after the count changes, keeping its level: a smaller share
// caps it at once, a larger one fills at the faster rate.
func TestBucketsFollowInstanceCount(t *testing.T) {
	f := newFixture(t, apiclients.Limits{Capacity: 12, RefillRate: 1.2})
	live := &liveCount{}
	live.set(1)
	f.reg.SetInstances(live.get)
	c := f.create(t, nil, nil, "")
	if got := f.calls(t, c.Key, 4); got != 4 {
		t.Fatalf("allowed %d of 4", got)
	}
	// 8 left; a third instance joins: capacity 4.
	live.set(3)
	if got := f.calls(t, c.Key, 10); got != 4 {
		t.Fatalf("after going to 3 instances allowed %d, want the capacity of 4", got)
	}
	f.clk.advance(5 * time.Second) // 0.4 tokens/s
	if got := f.calls(t, c.Key, 10); got != 2 {
		t.Fatalf("5 s at 0.4 tokens/s allowed %d", got)
	}
	// Back to one: the empty bucket is not refilled, but fills at 1.2/s
	// up to 12.
	live.set(1)
	if got := f.calls(t, c.Key, 10); got != 0 {
		t.Fatalf("fewer instances refilled the bucket (%d allowed)", got)
	}
	f.clk.advance(5 * time.Second)
	if got := f.calls(t, c.Key, 10); got != 6 {
		t.Fatalf("5 s at 1.2 tokens/s allowed %d", got)
	}
	f.clk.advance(time.Hour)
	if got := f.calls(t, c.Key, 20); got != 12 {
		t.Fatalf("full bucket at 1 instance allowed %d", got)
	}
}

// TestBucketShareAtLeastOneToken: more instances than tokens still leave
// each instance one; a count below 1 counts as 1; nil goes back to 1.
func TestBucketShareAtLeastOneToken(t *testing.T) {
	f := newFixture(t, apiclients.Limits{Capacity: 100, RefillRate: 1})
	live := &liveCount{}
	live.set(5)
	f.reg.SetInstances(live.get)
	c := f.create(t, ptr(3), ptr(0.001), "")
	if got := f.calls(t, c.Key, 5); got != 1 {
		t.Fatalf("capacity 3 at 5 instances allowed %d, want 1", got)
	}
	f.clk.advance(time.Hour) // 0.72 tokens at 0.0002 tokens/s
	if got := f.calls(t, c.Key, 5); got != 0 {
		t.Fatalf("an hour at 0.0002 tokens/s allowed %d", got)
	}

	d := f.create(t, ptr(4), ptr(0.001), "")
	live.set(0)
	if got := f.calls(t, d.Key, 10); got != 4 {
		t.Fatalf("an instance count of 0 allowed %d, want the whole capacity", got)
	}
	e := f.create(t, ptr(4), ptr(0.001), "")
	live.set(4)
	f.reg.SetInstances(nil)
	if got := f.calls(t, e.Key, 10); got != 4 {
		t.Fatalf("without a count allowed %d, want the whole capacity", got)
	}
}

// TestEditAppliesPerInstanceShare: a limit edited while several
// instances run is divided too.
func TestEditAppliesPerInstanceShare(t *testing.T) {
	f := newFixture(t, apiclients.Limits{Capacity: 100, RefillRate: 1})
	live := &liveCount{}
	live.set(2)
	f.reg.SetInstances(live.get)
	c := f.create(t, ptr(40), ptr(0.001), "")
	if got := f.calls(t, c.Key, 30); got != 20 {
		t.Fatalf("allowed %d, want 20", got)
	}
	c.RateLimitCapacity, c.RateLimitRefillRate = ptr(10), ptr(4.0)
	if _, err := f.mgr.Update(t.Context(), "", c.ID, apiclients.FullPatch(c)); err != nil {
		t.Fatal(err)
	}
	f.clk.advance(time.Hour)
	if got := f.calls(t, c.Key, 30); got != 5 {
		t.Fatalf("after the edit allowed %d, want 5", got)
	}
	f.clk.advance(time.Second)
	if got := f.calls(t, c.Key, 30); got != 2 {
		t.Fatalf("1 s at 2 tokens/s allowed %d", got)
	}
}

// TestResizeUnderConcurrentRequests: re-sizing while requests run never
// hands out tokens: with the clock standing still, no more than the
// capacity is allowed however the count moves.
func TestResizeUnderConcurrentRequests(t *testing.T) {
	f := newFixture(t, apiclients.Limits{Capacity: 60, RefillRate: 1})
	live := &liveCount{}
	live.set(1)
	f.reg.SetInstances(live.get)
	c := f.create(t, nil, nil, "")
	cl, err := f.identify(t, c.Key)
	if err != nil {
		t.Fatal(err)
	}
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 500 {
				if ok, _ := f.reg.Allow(cl); ok {
					allowed.Add(1)
				}
			}
		})
	}
	wg.Go(func() {
		for i := range 200 {
			live.set(1 + i%3)
		}
	})
	wg.Wait()
	if n := allowed.Load(); n < 1 || n > 60 {
		t.Fatalf("allowed %d with the clock standing still, want 1 to 60", n)
	}
}
