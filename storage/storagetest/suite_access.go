package storagetest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lexview/lexview/storage"
)

// RunAccess runs the suite for admin users, admin API keys and API clients.
func RunAccess(t *testing.T, open func(t testing.TB) storage.Store) {
	tests := []storeCase{
		{"BootstrapIsRaceSafe", testBootstrapRace},
		{"AdminUsers", testAdminUsers},
		{"TransferSuper", testTransferSuper},
		{"AdminAPIKeys", testAdminAPIKeys},
		{"APIClients", testAPIClients},
		{"APIClientCascades", testAPIClientCascades},
	}
	runCases(t, open, tests)
}

func user(did string, perms ...string) storage.AdminUser {
	return storage.AdminUser{ID: storage.NewID(), DID: did, Permissions: perms, CreatedAt: base}
}

func testBootstrapRace(t *testing.T, s storage.Store) {
	ctx := context.Background()
	var wg sync.WaitGroup
	won := make(chan string, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			u := user("did:plc:racer" + string(rune('a'+i)))
			ok, err := s.BootstrapSuperUser(ctx, u)
			if err != nil {
				t.Errorf("bootstrap: %v", err)
			}
			if ok {
				won <- u.DID
			}
		}()
	}
	wg.Wait()
	close(won)
	var winners []string
	for d := range won {
		winners = append(winners, d)
	}
	if len(winners) != 1 {
		t.Fatalf("%d bootstraps succeeded: %v", len(winners), winners)
	}
	users, err := s.ListAdminUsers(ctx)
	if err != nil || len(users) != 1 || !users[0].IsSuper || users[0].DID != winners[0] {
		t.Fatalf("users after race: %+v %v", users, err)
	}
	if ok, err := s.BootstrapSuperUser(ctx, user("did:plc:late")); ok || err != nil {
		t.Fatalf("bootstrap with an existing user: %v %v", ok, err)
	}
}

func testAdminUsers(t *testing.T, s storage.Store) {
	ctx := context.Background()
	u := user("did:plc:alice", "lexicons:read", "users:read")
	if err := s.CreateAdminUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateAdminUser(ctx, user("did:plc:alice")); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("duplicate DID: %v", err)
	}
	got, err := s.GetAdminUserByDID(ctx, "did:plc:alice")
	if err != nil || got.ID != u.ID || got.IsSuper || !slices.Equal(got.Permissions, u.Permissions) ||
		!got.CreatedAt.Equal(base) || !got.LastUsedAt.IsZero() {
		t.Fatalf("get by DID: %+v %v", got, err)
	}
	if err := s.SetAdminUserPermissions(ctx, u.ID, []string{"stats:read"}); err != nil {
		t.Fatal(err)
	}
	used := base.Add(time.Hour)
	if err := s.TouchAdminUser(ctx, u.ID, used); err != nil {
		t.Fatal(err)
	}
	got, err = s.GetAdminUser(ctx, u.ID)
	if err != nil || !slices.Equal(got.Permissions, []string{"stats:read"}) || !got.LastUsedAt.Equal(used) {
		t.Fatalf("after update: %+v %v", got, err)
	}
	if err := s.SetAdminUserPermissions(ctx, "nobody", nil); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("update missing: %v", err)
	}
	n, err := s.CountAdminUsers(ctx)
	if err != nil || n != 1 {
		t.Fatalf("count: %d %v", n, err)
	}
	if err := s.DeleteAdminUser(ctx, u.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetAdminUser(ctx, u.ID); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("get deleted: %v", err)
	}
	if err := s.DeleteAdminUser(ctx, u.ID); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("delete missing: %v", err)
	}
}

func testTransferSuper(t *testing.T, s storage.Store) {
	ctx := context.Background()
	su := user("did:plc:super", "a:b")
	if ok, err := s.BootstrapSuperUser(ctx, su); !ok || err != nil {
		t.Fatal(ok, err)
	}
	other := user("did:plc:other")
	if err := s.CreateAdminUser(ctx, other); err != nil {
		t.Fatal(err)
	}
	if err := s.TransferSuper(ctx, other.ID, su.ID, nil); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("transfer from a non-super: %v", err)
	}
	if err := s.TransferSuper(ctx, su.ID, "missing", nil); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("transfer to a missing user: %v", err)
	}
	if err := s.TransferSuper(ctx, su.ID, other.ID, []string{"x:y", "z:w"}); err != nil {
		t.Fatal(err)
	}
	a, _ := s.GetAdminUser(ctx, su.ID)
	b, _ := s.GetAdminUser(ctx, other.ID)
	if a.IsSuper || !b.IsSuper || !slices.Equal(b.Permissions, []string{"x:y", "z:w"}) || !slices.Equal(a.Permissions, []string{"a:b"}) {
		t.Fatalf("after transfer: %+v / %+v", a, b)
	}
}

