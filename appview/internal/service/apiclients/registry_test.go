package apiclients_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// clock is a settable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// hookStore is the real store, running a hook after each client read (to
// make an edit land between a registry's read and its caching).
type hookStore struct {
	apiclients.Store
	after func()
}

func (s *hookStore) GetAPIClientByKey(ctx context.Context, key string) (storage.APIClient, error) {
	c, err := s.Store.GetAPIClientByKey(ctx, key)
	if s.after != nil {
		s.after()
	}
	return c, err
}

type fixture struct {
	store storage.Store
	hooks *hookStore
	clk   *clock
	reg   *apiclients.Registry
	mgr   *apiclients.Manager
}

func newFixture(t testing.TB, defaults apiclients.Limits) *fixture {
	store := storagetest.SQLite(t)
	f := &fixture{store: store, hooks: &hookStore{Store: store}, clk: &clock{t: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}}
	f.reg = apiclients.NewRegistry(apiclients.RegistryOptions{Store: f.hooks, Defaults: defaults, Now: f.clk.now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	f.mgr = apiclients.NewManager(apiclients.ManagerOptions{Store: store, Registry: f.reg, Now: f.clk.now})
	return f
}

func (f *fixture) create(t testing.TB, capacity *int, refill *float64, parent string) storage.APIClient {
	t.Helper()
	c, _, err := f.mgr.Create(context.Background(), apiclients.NewClient{
		Name: "app", ClientIDURL: "https://app.test/" + storage.NewID() + ".json", ClientURI: "https://app.test",
		RedirectURIs: []string{"https://app.test/cb"}, CreatedBy: "did:plc:admin", ParentID: parent,
		RateLimitCapacity: capacity, RateLimitRefillRate: refill,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (f *fixture) identify(t testing.TB, key string) (*apiclients.Client, error) {
	t.Helper()
	return f.reg.Identify(context.Background(), apiclients.Credentials{Key: key})
}

// calls counts how many of n calls the client's bucket allows.
func (f *fixture) calls(t testing.TB, key string, n int) int {
	t.Helper()
	allowed := 0
	for range n {
		c, err := f.identify(t, key)
		if err != nil {
			t.Fatalf("identify: %v", err)
		}
		if ok, _ := f.reg.Allow(c); ok {
			allowed++
		}
	}
	return allowed
}

func ptr[T any](v T) *T { return &v }

func TestLimitsAndRetryAfter(t *testing.T) {
	f := newFixture(t, apiclients.Limits{Capacity: 3, RefillRate: 0.5})
	own := f.create(t, ptr(2), ptr(0.25), "")
	def := f.create(t, nil, nil, "")
	if got := f.calls(t, own.Key, 5); got != 2 {
		t.Fatalf("own limits allowed %d of 5", got)
	}
	if got := f.calls(t, def.Key, 5); got != 3 {
		t.Fatalf("defaults allowed %d of 5", got)
	}
	c, _ := f.identify(t, def.Key)
	if ok, wait := f.reg.Allow(c); ok || wait != 2*time.Second {
		t.Fatalf("empty bucket: %v %v, want a 2s wait", ok, wait)
	}
	f.clk.advance(1500 * time.Millisecond)
	if ok, wait := f.reg.Allow(c); ok || wait != 500*time.Millisecond {
		t.Fatalf("after 1.5s: %v %v", ok, wait)
	}
	f.clk.advance(500 * time.Millisecond)
	if ok, _ := f.reg.Allow(c); !ok {
		t.Fatal("a token should have refilled")
	}
	if ok, _ := f.reg.Allow(&apiclients.Client{Key: "unlimited"}); !ok {
		t.Fatal("a client without a bucket is not limited")
	}
}

// TestSetDefaults: new defaults apply at once to the clients that set no
// limits of their own (child clients included), keeping their level, and
// to buckets made later; a client's own limits stay.
func TestSetDefaults(t *testing.T) {
	f := newFixture(t, apiclients.Limits{Capacity: 4, RefillRate: 0.001})
	own := f.create(t, ptr(2), ptr(0.001), "")
	def := f.create(t, nil, nil, "")
	child := f.create(t, nil, nil, def.ID)
	if got := f.calls(t, def.Key, 1); got != 1 {
		t.Fatalf("defaults allowed %d of 1", got)
	}
	f.reg.SetDefaults(apiclients.Limits{Capacity: 2, RefillRate: 1})
	// 3 tokens left, capped at the new capacity.
	if got := f.calls(t, def.Key, 5); got != 2 {
		t.Fatalf("after lowering the default capacity allowed %d, want 2", got)
	}
	// The new refill rate counts from the change.
	f.clk.advance(time.Second)
	if got := f.calls(t, def.Key, 5); got != 1 {
		t.Fatalf("after 1s at the new default rate allowed %d, want 1", got)
	}
	// A bucket made after the change has the new defaults; a client's own
	// limits are its own.
	if got := f.calls(t, child.Key, 5); got != 2 {
		t.Fatalf("a child client allowed %d of 5, want the new default 2", got)
	}
	if got := f.calls(t, own.Key, 5); got != 2 {
		t.Fatalf("a client with its own limits allowed %d of 5", got)
	}
	f.reg.SetDefaults(apiclients.Limits{Capacity: 100, RefillRate: 0.001})
	if got := f.calls(t, own.Key, 1); got != 0 {
		t.Fatalf("new defaults refilled a client with its own limits: %d", got)
	}
}

func TestInvalidateKeepsLevelAppliesLimits(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, apiclients.Limits{Capacity: 100, RefillRate: 1})
	c := f.create(t, ptr(5), ptr(0.001), "")
	if got := f.calls(t, c.Key, 3); got != 3 {
		t.Fatalf("allowed %d of 3", got)
	}
	// update saves c; the next identification applies it.
	update := func() {
		t.Helper()
		if _, err := f.mgr.Update(ctx, "", c.ID, apiclients.FullPatch(c)); err != nil {
			t.Fatal(err)
		}
		if _, err := f.identify(t, c.Key); err != nil {
			t.Fatal(err)
		}
	}
	// A larger capacity does not refill the bucket: 2 tokens remain.
	c.RateLimitCapacity = ptr(10)
	update()
	if got := f.calls(t, c.Key, 5); got != 2 {
		t.Fatalf("after raising the capacity allowed %d, want the 2 left", got)
	}
	// A faster refill applies at once.
	c.RateLimitRefillRate = ptr(2.0)
	update()
	f.clk.advance(time.Second)
	if got := f.calls(t, c.Key, 5); got != 2 {
		t.Fatalf("after 1s at 2/s allowed %d", got)
	}
	// A smaller capacity caps the level at once.
	f.clk.advance(time.Hour)
	c.RateLimitCapacity = ptr(3)
	update()
	if got := f.calls(t, c.Key, 10); got != 3 {
		t.Fatalf("after lowering the capacity allowed %d", got)
	}
	// Clearing the limits brings the defaults.
	c.RateLimitCapacity, c.RateLimitRefillRate = nil, nil
	update()
	f.clk.advance(time.Hour)
	if got := f.calls(t, c.Key, 200); got != 100 {
		t.Fatalf("defaults allowed %d", got)
	}
}

func TestDeactivationKeepsBucket(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, apiclients.Limits{Capacity: 100, RefillRate: 1})
	parent := f.create(t, ptr(2), ptr(0.001), "")
	child := f.create(t, nil, nil, parent.ID)
	if f.calls(t, parent.Key, 2) != 2 || f.calls(t, child.Key, 1) != 1 {
		t.Fatal("fresh clients refused")
	}
	parent.IsActive = false
	if _, err := f.mgr.Update(ctx, "", parent.ID, apiclients.FullPatch(parent)); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{parent.Key, child.Key} {
		if _, err := f.identify(t, k); !errors.Is(err, apiclients.ErrInvalidClient) {
			t.Fatalf("%s after deactivation: %v", k, err)
		}
	}
	// Re-enabling does not hand out a fresh bucket.
	parent.IsActive = true
	if _, err := f.mgr.Update(ctx, "", parent.ID, apiclients.FullPatch(parent)); err != nil {
		t.Fatal(err)
	}
	if got := f.calls(t, parent.Key, 1); got != 0 {
		t.Fatalf("reactivated client got a full bucket (%d allowed)", got)
	}
	if _, err := f.identify(t, child.Key); !errors.Is(err, apiclients.ErrInvalidClient) {
		t.Fatalf("child reactivated with its parent: %v", err)
	}
}

func TestForgetFreesBucket(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, apiclients.Limits{Capacity: 100, RefillRate: 1})
	c := f.create(t, ptr(2), ptr(0.001), "")
	child := f.create(t, nil, nil, c.ID)
	if got := f.calls(t, c.Key, 3); got != 2 {
		t.Fatalf("allowed %d", got)
	}
	f.reg.Forget(c.Key)
	if got := f.calls(t, c.Key, 3); got != 2 {
		t.Fatalf("after Forget allowed %d, want a new bucket", got)
	}
	f.calls(t, child.Key, 1)
	if _, err := f.mgr.Delete(ctx, "", c.ID); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{c.Key, child.Key} {
		if _, err := f.identify(t, k); !errors.Is(err, apiclients.ErrInvalidClient) {
			t.Fatalf("%s after delete: %v", k, err)
		}
	}
}

func TestNegativeCacheExpires(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, apiclients.Limits{Capacity: 100, RefillRate: 1})
	const key = apiclients.KeyPrefix + "arrives-later"
	if _, err := f.identify(t, key); !errors.Is(err, apiclients.ErrInvalidClient) {
		t.Fatalf("unknown key: %v", err)
	}
	now := f.clk.now()
	err := f.store.CreateAPIClient(ctx, storage.APIClient{
		ID: storage.NewID(), Key: key, SecretHash: apiclients.HashSecret("s"), Name: "late", ClientIDURL: "https://late.test/m.json",
		ClientURI: "https://late.test", RedirectURIs: []string{"https://late.test/cb"}, Scopes: "atproto",
		Type: storage.ClientConfidential, AllowedOrigins: []string{}, IsActive: true, CreatedBy: "did:plc:x", CreatedAt: now, UpdatedAt: now,
	})
	if err != nil {
		t.Fatal(err)
	}
	f.clk.advance(5 * time.Second)
	if _, err := f.identify(t, key); !errors.Is(err, apiclients.ErrInvalidClient) {
		t.Fatalf("within the negative TTL: %v", err)
	}
	f.clk.advance(6 * time.Second)
	if c, err := f.identify(t, key); err != nil || c.Key != key {
		t.Fatalf("after the negative TTL: %v %v", c, err)
	}
}

// TestEditDuringLoad makes an edit land between the registry's read of a
// client and its caching of what it read: the stale read may serve the
// request in flight, never the next.
func TestEditDuringLoad(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, apiclients.Limits{Capacity: 100, RefillRate: 1})
	c := f.create(t, nil, nil, "")
	f.hooks.after = func() {
		f.hooks.after = nil
		c.IsActive = false
		if _, err := f.mgr.Update(ctx, "", c.ID, apiclients.FullPatch(c)); err != nil {
			t.Error(err)
		}
	}
	if _, err := f.identify(t, c.Key); err != nil {
		t.Fatalf("in flight: %v", err)
	}
	if _, err := f.identify(t, c.Key); !errors.Is(err, apiclients.ErrInvalidClient) {
		t.Fatalf("deactivated client still served from the cache: %v", err)
	}

	d := f.create(t, nil, nil, "")
	f.hooks.after = func() {
		f.hooks.after = nil
		if _, err := f.mgr.Delete(ctx, "", d.ID); err != nil {
			t.Error(err)
		}
	}
	if _, err := f.identify(t, d.Key); err != nil {
		t.Fatalf("in flight: %v", err)
	}
	if _, err := f.identify(t, d.Key); !errors.Is(err, apiclients.ErrInvalidClient) {
		t.Fatalf("deleted client still served from the cache: %v", err)
	}
}

