package oauthclient

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// TestSessionLocks: users of one key take turns, other keys run beside
// them, a waiter gives up when its context ends without keeping the lock,
// and no entry is left behind.
func TestSessionLocks(t *testing.T) {
	var l sessionLocks
	var inside, most atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			unlock, err := l.lock(context.Background(), "a")
			if err != nil {
				t.Error(err)
				return
			}
			n := inside.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(time.Millisecond)
			inside.Add(-1)
			unlock()
		})
	}
	wg.Wait()
	if most.Load() != 1 {
		t.Fatalf("%d users of one session at once", most.Load())
	}

	unlockA, err := l.lock(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	unlockB, err := l.lock(context.Background(), "b") // another session: not held up
	if err != nil {
		t.Fatal(err)
	}
	unlockB()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := l.lock(ctx, "a"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a waiter past its deadline: %v", err)
	}
	unlockA()
	// The abandoned waiter's turn is handed back: the lock is free again.
	unlock, err := l.lock(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		l.mu.Lock()
		n := len(l.locks)
		l.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d lock entries left", n)
		}
	}
}

// TestSessionHeldAcrossInstances: two clients on one database (two
// instances) take turns with a session through its lease, a waiter gives
// up when its context ends, and each release frees the lease at once.
func TestSessionHeldAcrossInstances(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		store := open(t)
		a := New(Options{Leases: store, Holder: "instance-a"})
		b := New(Options{Leases: store, Holder: "instance-b"})
		var inside, most atomic.Int32
		var wg sync.WaitGroup
		for i := range 12 {
			c := a
			if i%2 == 1 {
				c = b
			}
			wg.Go(func() {
				release, err := c.hold(context.Background(), "did:plc:alice s1")
				if err != nil {
					t.Error(err)
					return
				}
				n := inside.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				time.Sleep(2 * time.Millisecond)
				inside.Add(-1)
				release()
			})
		}
		wg.Wait()
		if most.Load() != 1 {
			t.Fatalf("%d users of one session at once across two instances", most.Load())
		}

		release, err := a.hold(context.Background(), "did:plc:alice s1")
		if err != nil {
			t.Fatal(err)
		}
		other, err := b.hold(context.Background(), "did:plc:alice s2") // another session
		if err != nil {
			t.Fatal(err)
		}
		other()
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		if _, err := b.hold(ctx, "did:plc:alice s1"); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a waiter on another instance past its deadline: %v", err)
		}
		release()
		info, err := store.GetLease(context.Background(), "oauth-session:did:plc:alice s1")
		if err != nil || info.Holder != "" {
			t.Fatalf("lease after the release: %+v %v", info, err)
		}
		release, err = b.hold(context.Background(), "did:plc:alice s1")
		if err != nil {
			t.Fatal(err)
		}
		release()
	})
}
