package serviceentries_test

import (
	"context"
	"testing"
	"time"

	"github.com/lexview/lexview/appview/internal/service/serviceentries"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// BenchmarkAdmit measures what the gate adds to a proxied XRPC call, on
// each backend: a method bound to no entry (one query finding nothing), to
// an `all` entry, and to an `allowlist` entry holding the caller (a second
// query).
func BenchmarkAdmit(b *testing.B) {
	const caller, aud = "did:plc:caller", "did:web:example.com"
	for _, be := range storagetest.Backends() {
		s := be.Open(b)
		ctx := context.Background()
		at := time.Now()
		all, err := s.CreateServiceEntry(ctx, storage.ServiceEntry{Fragment: "a", ServiceType: "BskyAppView", AccessMode: storage.AccessAll, CreatedAt: at, UpdatedAt: at})
		if err != nil {
			b.Fatal(err)
		}
		list, err := s.CreateServiceEntry(ctx, storage.ServiceEntry{Fragment: "l", ServiceType: "BskyAppView", AccessMode: storage.AccessAllowlist, CreatedAt: at, UpdatedAt: at})
		if err != nil {
			b.Fatal(err)
		}
		for _, err := range []error{
			s.BindServiceEntryMethods(ctx, all.ID, []string{"com.example.open"}, at),
			s.BindServiceEntryMethods(ctx, list.ID, []string{"com.example.listed"}, at),
			s.AllowServiceEntryCallers(ctx, list.ID, []string{caller}, at),
		} {
			if err != nil {
				b.Fatal(err)
			}
		}
		svc := serviceentries.New(serviceentries.Options{Store: s})
		for _, c := range []struct{ name, nsid string }{
			{"unbound", "com.example.other"}, {"all", "com.example.open"}, {"allowlist", "com.example.listed"},
		} {
			b.Run(be.Name+"/"+c.name, func(b *testing.B) {
				for b.Loop() {
					if err := svc.Admit(ctx, c.nsid, caller, aud); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestAdmitFollowsOtherProcesses: a change another process makes (here,
// straight to the store) reaches Admit once RefreshAfter has passed; until
// then the cached bindings apply.
func TestAdmitFollowsOtherProcesses(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		s := open(t)
		ctx := context.Background()
		now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		svc := serviceentries.New(serviceentries.Options{Store: s, Now: func() time.Time { return now }})
		const nsid, caller, aud = "com.example.get", "did:plc:caller", "did:web:example.com"
		if err := svc.Admit(ctx, nsid, caller, aud); err != nil {
			t.Fatalf("unbound: %v", err)
		}
		e, err := s.CreateServiceEntry(ctx, storage.ServiceEntry{Fragment: "a", ServiceType: "BskyAppView", AccessMode: storage.AccessDisabled, CreatedAt: now, UpdatedAt: now})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.BindServiceEntryMethods(ctx, e.ID, []string{nsid}, now); err != nil {
			t.Fatal(err)
		}
		if err := svc.Admit(ctx, nsid, caller, aud); err != nil {
			t.Fatalf("cached (unbound): %v", err)
		}
		now = now.Add(serviceentries.RefreshAfter)
		if err := svc.Admit(ctx, nsid, caller, aud); err == nil || err.Error() != serviceentries.MsgDisabled {
			t.Fatalf("after refresh (disabled): %v", err)
		}
		e.AccessMode, e.UpdatedAt = storage.AccessAll, now
		if err := s.UpdateServiceEntry(ctx, e); err != nil {
			t.Fatal(err)
		}
		now = now.Add(serviceentries.RefreshAfter - time.Second)
		if err := svc.Admit(ctx, nsid, caller, aud); err == nil {
			t.Fatal("cached (disabled) admitted")
		}
		now = now.Add(time.Second)
		if err := svc.Admit(ctx, nsid, caller, aud+"#a"); err != nil {
			t.Fatalf("after refresh (all): %v", err)
		}
	})
}
