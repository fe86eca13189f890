package oauth

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/postgres"
	"github.com/lexview/lexview/storage/sqlite"
	"github.com/lexview/lexview/storage/storagetest"
)

// twoStores opens two stores on one new database of the backend, as two
// processes would: each with its own connections.
func twoStores(t testing.TB, backend string) (storage.Store, storage.Store) {
	t.Helper()
	ctx := context.Background()
	var open func() (storage.Store, error)
	switch backend {
	case "sqlite":
		path := filepath.Join(t.TempDir(), "shared.db")
		open = func() (storage.Store, error) { return sqlite.Open(ctx, path, sqlite.Options{}) }
	default:
		url := storagetest.PostgresURL(t)
		open = func() (storage.Store, error) { return postgres.Open(ctx, url, postgres.Options{MaxConns: 8}) }
	}
	var stores [2]storage.Store
	for i := range stores {
		s, err := open()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		if err := s.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		stores[i] = s
	}
	return stores[0], stores[1]
}

// TestSharedReplayAcrossVerifiers: two verifiers, each with its own
// in-process cache and its own connections to one database (two
// instances), refuse each other's proofs.
func TestSharedReplayAcrossVerifiers(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			sa, sb := twoStores(t, backend)
			a := NewVerifier(VerifierOptions{Now: fixedClock(testNow), Shared: sa})
			b := NewVerifier(VerifierOptions{Now: fixedClock(testNow), Shared: sb})
			s := mustSigner(t, mustKey(t), testNow)
			ctx := context.Background()

			proof := mustProof(t, s, "POST", testURL, "tok", "")
			if _, err := a.Verify(ctx, proof, "POST", testURL, "tok"); err != nil {
				t.Fatalf("A, first use: %v", err)
			}
			if _, err := b.Verify(ctx, proof, "POST", testURL, "tok"); !errors.Is(err, ErrReplay) {
				t.Fatalf("B accepted a proof A had accepted: %v", err)
			}
			other := mustProof(t, s, "POST", testURL, "tok", "")
			if _, err := b.Verify(ctx, other, "POST", testURL, "tok"); err != nil {
				t.Fatalf("B, a new proof: %v", err)
			}
			if _, err := a.Verify(ctx, other, "POST", testURL, "tok"); !errors.Is(err, ErrReplay) {
				t.Fatalf("A accepted a proof B had accepted: %v", err)
			}

			// The same proof sent to both at once is accepted once.
			for round := range 10 {
				proof := mustProof(t, s, "POST", testURL, "tok", "")
				var accepted atomic.Int32
				var wg sync.WaitGroup
				for i := range 6 {
					v := a
					if i%2 == 1 {
						v = b
					}
					wg.Go(func() {
						_, err := v.Verify(ctx, proof, "POST", testURL, "tok")
						switch {
						case err == nil:
							accepted.Add(1)
						case !errors.Is(err, ErrReplay):
							t.Error(err)
						}
					})
				}
				wg.Wait()
				if n := accepted.Load(); n != 1 {
					t.Fatalf("round %d: a proof sent six times to two instances was accepted %d times", round, n)
				}
			}
		})
	}
}

// countingStore counts the calls that reach it and fails when told to.
type countingStore struct {
	calls atomic.Int32
	err   error
	seen  sync.Map
}

func (s *countingStore) RememberDPoPProof(_ context.Context, hash []byte, _, _ time.Time) (bool, error) {
	s.calls.Add(1)
	if s.err != nil {
		return false, s.err
	}
	_, loaded := s.seen.LoadOrStore(string(hash), true)
	return !loaded, nil
}

