package storagetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/lexview/lexview/storage"
)

func serviceEntry(fragment, typ string, at time.Time) storage.ServiceEntry {
	return storage.ServiceEntry{Fragment: fragment, ServiceType: typ, AccessMode: storage.AccessAll, CreatedAt: at, UpdatedAt: at}
}

func createEntryT(t *testing.T, s storage.Store, e storage.ServiceEntry) storage.ServiceEntry {
	t.Helper()
	got, err := s.CreateServiceEntry(context.Background(), e)
	if err != nil {
		t.Fatalf("CreateServiceEntry %s: %v", e.Fragment, err)
	}
	return got
}

// testServiceEntries: ids are assigned in order, fragments are unique,
// updates replace every field but the creation time, and unknown ids are
// ErrNotFound.
func testServiceEntries(t *testing.T, s storage.Store) {
	ctx := context.Background()
	if list, err := s.ListServiceEntries(ctx); err != nil || len(list) != 0 {
		t.Fatalf("empty store: %v %v", list, err)
	}
	a := createEntryT(t, s, serviceEntry("bsky_appview", "BskyAppView", base))
	b := createEntryT(t, s, serviceEntry("atproto_labeler", "AtprotoLabeler", base.Add(time.Second)))
	if a.ID <= 0 || b.ID <= a.ID || a.Fragment != "bsky_appview" || a.AccessMode != storage.AccessAll || !a.CreatedAt.Equal(base) {
		t.Fatalf("created: %+v %+v", a, b)
	}
	got, err := s.GetServiceEntry(ctx, b.ID)
	if err != nil || got != b {
		t.Fatalf("GetServiceEntry: %+v %v, want %+v", got, err, b)
	}
	if _, err := s.CreateServiceEntry(ctx, serviceEntry("bsky_appview", "Other", base)); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("duplicate fragment: %v", err)
	}
	later := base.Add(time.Minute)
	upd := storage.ServiceEntry{ID: a.ID, Fragment: "appview", ServiceType: "BskyAppView", AccessMode: storage.AccessDisabled, UpdatedAt: later}
	if err := s.UpdateServiceEntry(ctx, upd); err != nil {
		t.Fatalf("UpdateServiceEntry: %v", err)
	}
	got, _ = s.GetServiceEntry(ctx, a.ID)
	if got.Fragment != "appview" || got.AccessMode != storage.AccessDisabled || !got.UpdatedAt.Equal(later) || !got.CreatedAt.Equal(base) {
		t.Fatalf("after update: %+v", got)
	}
	// The old fragment is free again; another entry's is not.
	createEntryT(t, s, serviceEntry("bsky_appview", "BskyAppView", base))
	upd.Fragment = "atproto_labeler"
	if err := s.UpdateServiceEntry(ctx, upd); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("update to a taken fragment: %v", err)
	}
	upd.ID = 1 << 40
	upd.Fragment = "free"
	if err := s.UpdateServiceEntry(ctx, upd); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("update unknown: %v", err)
	}
	if _, err := s.GetServiceEntry(ctx, 1<<40); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("get unknown: %v", err)
	}
	list, err := s.ListServiceEntries(ctx)
	if err != nil || len(list) != 3 || list[0].ID != a.ID || list[1].ID != b.ID {
		t.Fatalf("list by id: %+v %v", list, err)
	}
	if err := s.DeleteServiceEntry(ctx, b.ID); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if err := s.DeleteServiceEntry(ctx, b.ID); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("delete again: %v", err)
	}
	// An id is never reused.
	if c := createEntryT(t, s, serviceEntry("atproto_labeler", "AtprotoLabeler", base)); c.ID <= list[2].ID {
		t.Fatalf("id reused: %d after %d", c.ID, list[2].ID)
	}
}

