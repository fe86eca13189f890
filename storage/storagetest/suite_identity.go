package storagetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/lexview/lexview/storage"
)

// RunIdentity runs the suite for the instance's service identity
// (IdentityStore and ServiceEntryStore): domains, verification methods
// and service entries with their bindings and allowlists. Each subtest gets a
// fresh store.
func RunIdentity(t *testing.T, open func(t testing.TB) storage.Store) {
	tests := []storeCase{
		{"DomainsRoundTrip", testDomainsRoundTrip},
		{"DomainPrimarySwitch", testDomainPrimarySwitch},
		{"DomainOnePrimaryUnderRace", testDomainOnePrimaryRace},
		{"VerificationMethods", testVerificationMethods},
		{"ServiceEntries", testServiceEntries},
		{"ServiceEntryBindings", testServiceEntryBindings},
	}
	runCases(t, open, tests)
}

func domain(url string, primary bool, at time.Time) storage.Domain {
	return storage.Domain{ID: storage.NewID(), URL: url, IsPrimary: primary, CreatedAt: at, UpdatedAt: at}
}

func createDomainT(t *testing.T, s storage.Store, d storage.Domain) storage.Domain {
	t.Helper()
	if err := s.CreateDomain(context.Background(), d); err != nil {
		t.Fatalf("CreateDomain %s: %v", d.URL, err)
	}
	return d
}

func testDomainsRoundTrip(t *testing.T, s storage.Store) {
	ctx := context.Background()
	if list, err := s.ListDomains(ctx); err != nil || len(list) != 0 {
		t.Fatalf("empty store: %v %v", list, err)
	}
	a := createDomainT(t, s, domain("https://b.example", false, base))
	p := createDomainT(t, s, domain("https://a.example", true, base.Add(time.Second)))
	got, err := s.GetDomain(ctx, a.ID)
	if err != nil || got.URL != a.URL || got.IsPrimary || !got.CreatedAt.Equal(base) || !got.UpdatedAt.Equal(base) {
		t.Fatalf("GetDomain: %+v %v", got, err)
	}
	list, err := s.ListDomains(ctx)
	if err != nil || len(list) != 2 || list[0].ID != p.ID || list[1].ID != a.ID {
		t.Fatalf("list (primary first): %+v %v", list, err)
	}
	if _, err := s.GetDomain(ctx, "nope"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("GetDomain unknown: %v", err)
	}
	// The URL is unique; so is the primary.
	if err := s.CreateDomain(ctx, domain("https://b.example", false, base)); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("duplicate URL: %v", err)
	}
	if err := s.CreateDomain(ctx, domain("https://c.example", true, base)); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("second primary: %v", err)
	}
	// The primary cannot be deleted; others can, once.
	if err := s.DeleteDomain(ctx, p.ID); !errors.Is(err, storage.ErrPrimaryDomain) {
		t.Fatalf("delete primary: %v", err)
	}
	if err := s.DeleteDomain(ctx, a.ID); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if err := s.DeleteDomain(ctx, a.ID); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("delete again: %v", err)
	}
	if list, _ := s.ListDomains(ctx); len(list) != 1 || list[0].ID != p.ID {
		t.Fatalf("after delete: %+v", list)
	}
}

func testDomainPrimarySwitch(t *testing.T, s storage.Store) {
	ctx := context.Background()
	p := createDomainT(t, s, domain("https://a.example", true, base))
	o := createDomainT(t, s, domain("https://b.example", false, base))
	later := base.Add(time.Hour)
	if err := s.SetPrimaryDomain(ctx, o.ID, later); err != nil {
		t.Fatal(err)
	}
	gotP, _ := s.GetDomain(ctx, p.ID)
	gotO, _ := s.GetDomain(ctx, o.ID)
	if gotP.IsPrimary || !gotO.IsPrimary || !gotP.UpdatedAt.Equal(later) || !gotO.UpdatedAt.Equal(later) {
		t.Fatalf("after switch: old %+v new %+v", gotP, gotO)
	}
	// Idempotent on the primary itself; unknown ids change nothing.
	if err := s.SetPrimaryDomain(ctx, o.ID, later.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.SetPrimaryDomain(ctx, "nope", later); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("unknown: %v", err)
	}
	if g, _ := s.GetDomain(ctx, o.ID); !g.IsPrimary {
		t.Fatalf("primary lost: %+v", g)
	}
	if err := s.DeleteDomain(ctx, p.ID); err != nil {
		t.Fatalf("delete the former primary: %v", err)
	}
}

// testDomainOnePrimaryRace: concurrent switches leave exactly one primary.
func testDomainOnePrimaryRace(t *testing.T, s storage.Store) {
	ctx := context.Background()
	ids := []string{createDomainT(t, s, domain("https://a.example", true, base)).ID}
	for _, u := range []string{"https://b.example", "https://c.example", "https://d.example"} {
		ids = append(ids, createDomainT(t, s, domain(u, false, base)).ID)
	}
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Go(func() {
			err := s.SetPrimaryDomain(ctx, ids[i%len(ids)], base)
			if err != nil && !errors.Is(err, storage.ErrConflict) {
				t.Errorf("SetPrimaryDomain: %v", err)
			}
		})
	}
	wg.Wait()
	list, err := s.ListDomains(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range list {
		if d.IsPrimary {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d primaries: %+v", n, list)
	}
}

func testVerificationMethods(t *testing.T, s storage.Store) {
	ctx := context.Background()
	if list, err := s.ListVerificationMethods(ctx); err != nil || len(list) != 0 {
		t.Fatalf("empty store: %v %v", list, err)
	}
	gen := storage.VerificationMethod{Fragment: "atproto", KeyType: "secp256k1", PublicKeyMultibase: "zQ3sh", SealedPrivateKey: "sealed", CreatedAt: base}
	sup := storage.VerificationMethod{Fragment: "atproto_label", KeyType: "p256", PublicKeyMultibase: "zDn", CreatedAt: base}
	for _, m := range []storage.VerificationMethod{sup, gen} {
		if err := s.CreateVerificationMethod(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CreateVerificationMethod(ctx, sup); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("duplicate fragment: %v", err)
	}
	list, err := s.ListVerificationMethods(ctx)
	if err != nil || len(list) != 2 || list[0] != gen || list[1] != sup {
		t.Fatalf("list: %+v %v", list, err)
	}
	if err := s.DeleteVerificationMethod(ctx, "atproto"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteVerificationMethod(ctx, "atproto"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("delete again: %v", err)
	}
}
