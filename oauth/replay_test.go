package oauth

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestReplayCacheExpiry(t *testing.T) {
	c := NewReplayCache(100)
	exp := testNow.Add(time.Minute)
	if !c.Add("k", "j1", exp, testNow) {
		t.Fatal("first add refused")
	}
	if c.Add("k", "j1", exp, testNow.Add(59*time.Second)) {
		t.Fatal("replay accepted before expiry")
	}
	if !c.Add("k2", "j1", exp, testNow) {
		t.Fatal("same jti under another key refused")
	}
	// At expiry the entry is forgotten and the pair may be recorded again.
	if !c.Add("k", "j1", testNow.Add(3*time.Minute), exp) {
		t.Fatal("expired entry still blocks")
	}
	if c.Add("k", "j1", testNow.Add(3*time.Minute), exp.Add(time.Minute)) {
		t.Fatal("re-recorded entry lost")
	}
	// Expired entries are dropped as time moves on.
	for i := range 50 {
		c.Add("k", strconv.Itoa(i), testNow.Add(time.Second), testNow)
	}
	c.Add("k", "late", testNow.Add(time.Hour), testNow.Add(10*time.Minute))
	if n := c.Len(); n > replayShards+2 {
		t.Fatalf("%d entries kept after expiry", n)
	}
}

func TestReplayCacheCapacity(t *testing.T) {
	const capacity = 4 * replayShards
	c := NewReplayCache(capacity)
	exp := testNow.Add(time.Hour)
	for i := range 100 * capacity {
		if !c.Add("k", strconv.Itoa(i), exp, testNow) {
			t.Fatalf("fresh jti %d refused", i)
		}
	}
	if n := c.Len(); n > capacity {
		t.Fatalf("cache holds %d entries, capacity %d", n, capacity)
	}
	// The newest entries survive eviction of the oldest.
	if c.Add("k", strconv.Itoa(100*capacity-1), exp, testNow) {
		t.Fatal("newest entry was evicted")
	}
}

func TestReplayCacheConcurrent(t *testing.T) {
	c := NewReplayCache(0)
	var accepted atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				// every goroutine tries the same 2000 jtis: each must pass once
				if c.Add("k", strconv.Itoa(i), testNow.Add(time.Minute), testNow) {
					accepted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if accepted.Load() != 2000 {
		t.Fatalf("accepted %d, want 2000", accepted.Load())
	}
}
