package apiclients

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"log/slog"
	"math"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lexview/lexview/storage"
)

// Store is what the registry reads.
type Store interface {
	GetAPIClientByKey(ctx context.Context, key string) (storage.APIClient, error)
}

// Limits are token-bucket settings.
type Limits struct {
	Capacity   int     // bucket size
	RefillRate float64 // tokens per second
}

// negativeTTL is how long an unknown key is remembered as unknown.
const negativeTTL = 10 * time.Second

// maxEntries bounds the cache; unknown keys are dropped first.
const maxEntries = 100_000

// Registry identifies API clients from the store, caches them, and keeps
// one rate-limit bucket per client key. Its buckets are this instance's: when several instances share
// the traffic, SetInstances divides each client's limits among them.
type Registry struct {
	store Store
	now   func() time.Time
	log   *slog.Logger
	// instances reports the number of live instances; nil means 1.
	instances atomic.Pointer[func() int]

	mu       sync.RWMutex
	defaults Limits // the limits of a client that sets none; under mu
	entries  map[string]*entry
	// gen counts Invalidate and Forget calls, so that a load racing with
	// one of them does not cache what it read as fresh.
	gen uint64
}

type entry struct {
	client    *Client // nil when the key is unknown or inactive
	row       storage.APIClient
	bucket    *bucket
	stale     bool
	editedAt  time.Time // when Invalidate marked it stale
	checkedAt time.Time
}

// RegistryOptions configures NewRegistry.
type RegistryOptions struct {
	// Store holds the API clients.
	Store Store
	// Defaults are the bucket limits of the clients without their own.
	Defaults Limits
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Logger receives the registry's warnings; slog.Default() when nil.
	Logger *slog.Logger
}

// NewRegistry returns a registry over opts.Store with default bucket limits.
func NewRegistry(opts RegistryOptions) *Registry {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Registry{store: opts.Store, defaults: opts.Defaults, now: opts.Now, log: opts.Logger, entries: map[string]*entry{}}
}

// SetInstances tells the registry how many instances share the traffic
// (behind a load balancer, on one database): live reports the number of
// live instances, this one included, and is called on every rate-limit
// check, so it must be cheap (an atomic load). Each bucket is then sized
// to 1/n of its client's limits (capacity rounded down, at least 1 token;
// refill rate divided by n), and re-sized on the first request after n
// changes, keeping its level. nil, the default, counts this instance
// alone. It may be called at any time.
func (reg *Registry) SetInstances(live func() int) {
	if live == nil {
		reg.instances.Store(nil)
		return
	}
	reg.instances.Store(&live)
}

// liveInstances is the current instance count, at least 1.
func (reg *Registry) liveInstances() int {
	f := reg.instances.Load()
	if f == nil {
		return 1
	}
	return max(1, (*f)())
}

// Identify returns the client holding cred's key, or ErrInvalidClient
// when the key is unknown or the client inactive; any other error is a
// server failure. Its origin, else its secret, is checked best effort: a
// mismatch is logged, not refused. A known, active client is served from
// memory without allocating.
func (reg *Registry) Identify(ctx context.Context, cred Credentials) (*Client, error) {
	key := cred.Key
	reg.mu.RLock()
	e := reg.entries[key]
	reload := e == nil || e.stale || (e.client == nil && reg.now().Sub(e.checkedAt) > negativeTTL)
	reg.mu.RUnlock()
	if reload {
		var err error
		if e, err = reg.load(ctx, key); err != nil {
			return nil, err
		}
	}
	if e.client == nil {
		return nil, ErrInvalidClient
	}
	reg.checkCredentials(ctx, e, cred)
	return e.client, nil
}

// load reads a key from the store and caches the result, carrying an
// existing bucket's tokens over to the new settings.
func (reg *Registry) load(ctx context.Context, key string) (*entry, error) {
	reg.mu.RLock()
	gen := reg.gen
	reg.mu.RUnlock()
	row, err := reg.store.GetAPIClientByKey(ctx, key)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return nil, err
	}
	fresh := &entry{checkedAt: reg.now()}
	if err == nil && row.IsActive {
		fresh.row = row
		fresh.client = &Client{ID: row.ID, Key: row.Key, Name: row.Name, ParentID: row.ParentID}
	}
	n := reg.liveInstances()
	reg.mu.Lock()
	defer reg.mu.Unlock()
	// Under mu, so that a change of the defaults (SetDefaults) is either
	// in these limits or applied to this bucket after it is stored.
	limits := reg.limitsOf(row)
	// An edit that landed while the row was being read may not be in it:
	// serve this request from it, but read again on the next.
	fresh.stale = reg.gen != gen
	if old := reg.entries[key]; old != nil && old.bucket != nil {
		// The bucket outlives edits and deactivation, keeping its level;
		// new limits count from the edit, not from this first request
		// after it.
		if fresh.client != nil {
			at := reg.now()
			if old.stale && !old.editedAt.IsZero() && old.editedAt.Before(at) {
				at = old.editedAt
			}
			old.bucket.set(at, limits, n)
		}
		fresh.bucket = old.bucket
	} else if fresh.client != nil {
		fresh.bucket = newBucket(limits, n)
	}
	if fresh.client != nil {
		fresh.client.bucket = fresh.bucket
	}
	if len(reg.entries) >= maxEntries {
		for k, e := range reg.entries {
			if e.client == nil {
				delete(reg.entries, k)
			}
		}
	}
	reg.entries[key] = fresh
	return fresh, nil
}