func TestSharedReplayConsultedAfterLocalCache(t *testing.T) {
	store := &countingStore{}
	v := NewVerifier(VerifierOptions{Now: fixedClock(testNow), Shared: store})
	s := mustSigner(t, mustKey(t), testNow)
	ctx := context.Background()
	proof := mustProof(t, s, "POST", testURL, "tok", "")
	// A proof refused on its own merits never reaches the store.
	if _, err := v.Verify(ctx, proof, "POST", testURL+"x", "tok"); !errors.Is(err, ErrWrongURL) {
		t.Fatal(err)
	}
	if n := store.calls.Load(); n != 0 {
		t.Fatalf("an invalid proof reached the shared store (%d calls)", n)
	}
	if _, err := v.Verify(ctx, proof, "POST", testURL, "tok"); err != nil {
		t.Fatal(err)
	}
	// A local hit refuses without a round trip.
	if _, err := v.Verify(ctx, proof, "POST", testURL, "tok"); !errors.Is(err, ErrReplay) {
		t.Fatalf("replay: %v", err)
	}
	if n := store.calls.Load(); n != 1 {
		t.Fatalf("the shared store was called %d times, want 1", n)
	}
}

func TestSharedReplayFailsClosed(t *testing.T) {
	down := errors.New("database unreachable")
	store := &countingStore{err: down}
	v := NewVerifier(VerifierOptions{Now: fixedClock(testNow), Shared: store})
	s := mustSigner(t, mustKey(t), testNow)
	proof := mustProof(t, s, "POST", testURL, "tok", "")
	_, err := v.Verify(context.Background(), proof, "POST", testURL, "tok")
	if !errors.Is(err, down) {
		t.Fatalf("a store failure gave %v, want it passed on", err)
	}
	if errors.Is(err, ErrInvalidProof) {
		t.Fatalf("a store failure reads as an invalid proof (a 401, not a server error): %v", err)
	}
}

func TestReplayHash(t *testing.T) {
	h := ReplayHash("jkt", "jti")
	if len(h) != 32 || string(h) != string(ReplayHash("jkt", "jti")) {
		t.Fatalf("hash %x is not a stable SHA-256", h)
	}
	// The separator keeps (jkt, jti) pairs apart.
	if string(ReplayHash("ab", "c")) == string(ReplayHash("a", "bc")) {
		t.Fatal("two pairs share a hash")
	}
}

// BenchmarkVerifySharedReplay is Verify of a new proof (unique jti) with
// the in-process cache only, and with the shared check on SQLite and on
// PostgreSQL: the difference is the added latency of the shared check.
func BenchmarkVerifySharedReplay(b *testing.B) {
	s := mustSigner(b, mustKey(b), testNow)
	ctx := context.Background()
	run := func(b *testing.B, shared ReplayStore) {
		v := NewVerifier(VerifierOptions{Now: fixedClock(testNow), Shared: shared})
		proofs := make([]string, b.N)
		for i := range proofs {
			proofs[i] = mustProof(b, s, "POST", testURL, "access-token", "")
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			if _, err := v.Verify(ctx, proofs[i], "POST", testURL, "access-token"); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("memory", func(b *testing.B) { run(b, nil) })
	b.Run("sqlite", func(b *testing.B) { run(b, storagetest.SQLite(b)) })
	b.Run("postgres", func(b *testing.B) { run(b, storagetest.Postgres(b)) })
}

// BenchmarkRememberProof is the shared check alone: one insert-if-absent
// statement per proof, serially and from 8 goroutines per core.
func BenchmarkRememberProof(b *testing.B) {
	ctx := context.Background()
	exp := testNow.Add(ProofWindow + replayMargin)
	for _, be := range storagetest.Backends() {
		b.Run(be.Name, func(b *testing.B) {
			store := be.Open(b)
			var seq atomic.Int64
			b.Run("serial", func(b *testing.B) {
				for b.Loop() {
					if _, err := store.RememberDPoPProof(ctx, ReplayHash("jkt", strconv.FormatInt(seq.Add(1), 10)), exp, testNow); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("parallel", func(b *testing.B) {
				b.SetParallelism(8)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if _, err := store.RememberDPoPProof(ctx, ReplayHash("jkt", strconv.FormatInt(seq.Add(1), 10)), exp, testNow); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		})
	}
}