// BenchmarkIdentifyAndAllow is the per-request cost of client
// identification and the rate-limit check for a cached client.
func BenchmarkIdentifyAndAllow(b *testing.B) {
	store := storagetest.SQLite(b)
	reg := apiclients.NewRegistry(apiclients.RegistryOptions{Store: store, Defaults: apiclients.Limits{Capacity: 100, RefillRate: 2}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	mgr := apiclients.NewManager(apiclients.ManagerOptions{Store: store, Registry: reg})
	c, _, err := mgr.Create(context.Background(), apiclients.NewClient{
		Name: "bench", ClientIDURL: "https://bench.test/m.json", ClientURI: "https://bench.test",
		RedirectURIs: []string{"https://bench.test/cb"}, CreatedBy: "did:plc:bench",
		RateLimitCapacity: ptr(1 << 30), RateLimitRefillRate: ptr(1e9),
	})
	if err != nil {
		b.Fatal(err)
	}
	cred := apiclients.Credentials{Key: c.Key}
	ctx := context.Background()
	if _, err := reg.Identify(ctx, cred); err != nil { // warm the cache
		b.Fatal(err)
	}
	step := func(b *testing.B) {
		cl, err := reg.Identify(ctx, cred)
		if err != nil {
			b.Error(err)
			return
		}
		if ok, _ := reg.Allow(cl); !ok {
			b.Error("rate limited")
		}
	}
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			step(b)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				step(b)
			}
		})
	})
}
