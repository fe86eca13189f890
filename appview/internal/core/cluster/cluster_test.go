package cluster

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/lexview/lexview/storage"
)

// fakeStore is an in-memory lease store whose renewals can be made to
// fail, and whose lease another holder can take.
type fakeStore struct {
	mu        sync.Mutex
	holder    string
	token     int64
	expires   time.Time
	renewErr  error
	instances map[string]time.Time
}

func (s *fakeStore) AcquireLease(_ context.Context, name, holder string, ttl time.Duration) (storage.Lease, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.holder != "" && s.holder != holder && time.Now().Before(s.expires) {
		return storage.Lease{}, false, nil
	}
	s.holder, s.expires = holder, time.Now().Add(ttl)
	s.token++
	return storage.Lease{Name: name, Holder: holder, Token: s.token}, true, nil
}

func (s *fakeStore) RenewLease(_ context.Context, l storage.Lease, ttl time.Duration) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.renewErr != nil {
		return false, s.renewErr
	}
	if l.Token != s.token || l.Holder != s.holder {
		return false, nil
	}
	s.expires = time.Now().Add(ttl)
	return true, nil
}

func (s *fakeStore) ReleaseLease(_ context.Context, l storage.Lease) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l.Token == s.token {
		s.holder = ""
	}
	return nil
}

func (s *fakeStore) Heartbeat(_ context.Context, inst storage.Instance) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.instances == nil {
		s.instances = map[string]time.Time{}
	}
	s.instances[inst.ID] = time.Now()
	return nil
}

func (s *fakeStore) ListInstances(_ context.Context, within time.Duration) ([]storage.Instance, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []storage.Instance
	for id, seen := range s.instances {
		if time.Since(seen) < within {
			out = append(out, storage.Instance{ID: id, SeenAt: seen})
		}
	}
	return out, nil
}

func (s *fakeStore) RemoveInstance(_ context.Context, id string, _ time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.instances, id)
	return nil
}

// recorder is Work that records when it runs.
type recorder struct {
	mu        sync.Mutex
	running   bool
	leads     int
	fail      bool
	steppedAt time.Time // when StepDown was last called
}

func (r *recorder) Lead(context.Context, *storage.Lease) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail {
		return errors.New("cannot start")
	}
	r.running = true
	r.leads++
	return nil
}

func (r *recorder) StepDown(context.Context) error {
	r.mu.Lock()
	r.running, r.steppedAt = false, time.Now()
	r.mu.Unlock()
	return nil
}

func (r *recorder) isRunning() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.running
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !ok(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
	}
}

// TestElection: the first instance leads at Start, the second follows;
// when the leader stops, the follower takes over; a follower counts the
// live instances.
func TestElection(t *testing.T) {
	store := &fakeStore{}
	ctx := context.Background()
	wa, wb := &recorder{}, &recorder{}
	a := New(Options{Store: store, InstanceID: "a", TTL: 300 * time.Millisecond, Poll: 20 * time.Millisecond, Work: wa})
	b := New(Options{Store: store, InstanceID: "b", TTL: 300 * time.Millisecond, Poll: 20 * time.Millisecond, Work: wb})
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if !a.State().Leading || !wa.isRunning() || b.State().Leading || wb.isRunning() {
		t.Fatalf("a %+v, b %+v", a.State(), b.State())
	}
	if lease, leading := a.Fence(); !leading || lease == nil || lease.Token != 1 {
		t.Fatalf("a's fence %+v %v", lease, leading)
	}
	waitFor(t, "two live instances", func() bool { return b.Live() == 2 })
	if err := a.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if wa.isRunning() {
		t.Fatal("a's work runs after Stop")
	}
	waitFor(t, "b leading", func() bool { return b.State().Leading && wb.isRunning() })
	if lease, _ := b.Fence(); lease.Token != 2 {
		t.Fatalf("b's lease %+v", lease)
	}
	if err := b.Stop(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestStepsDownWhenItCannotRenew: a leader whose renewals fail stops its
// work before its lease can have expired; one whose lease was taken stops
// at its next renewal.
func TestStepsDownWhenItCannotRenew(t *testing.T) {
	ctx := context.Background()
	t.Run("unreachable", func(t *testing.T) {
		store := &fakeStore{}
		w := &recorder{}
		// A margin before the expiry (a third of the TTL, at most 1 s)
		// that a loaded machine's scheduling does not eat up.
		ttl := 3 * time.Second
		l := New(Options{Store: store, InstanceID: "a", TTL: ttl, Poll: time.Hour, Work: w})
		if err := l.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer l.Stop(ctx)
		store.mu.Lock()
		store.renewErr = errors.New("database unreachable")
		store.mu.Unlock()
		waitFor(t, "stepping down", func() bool { return !w.isRunning() && !l.State().Leading })
		store.mu.Lock()
		expires := store.expires
		store.mu.Unlock()
		w.mu.Lock()
		stepped := w.steppedAt
		w.mu.Unlock()
		// When the work was stopped, not when the test saw it: the test
		// may look late on a loaded machine.
		if stepped.After(expires) {
			t.Fatalf("stepped down after the lease expired (%v)", stepped.Sub(expires))
		}
	})
	t.Run("taken", func(t *testing.T) {
		store := &fakeStore{}
		w := &recorder{}
		l := New(Options{Store: store, InstanceID: "a", TTL: 300 * time.Millisecond, Poll: time.Hour, Work: w})
		if err := l.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer l.Stop(ctx)
		store.mu.Lock()
		store.holder, store.token = "b", store.token+1
		store.mu.Unlock()
		waitFor(t, "stepping down", func() bool { return !w.isRunning() && !l.State().Leading })
	})
}

// TestFailedLeadReleases: work that cannot start gives the lease back and
// fails Start; without a store the instance always leads.
func TestFailedLeadReleases(t *testing.T) {
	ctx := context.Background()
	store := &fakeStore{}
	l := New(Options{Store: store, InstanceID: "a", Work: &recorder{fail: true}})
	if err := l.Start(ctx); err == nil {
		t.Fatal("Start succeeded with failing work")
	}
	if store.holder != "" || l.State().Leading {
		t.Fatalf("lease kept: %q, %+v", store.holder, l.State())
	}
	w := &recorder{}
	solo := New(Options{InstanceID: "solo", Work: w})
	if err := solo.Start(ctx); err != nil || !solo.State().Leading || !w.isRunning() || solo.Live() != 1 {
		t.Fatalf("solo: %v %+v", err, solo.State())
	}
	if lease, leading := solo.Fence(); lease != nil || !leading {
		t.Fatalf("solo fence %+v %v", lease, leading)
	}
	if err := solo.Stop(ctx); err != nil || w.isRunning() {
		t.Fatalf("solo stop: %v", err)
	}
}
