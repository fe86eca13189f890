package storagetest

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lexview/lexview/storage"
)

// proofHash is a DPoP replay hash for a test proof name.
func proofHash(name string) []byte {
	h := sha256.Sum256([]byte(name))
	return h[:]
}

// testDPoPReplays: a proof is new once, a replay until it expires, new
// again after; purging forgets only the expired ones.
func testDPoPReplays(t *testing.T, s storage.Store) {
	ctx := context.Background()
	remember := func(name string, expires, now time.Time) bool {
		t.Helper()
		fresh, err := s.RememberDPoPProof(ctx, proofHash(name), expires, now)
		if err != nil {
			t.Fatalf("remember %s: %v", name, err)
		}
		return fresh
	}
	exp := base.Add(5*time.Minute + 30*time.Second)
	if !remember("a", exp, base) {
		t.Fatal("a first proof was reported as a replay")
	}
	if remember("a", exp, base.Add(time.Second)) {
		t.Fatal("a replayed proof was reported as new")
	}
	if !remember("b", exp.Add(time.Minute), base) {
		t.Fatal("another proof was reported as a replay")
	}
	// One microsecond before expiry it is still a replay; at expiry the
	// record is replaced (as if swept) and counts from the new expiry.
	if remember("a", exp.Add(time.Minute), exp.Add(-time.Microsecond)) {
		t.Fatal("a replay just before expiry was reported as new")
	}
	if !remember("a", exp.Add(10*time.Minute), exp) {
		t.Fatal("a proof whose record expired was reported as a replay")
	}
	if remember("a", exp.Add(10*time.Minute), exp.Add(time.Minute)) {
		t.Fatal("the replaced record does not count from its new expiry")
	}
	if _, err := s.RememberDPoPProof(ctx, nil, exp, base); err == nil {
		t.Fatal("an empty hash was accepted")
	}

	// Purging before b's expiry forgets nothing but expired records.
	if !remember("c", base.Add(time.Minute), base) {
		t.Fatal("c reported as a replay")
	}
	n, err := s.PurgeDPoPProofs(ctx, base.Add(2*time.Minute))
	if err != nil || n != 1 {
		t.Fatalf("purge: %d, %v; want 1 (c)", n, err)
	}
	if remember("b", exp.Add(time.Minute), base.Add(3*time.Minute)) {
		t.Fatal("purge forgot b, which had not expired")
	}
	n, err = s.PurgeDPoPProofs(ctx, exp.Add(time.Hour))
	if err != nil || n != 2 {
		t.Fatalf("purge of everything: %d, %v; want 2 (a and b)", n, err)
	}
	if !remember("b", exp.Add(2*time.Hour), exp.Add(time.Hour)) {
		t.Fatal("b is still known after the purge")
	}
}

// testDPoPReplayRace: of concurrent calls with one hash, exactly one
// reports the proof as new.
func testDPoPReplayRace(t *testing.T, s storage.Store) {
	ctx := context.Background()
	exp := base.Add(5 * time.Minute)
	for round := range 5 {
		hash := proofHash(fmt.Sprint("race-", round))
		var fresh atomic.Int32
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				ok, err := s.RememberDPoPProof(ctx, hash, exp, base)
				if err != nil {
					t.Error(err)
				}
				if ok {
					fresh.Add(1)
				}
			})
		}
		wg.Wait()
		if n := fresh.Load(); n != 1 {
			t.Fatalf("round %d: %d concurrent calls reported the proof as new, want 1", round, n)
		}
	}
}