// testServiceEntryBindings: methods and allowlists bind idempotently,
// unbind quietly, answer per entry and per method, need an existing entry,
// and go with their entry.
func testServiceEntryBindings(t *testing.T, s storage.Store) {
	ctx := context.Background()
	a := createEntryT(t, s, serviceEntry("a", "BskyFeedGenerator", base))
	b := createEntryT(t, s, serviceEntry("b", "BskyAppView", base))
	const q1, q2, q3 = "com.example.getA", "com.example.getB", "com.example.doC"
	if err := s.BindServiceEntryMethods(ctx, a.ID, []string{q2, q1}, base); err != nil {
		t.Fatal(err)
	}
	if err := s.BindServiceEntryMethods(ctx, a.ID, []string{q1, q3}, base); err != nil {
		t.Fatalf("bind again: %v", err)
	}
	if err := s.BindServiceEntryMethods(ctx, b.ID, []string{q1}, base); err != nil {
		t.Fatal(err)
	}
	if got, err := s.ServiceEntryMethods(ctx, a.ID); err != nil || !slices.Equal(got, []string{q3, q1, q2}) {
		t.Fatalf("methods of a: %v %v", got, err)
	}
	if got, err := s.ServiceEntriesForMethod(ctx, q1); err != nil || len(got) != 2 || got[0].ID != a.ID || got[1].ID != b.ID {
		t.Fatalf("entries of %s: %+v %v", q1, got, err)
	}
	if err := s.UnbindServiceEntryMethods(ctx, a.ID, []string{q1, "com.example.never"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.ServiceEntriesForMethod(ctx, q1); len(got) != 1 || got[0].ID != b.ID {
		t.Fatalf("after unbind: %+v", got)
	}
	if got, err := s.ServiceEntriesForMethod(ctx, "com.example.none"); err != nil || len(got) != 0 {
		t.Fatalf("unbound method: %+v %v", got, err)
	}
	if got, err := s.ServiceEntryMethods(ctx, b.ID); err != nil || !slices.Equal(got, []string{q1}) {
		t.Fatalf("methods of b: %v %v", got, err)
	}
	wantBindings := []storage.ServiceEntryBinding{{EntryID: a.ID, NSID: q3}, {EntryID: a.ID, NSID: q2}, {EntryID: b.ID, NSID: q1}}
	if got, err := s.ListServiceEntryBindings(ctx); err != nil || !slices.Equal(got, wantBindings) {
		t.Fatalf("all bindings: %+v %v, want %+v", got, err, wantBindings)
	}

	const alice, bob = "did:plc:alice", "did:plc:bob"
	if got, err := s.ServiceEntryAllowlist(ctx, a.ID); err != nil || len(got) != 0 {
		t.Fatalf("empty allowlist: %v %v", got, err)
	}
	if err := s.AllowServiceEntryCallers(ctx, a.ID, []string{bob, alice, bob}, base); err != nil {
		t.Fatal(err)
	}
	if got, err := s.ServiceEntryAllowlist(ctx, a.ID); err != nil || !slices.Equal(got, []string{alice, bob}) {
		t.Fatalf("allowlist: %v %v", got, err)
	}
	for _, c := range []struct {
		ids  []int64
		did  string
		want bool
	}{{[]int64{a.ID}, alice, true}, {[]int64{b.ID}, alice, false}, {[]int64{b.ID, a.ID}, bob, true}, {[]int64{a.ID}, "did:plc:carol", false}, {nil, alice, false}} {
		if got, err := s.ServiceEntryAllows(ctx, c.ids, c.did); err != nil || got != c.want {
			t.Errorf("allows %v %s: %v %v", c.ids, c.did, got, err)
		}
	}
	if err := s.DisallowServiceEntryCallers(ctx, a.ID, []string{alice, "did:plc:never"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.ServiceEntryAllowlist(ctx, a.ID); !slices.Equal(got, []string{bob}) {
		t.Fatalf("after disallow: %v", got)
	}

	// Every call on an unknown entry is ErrNotFound.
	const unknown = 1 << 40
	for name, err := range map[string]error{
		"methods":   func() error { _, err := s.ServiceEntryMethods(ctx, unknown); return err }(),
		"bind":      s.BindServiceEntryMethods(ctx, unknown, []string{q1}, base),
		"unbind":    s.UnbindServiceEntryMethods(ctx, unknown, []string{q1}),
		"allowlist": func() error { _, err := s.ServiceEntryAllowlist(ctx, unknown); return err }(),
		"allow":     s.AllowServiceEntryCallers(ctx, unknown, []string{alice}, base),
		"disallow":  s.DisallowServiceEntryCallers(ctx, unknown, []string{alice}),
	} {
		if !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("%s on an unknown entry: %v", name, err)
		}
	}

	// Deleting an entry removes its bindings and allowlist; a new entry
	// starts with none.
	if err := s.DeleteServiceEntry(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.ServiceEntriesForMethod(ctx, q3); len(got) != 0 {
		t.Fatalf("bindings outlived their entry: %+v", got)
	}
	if got, _ := s.ListServiceEntryBindings(ctx); len(got) != 1 || got[0].EntryID != b.ID {
		t.Fatalf("all bindings after delete: %+v", got)
	}
	if ok, _ := s.ServiceEntryAllows(ctx, []int64{a.ID}, bob); ok {
		t.Fatal("allowlist outlived its entry")
	}
	c := createEntryT(t, s, serviceEntry("a", "BskyFeedGenerator", base))
	if got, err := s.ServiceEntryMethods(ctx, c.ID); err != nil || len(got) != 0 {
		t.Fatalf("new entry's methods: %v %v", got, err)
	}
}