// limitsOf is the limits of row's client: its own, else the defaults;
// reg.mu is held.
func (reg *Registry) limitsOf(row storage.APIClient) Limits {
	l := reg.defaults
	if row.RateLimitCapacity != nil {
		l.Capacity = *row.RateLimitCapacity
	}
	if row.RateLimitRefillRate != nil {
		l.RefillRate = *row.RateLimitRefillRate
	}
	return l
}

// checkCredentials validates the origin, else the secret, best effort: a
// mismatch is logged, not refused.
func (reg *Registry) checkCredentials(ctx context.Context, e *entry, cred Credentials) {
	if origin := cred.Origin; origin != "" {
		if !originAllowed(e.row, origin) {
			reg.log.WarnContext(ctx, "API client origin mismatch", "client_id", e.row.ID, "origin", origin)
		}
		return
	}
	if secret := cred.Secret; secret != "" {
		sum := sha256.Sum256([]byte(secret))
		want, _ := hex.DecodeString(e.row.SecretHash)
		if subtle.ConstantTimeCompare(sum[:], want) != 1 {
			reg.log.WarnContext(ctx, "API client secret mismatch", "client_id", e.row.ID)
		}
	}
}

// originAllowed matches an Origin against the client's home URL and, for
// public clients, its allowed origins.
func originAllowed(c storage.APIClient, origin string) bool {
	if sameOrigin(origin, c.ClientURI) {
		return true
	}
	return slices.ContainsFunc(c.AllowedOrigins, func(o string) bool { return sameOrigin(origin, o) })
}

func sameOrigin(origin, u string) bool {
	pu, err := url.Parse(u)
	if err != nil || pu.Host == "" {
		return false
	}
	return strings.EqualFold(origin, pu.Scheme+"://"+pu.Host)
}

// Allow takes a token from c's bucket, or reports
// how long until one is available. The bucket is first re-sized if the
// number of live instances changed (see SetInstances).
func (reg *Registry) Allow(c *Client) (bool, time.Duration) {
	b := c.bucket
	if b == nil {
		return true, 0
	}
	now := reg.now()
	b.follow(now, reg.liveInstances())
	lim := b.lim
	if lim.AllowN(now, 1) {
		return true, 0
	}
	perSec := float64(lim.Limit())
	if perSec <= 0 {
		return false, time.Hour
	}
	missing := 1 - lim.TokensAt(now)
	return false, time.Duration(math.Ceil(missing/perSec*1e9)) * time.Nanosecond
}

// SetDefaults changes the limits of the clients that set none of their
// own (the instance's defaults, DEFAULT_RATE_LIMIT_CAPACITY and
// DEFAULT_RATE_LIMIT_REFILL_RATE or the settings overriding them). They
// apply at once: the buckets of such clients keep their level (capped at
// a smaller capacity) and refill at the new rate from now on.
func (reg *Registry) SetDefaults(defaults Limits) {
	n := reg.liveInstances()
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if reg.defaults == defaults {
		return
	}
	reg.defaults = defaults
	now := reg.now()
	for _, e := range reg.entries {
		if e.client != nil && e.bucket != nil {
			e.bucket.set(now, reg.limitsOf(e.row), n)
		}
	}
}

// Invalidate makes the next request of each key re-read its client, so
// that edits (limits, activation) apply at once; bucket levels carry over.
func (reg *Registry) Invalidate(keys ...string) {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	reg.gen++
	now := reg.now()
	for _, k := range keys {
		if e := reg.entries[k]; e != nil && !e.stale {
			e.stale, e.editedAt = true, now
		}
	}
}

// InvalidateAll is Invalidate for every cached key, and forgets the keys
// remembered as unknown: for changes made by another instance sharing the
// database, which do not say which keys they touched.
func (reg *Registry) InvalidateAll() {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	reg.gen++
	now := reg.now()
	for k, e := range reg.entries {
		switch {
		case e.client == nil:
			delete(reg.entries, k)
		case !e.stale:
			e.stale, e.editedAt = true, now
		}
	}
}

// Forget drops the cached clients and buckets of keys (deleted clients).
func (reg *Registry) Forget(keys ...string) {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	reg.gen++
	for _, k := range keys {
		delete(reg.entries, k)
	}
}
