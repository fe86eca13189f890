package sqlstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// TestLeases: one holder at a time; the token grows with each
// acquisition; an expired or released lease can be taken; a stale holder
// can neither renew nor write a fenced batch.
func TestLeases(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		s := open(t)
		ctx := context.Background()
		if info, err := s.GetLease(ctx, "leader"); err != nil || info != (storage.LeaseInfo{}) {
			t.Fatalf("never acquired: %+v %v", info, err)
		}
		a, ok, err := s.AcquireLease(ctx, "leader", "a", time.Minute)
		if err != nil || !ok || a.Token != 1 {
			t.Fatalf("a acquires: %+v %v %v", a, ok, err)
		}
		if _, ok, err := s.AcquireLease(ctx, "leader", "b", time.Minute); err != nil || ok {
			t.Fatalf("b acquired a live lease: %v %v", ok, err)
		}
		if info, err := s.GetLease(ctx, "leader"); err != nil || info.Holder != "a" || !info.Live || info.Token != 1 ||
			time.Until(info.ExpiresAt) < 50*time.Second {
			t.Fatalf("lease of a: %+v %v", info, err)
		}
		if ok, err := s.RenewLease(ctx, a, 50*time.Millisecond); err != nil || !ok {
			t.Fatalf("renew: %v %v", ok, err)
		}
		time.Sleep(80 * time.Millisecond)
		if info, _ := s.GetLease(ctx, "leader"); info.Live {
			t.Fatalf("expired lease still live: %+v", info)
		}
		// a's lease expired: b takes it, and a is fenced off.
		b, ok, err := s.AcquireLease(ctx, "leader", "b", time.Minute)
		if err != nil || !ok || b.Token != 2 {
			t.Fatalf("b takes the expired lease: %+v %v %v", b, ok, err)
		}
		if ok, err := s.RenewLease(ctx, a, time.Minute); err != nil || ok {
			t.Fatalf("a renewed a lease taken by b: %v %v", ok, err)
		}
		rec := storagetest.Rec("did:plc:a", "app.test.post", "k", time.Now(), nil)
		stale := storage.Batch{Ops: []storage.RecordOp{{Record: rec}}, Cursors: []storage.StreamCursor{{Name: "source:x", Value: 9}}, Fence: &a}
		if err := s.ApplyBatch(ctx, stale); !errors.Is(err, storage.ErrFenced) {
			t.Fatalf("stale holder's batch: %v", err)
		}
		if _, err := s.GetRecord(ctx, rec.URI); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("a fenced batch wrote its record: %v", err)
		}
		if _, err := s.GetStreamCursor(ctx, "source:x"); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("a fenced batch wrote its cursor: %v", err)
		}
		stale.Fence = &b
		if err := s.ApplyBatch(ctx, stale); err != nil {
			t.Fatalf("holder's batch: %v", err)
		}
		// A release lets another take it at once; releasing a lease held
		// by someone else does nothing.
		if err := s.ReleaseLease(ctx, a); err != nil {
			t.Fatal(err)
		}
		if info, _ := s.GetLease(ctx, "leader"); info.Holder != "b" || !info.Live {
			t.Fatalf("a released b's lease: %+v", info)
		}
		if err := s.ReleaseLease(ctx, b); err != nil {
			t.Fatal(err)
		}
		c, ok, err := s.AcquireLease(ctx, "leader", "c", time.Minute)
		if err != nil || !ok || c.Token != 3 {
			t.Fatalf("c after the release: %+v %v %v", c, ok, err)
		}
	})
}

// TestInstances: heartbeats make an instance live; silence or removal
// ends it.
func TestInstances(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		s := open(t)
		ctx := context.Background()
		started := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
		for _, id := range []string{"one", "two"} {
			if err := s.Heartbeat(ctx, storage.Instance{ID: id, StartedAt: started, Info: []byte(`{"addr":"x"}`)}); err != nil {
				t.Fatal(err)
			}
			started = started.Add(time.Minute)
		}
		live, err := s.ListInstances(ctx, time.Minute)
		if err != nil || len(live) != 2 || live[0].ID != "one" || string(live[1].Info) != `{"addr":"x"}` ||
			!live[0].StartedAt.Equal(started.Add(-2*time.Minute)) || time.Since(live[0].SeenAt) > time.Minute {
			t.Fatalf("live: %+v %v", live, err)
		}
		// "one" last seen over a second ago, "two" just now: a window of
		// half a second holds only "two", even on a loaded machine.
		time.Sleep(1200 * time.Millisecond)
		if err := s.Heartbeat(ctx, storage.Instance{ID: "two", StartedAt: started}); err != nil {
			t.Fatal(err)
		}
		if live, _ := s.ListInstances(ctx, 500*time.Millisecond); len(live) != 1 || live[0].ID != "two" {
			t.Fatalf("recently seen: %+v", live)
		}
		if err := s.RemoveInstance(ctx, "two", time.Hour); err != nil {
			t.Fatal(err)
		}
		if live, _ := s.ListInstances(ctx, time.Hour); len(live) != 1 || live[0].ID != "one" {
			t.Fatalf("after removing two: %+v", live)
		}
	})
}

// TestChangesAreAnnounced: on PostgreSQL, a change to a configuration
// table made through any connection reaches the watchers with the table's
// name.
func TestChangesAreAnnounced(t *testing.T) {
	s := storagetest.Postgres(t)
	w, ok := s.(storage.ChangeWatcher)
	if !ok {
		t.Fatal("the PostgreSQL store does not watch changes")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan string, 16)
	go func() { _ = w.WatchChanges(ctx, func(table string) { got <- table }) }()
	if first := <-got; first != "" {
		t.Fatalf("first call %q, want \"\" (catch up)", first)
	}
	if err := s.PutSetting(ctx, "test.key", "1"); err != nil {
		t.Fatal(err)
	}
	select {
	case table := <-got:
		if table != "settings" {
			t.Fatalf("notified %q", table)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no notification of the settings change")
	}
}