func testAdminAPIKeys(t *testing.T, s storage.Store) {
	ctx := context.Background()
	u := user("did:plc:keyowner", "lexicons:read")
	if err := s.CreateAdminUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	k := storage.AdminAPIKey{ID: storage.NewID(), UserID: u.ID, Name: "ci", Prefix: "hv_abcde", Hash: "deadbeef",
		Permissions: []string{"lexicons:read"}, CreatedAt: base}
	if err := s.CreateAdminAPIKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	dup := k
	dup.ID = storage.NewID()
	if err := s.CreateAdminAPIKey(ctx, dup); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("duplicate hash: %v", err)
	}
	got, err := s.GetAdminAPIKeyByHash(ctx, "deadbeef")
	if err != nil || got.ID != k.ID || got.Name != "ci" || got.Prefix != "hv_abcde" || !slices.Equal(got.Permissions, k.Permissions) {
		t.Fatalf("by hash: %+v %v", got, err)
	}
	if err := s.TouchAdminAPIKey(ctx, k.ID, base.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	list, err := s.ListAdminAPIKeys(ctx)
	if err != nil || len(list) != 1 || !list[0].LastUsedAt.Equal(base.Add(time.Minute)) {
		t.Fatalf("list: %+v %v", list, err)
	}
	// Deleting the user removes its keys.
	if err := s.DeleteAdminUser(ctx, u.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetAdminAPIKeyByHash(ctx, "deadbeef"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("key outlived its user: %v", err)
	}
	if err := s.DeleteAdminAPIKey(ctx, k.ID); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("delete missing key: %v", err)
	}
}

func client(key, idURL, parent string) storage.APIClient {
	return storage.APIClient{
		ID: storage.NewID(), Key: key, SecretHash: "hash-" + key, Name: "client " + key, ClientIDURL: idURL,
		ClientURI: "https://app.test", RedirectURIs: []string{"https://app.test/cb"}, Scopes: "atproto",
		Type: storage.ClientConfidential, AllowedOrigins: []string{}, IsActive: true, CreatedBy: "did:plc:admin",
		ParentID: parent, CreatedAt: base, UpdatedAt: base,
	}
}

func testAPIClients(t *testing.T, s storage.Store) {
	ctx := context.Background()
	c := client("hvc_one", "https://app.test/one.json", "")
	capacity, refill := 5, 0.25
	c.RateLimitCapacity, c.RateLimitRefillRate = &capacity, &refill
	c.Type, c.AllowedOrigins = storage.ClientPublic, []string{"https://web.app.test"}
	if err := s.CreateAPIClient(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateAPIClient(ctx, client("hvc_two", "https://app.test/one.json", "")); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("duplicate client_id_url: %v", err)
	}
	got, err := s.GetAPIClientByKey(ctx, "hvc_one")
	if err != nil || got.ID != c.ID || *got.RateLimitCapacity != 5 || *got.RateLimitRefillRate != 0.25 ||
		got.Type != storage.ClientPublic || !slices.Equal(got.AllowedOrigins, c.AllowedOrigins) ||
		!slices.Equal(got.RedirectURIs, c.RedirectURIs) || got.ParentID != "" || !got.IsActive {
		t.Fatalf("by key: %+v %v", got, err)
	}
	got.Name, got.RateLimitCapacity, got.RateLimitRefillRate = "renamed", nil, nil
	keys, err := s.UpdateAPIClient(ctx, got)
	if err != nil || !slices.Equal(keys, []string{"hvc_one"}) {
		t.Fatalf("update: %v %v", keys, err)
	}
	got, _ = s.GetAPIClient(ctx, c.ID)
	if got.Name != "renamed" || got.RateLimitCapacity != nil || got.RateLimitRefillRate != nil || !got.UpdatedAt.After(base) {
		t.Fatalf("after update: %+v", got)
	}
	later := client("hvc_later", "https://app.test/later.json", "")
	later.CreatedAt = base.Add(time.Hour)
	if err := s.CreateAPIClient(ctx, later); err != nil {
		t.Fatal(err)
	}
	list, err := s.ListAPIClients(ctx, "")
	if err != nil || len(list) != 2 || list[0].Key != "hvc_later" {
		t.Fatalf("list newest first: %+v %v", list, err)
	}
	if _, err := s.GetAPIClient(ctx, "missing"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("get missing: %v", err)
	}
	if _, err := s.UpdateAPIClient(ctx, client("hvc_x", "https://x", "")); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("update missing: %v", err)
	}
}

func testAPIClientCascades(t *testing.T, s storage.Store) {
	ctx := context.Background()
	parent := client("hvc_parent", "https://app.test/p.json", "")
	if err := s.CreateAPIClient(ctx, parent); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"hvc_c1", "hvc_c2"} {
		if err := s.CreateAPIClient(ctx, client(k, "https://app.test/"+k+".json", parent.ID)); err != nil {
			t.Fatal(err)
		}
	}
	children, err := s.ListAPIClients(ctx, parent.ID)
	if err != nil || len(children) != 2 {
		t.Fatalf("children: %+v %v", children, err)
	}
	parent.IsActive = false
	keys, err := s.UpdateAPIClient(ctx, parent)
	slices.Sort(keys)
	if err != nil || !slices.Equal(keys, []string{"hvc_c1", "hvc_c2", "hvc_parent"}) {
		t.Fatalf("deactivate: %v %v", keys, err)
	}
	for _, k := range []string{"hvc_c1", "hvc_c2"} {
		if c, _ := s.GetAPIClientByKey(ctx, k); c.IsActive {
			t.Fatalf("child %s still active", k)
		}
	}
	deleted, err := s.DeleteAPIClient(ctx, parent.ID)
	slices.Sort(deleted)
	if err != nil || !slices.Equal(deleted, []string{"hvc_c1", "hvc_c2", "hvc_parent"}) {
		t.Fatalf("delete: %v %v", deleted, err)
	}
	if _, err := s.GetAPIClientByKey(ctx, "hvc_c1"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("child outlived its parent: %v", err)
	}
	if _, err := s.DeleteAPIClient(ctx, parent.ID); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("delete missing: %v", err)
	}
}
