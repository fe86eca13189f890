package storagetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/lexview/lexview/storage"
)

// RunLinkedRepos runs the suite for linked repo grants, their invites and
// sessions (LinkedRepoStore). Each subtest gets a fresh store.
func RunLinkedRepos(t *testing.T, open func(t testing.TB) storage.Store) {
	tests := []storeCase{
		{"Grants", testLinkedRepoGrants},
		{"Authorization", testLinkedRepoAuthorization},
		{"Invites", testLinkedRepoInvites},
		{"InviteUsedOnce", testLinkedRepoInviteRace},
	}
	runCases(t, open, tests)
}

func linkedRepo(id, did, handle string, at time.Time) storage.LinkedRepoGrant {
	return storage.LinkedRepoGrant{ID: id, DID: did, Handle: handle, Reason: "why " + id, Scopes: "atproto repo:app.example.post",
		Status: storage.LinkedRepoPending, CreatedBy: "did:plc:admin", CreatedAt: at}
}

func createLinkedRepoT(t *testing.T, s storage.Store, g storage.LinkedRepoGrant) {
	t.Helper()
	if err := s.CreateLinkedRepo(context.Background(), g); err != nil {
		t.Fatalf("CreateLinkedRepo %s: %v", g.ID, err)
	}
}

// testLinkedRepoGrants: grants read back field for field, newest first;
// the DID is unique but several grants may have none; delete removes.
func testLinkedRepoGrants(t *testing.T, s storage.Store) {
	ctx := context.Background()
	if list, err := s.ListLinkedRepos(ctx); err != nil || len(list) != 0 {
		t.Fatalf("empty store: %v %v", list, err)
	}
	open1 := linkedRepo(storage.NewID(), "", "", base)
	open2 := linkedRepo(storage.NewID(), "", "", base.Add(time.Second))
	pinned := linkedRepo(storage.NewID(), "did:plc:alice", "did:plc:alice", base.Add(2*time.Second))
	byHandle := linkedRepo(storage.NewID(), "", "bob.example.com", base.Add(3*time.Second))
	byHandle.Reason = ""
	for _, g := range []storage.LinkedRepoGrant{open1, open2, pinned, byHandle} {
		createLinkedRepoT(t, s, g)
	}
	got, err := s.GetLinkedRepo(ctx, pinned.ID)
	if err != nil || got != pinned {
		t.Fatalf("GetLinkedRepo: %+v %v, want %+v", got, err, pinned)
	}
	got, _ = s.GetLinkedRepo(ctx, open1.ID)
	if got != open1 || got.DID != "" || !got.AuthorizedAt.IsZero() || got.LastError != "" {
		t.Fatalf("open grant: %+v", got)
	}
	list, err := s.ListLinkedRepos(ctx)
	if err != nil || len(list) != 4 || list[0].ID != byHandle.ID || list[1].ID != pinned.ID || list[3].ID != open1.ID {
		t.Fatalf("ListLinkedRepos (newest first): %+v %v", list, err)
	}
	dup := linkedRepo(storage.NewID(), "did:plc:alice", "did:plc:alice", base)
	if err := s.CreateLinkedRepo(ctx, dup); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("second grant for a DID: %v", err)
	}
	if err := s.CreateLinkedRepo(ctx, open1); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("duplicate id: %v", err)
	}
	if _, err := s.GetLinkedRepo(ctx, storage.NewID()); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("unknown grant: %v", err)
	}
	if err := s.DeleteLinkedRepo(ctx, pinned.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteLinkedRepo(ctx, pinned.ID); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("delete twice: %v", err)
	}
	// The DID is free again.
	createLinkedRepoT(t, s, dup)
}

// testLinkedRepoAuthorization: authorizing binds the DID, stores the
// session and sets the times; a refresh failure and a refresh update the
// status and times; deleting the grant deletes its session.
func testLinkedRepoAuthorization(t *testing.T, s storage.Store) {
	ctx := context.Background()
	g := linkedRepo(storage.NewID(), "", "", base)
	other := linkedRepo(storage.NewID(), "did:plc:taken", "did:plc:taken", base)
	createLinkedRepoT(t, s, g)
	createLinkedRepoT(t, s, other)
	if _, err := s.GetLinkedRepoSession(ctx, g.ID); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("session before authorization: %v", err)
	}
	at := base.Add(time.Hour)
	sess := storage.LinkedRepoSession{GrantID: g.ID, Sealed: "sealed-1", ExpiresAt: at.Add(time.Hour), UpdatedAt: at}
	if err := s.AuthorizeLinkedRepo(ctx, g.ID, "did:plc:taken", sess, at); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("authorize as another grant's DID: %v", err)
	}
	if _, err := s.GetLinkedRepoSession(ctx, g.ID); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("a refused authorization stored a session: %v", err)
	}
	if err := s.AuthorizeLinkedRepo(ctx, storage.NewID(), "did:plc:new", sess, at); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("authorize an unknown grant: %v", err)
	}
	if err := s.AuthorizeLinkedRepo(ctx, g.ID, "did:plc:carol", sess, at); err != nil {
		t.Fatal(err)
	}
	got, _ := s.GetLinkedRepo(ctx, g.ID)
	if got.DID != "did:plc:carol" || got.Status != storage.LinkedRepoActive || !got.AuthorizedAt.Equal(at) || !got.LastRefreshedAt.Equal(at) {
		t.Fatalf("authorized: %+v", got)
	}
	if st, err := s.GetLinkedRepoSession(ctx, g.ID); err != nil || st != sess {
		t.Fatalf("session: %+v %v, want %+v", st, err, sess)
	}

	if err := s.LinkedRepoNeedsReauth(ctx, g.ID, "refresh refused"); err != nil {
		t.Fatal(err)
	}
	got, _ = s.GetLinkedRepo(ctx, g.ID)
	if got.Status != storage.LinkedRepoNeedsReauth || got.LastError != "refresh refused" || !got.AuthorizedAt.Equal(at) {
		t.Fatalf("needs reauth: %+v", got)
	}
	if err := s.LinkedRepoNeedsReauth(ctx, storage.NewID(), "x"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("needs reauth, unknown grant: %v", err)
	}

	// Re-authorization: active again, the error cleared, times moved.
	at2 := at.Add(time.Hour)
	sess2 := storage.LinkedRepoSession{GrantID: g.ID, Sealed: "sealed-2", ExpiresAt: at2.Add(time.Hour), UpdatedAt: at2}
	if err := s.AuthorizeLinkedRepo(ctx, g.ID, "did:plc:carol", sess2, at2); err != nil {
		t.Fatal(err)
	}
	got, _ = s.GetLinkedRepo(ctx, g.ID)
	if got.Status != storage.LinkedRepoActive || got.LastError != "" || !got.AuthorizedAt.Equal(at2) {
		t.Fatalf("re-authorized: %+v", got)
	}

	at3 := at2.Add(time.Minute)
	sess3 := storage.LinkedRepoSession{GrantID: g.ID, Sealed: "sealed-3", ExpiresAt: at3.Add(time.Hour), UpdatedAt: at3}
	if err := s.RefreshLinkedRepo(ctx, g.ID, sess3, at3); err != nil {
		t.Fatal(err)
	}
	got, _ = s.GetLinkedRepo(ctx, g.ID)
	if !got.LastRefreshedAt.Equal(at3) || !got.AuthorizedAt.Equal(at2) || got.Status != storage.LinkedRepoActive {
		t.Fatalf("refreshed: %+v", got)
	}
	if st, _ := s.GetLinkedRepoSession(ctx, g.ID); st != sess3 {
		t.Fatalf("refreshed session: %+v", st)
	}
	if err := s.RefreshLinkedRepo(ctx, storage.NewID(), sess3, at3); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("refresh an unknown grant: %v", err)
	}

	if err := s.DeleteLinkedRepo(ctx, g.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetLinkedRepoSession(ctx, g.ID); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("session after delete: %v", err)
	}
}

func linkedRepoInvite(id, grant string, created time.Time, life time.Duration) storage.LinkedRepoInvite {
	return storage.LinkedRepoInvite{ID: id, GrantID: grant, CreatedAt: created, ExpiresAt: created.Add(life)}
}

// testLinkedRepoInvites: listing shows outstanding invites only, newest
// first; revoke and redeem apply to outstanding invites only; a refused
// redemption changes nothing; invites go with their grant.
func testLinkedRepoInvites(t *testing.T, s storage.Store) {
	ctx := context.Background()
	g := linkedRepo(storage.NewID(), "", "", base)
	h := linkedRepo(storage.NewID(), "", "", base)
	createLinkedRepoT(t, s, g)
	createLinkedRepoT(t, s, h)
	if list, err := s.ListLinkedRepoInvites(ctx, g.ID, base); err != nil || len(list) != 0 {
		t.Fatalf("no invites: %v %v", list, err)
	}
	if _, err := s.ListLinkedRepoInvites(ctx, storage.NewID(), base); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("invites of an unknown grant: %v", err)
	}
	if err := s.CreateLinkedRepoInvite(ctx, linkedRepoInvite("aa", storage.NewID(), base, time.Hour)); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("invite for an unknown grant: %v", err)
	}
	a := linkedRepoInvite("aa", g.ID, base, time.Hour)
	b := linkedRepoInvite("bb", g.ID, base.Add(time.Second), time.Minute)
	c := linkedRepoInvite("cc", g.ID, base.Add(2*time.Second), time.Hour)
	d := linkedRepoInvite("dd", g.ID, base.Add(3*time.Second), time.Hour)
	x := linkedRepoInvite("xx", h.ID, base, time.Hour)
	for _, inv := range []storage.LinkedRepoInvite{a, b, c, d, x} {
		if err := s.CreateLinkedRepoInvite(ctx, inv); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CreateLinkedRepoInvite(ctx, a); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("duplicate invite id: %v", err)
	}
	now := base.Add(5 * time.Second)
	ids := func(at time.Time) []string {
		t.Helper()
		list, err := s.ListLinkedRepoInvites(ctx, g.ID, at)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]string, len(list))
		for i, inv := range list {
			out[i] = inv.ID
		}
		return out
	}
	if got := ids(now); len(got) != 4 || got[0] != "dd" || got[3] != "aa" {
		t.Fatalf("outstanding: %v", got)
	}
	if got, err := s.GetLinkedRepoInvite(ctx, "cc"); err != nil || got != c {
		t.Fatalf("GetLinkedRepoInvite: %+v %v, want %+v", got, err, c)
	}
	// Another grant's invite cannot be revoked through this one.
	if err := s.RevokeLinkedRepoInvite(ctx, g.ID, "xx", now); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("revoke another grant's invite: %v", err)
	}
	if err := s.RevokeLinkedRepoInvite(ctx, g.ID, "cc", now); err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeLinkedRepoInvite(ctx, g.ID, "cc", now); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("revoke twice: %v", err)
	}
	sess := storage.LinkedRepoSession{GrantID: g.ID, Sealed: "sealed", ExpiresAt: now.Add(time.Hour), UpdatedAt: now}
	if err := s.RedeemLinkedRepoInvite(ctx, "cc", g.ID, "did:plc:carol", sess, now); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("redeem a revoked invite: %v", err)
	}
	if err := s.RedeemLinkedRepoInvite(ctx, "xx", g.ID, "did:plc:carol", sess, now); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("redeem another grant's invite: %v", err)
	}
	// A DID another grant has: refused, and the invite stays usable.
	createLinkedRepoT(t, s, linkedRepo(storage.NewID(), "did:plc:taken", "did:plc:taken", base))
	if err := s.RedeemLinkedRepoInvite(ctx, "dd", g.ID, "did:plc:taken", sess, now); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("redeem as a taken DID: %v", err)
	}
	if got, _ := s.GetLinkedRepoInvite(ctx, "dd"); !got.Outstanding(now) {
		t.Fatalf("a refused redemption used the invite: %+v", got)
	}
	if _, err := s.GetLinkedRepoSession(ctx, g.ID); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("a refused redemption stored a session: %v", err)
	}
	if err := s.RedeemLinkedRepoInvite(ctx, "dd", g.ID, "did:plc:carol", sess, now); err != nil {
		t.Fatal(err)
	}
	used, _ := s.GetLinkedRepoInvite(ctx, "dd")
	bound, _ := s.GetLinkedRepo(ctx, g.ID)
	if !used.UsedAt.Equal(now) || bound.DID != "did:plc:carol" || bound.Status != storage.LinkedRepoActive || !bound.AuthorizedAt.Equal(now) {
		t.Fatalf("redeemed: %+v %+v", used, bound)
	}
	if st, err := s.GetLinkedRepoSession(ctx, g.ID); err != nil || st != sess {
		t.Fatalf("redeemed session: %+v %v", st, err)
	}
	if err := s.RedeemLinkedRepoInvite(ctx, "dd", g.ID, "did:plc:carol", sess, now); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("redeem twice: %v", err)
	}
	if err := s.RevokeLinkedRepoInvite(ctx, g.ID, "dd", now); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("revoke a used invite: %v", err)
	}
	// b expires one minute after it was created.
	late := b.ExpiresAt
	if got := ids(late); len(got) != 1 || got[0] != "aa" {
		t.Fatalf("outstanding once b expired: %v", got)
	}
	if err := s.RevokeLinkedRepoInvite(ctx, g.ID, "bb", late); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("revoke an expired invite: %v", err)
	}
	if err := s.RedeemLinkedRepoInvite(ctx, "bb", g.ID, "did:plc:carol", sess, late); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("redeem an expired invite: %v", err)
	}
	if got, _ := s.GetLinkedRepoInvite(ctx, "cc"); got.RevokedAt.IsZero() || got.Outstanding(now) {
		t.Fatalf("revoked invite: %+v", got)
	}
	if err := s.DeleteLinkedRepo(ctx, g.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetLinkedRepoInvite(ctx, "aa"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("invite after its grant was deleted: %v", err)
	}
	if _, err := s.GetLinkedRepoInvite(ctx, "xx"); err != nil {
		t.Fatalf("another grant's invite: %v", err)
	}
}

// testLinkedRepoInviteRace: of concurrent redemptions of one invite,
// exactly one succeeds.
func testLinkedRepoInviteRace(t *testing.T, s storage.Store) {
	ctx := context.Background()
	g := linkedRepo(storage.NewID(), "", "", base)
	createLinkedRepoT(t, s, g)
	if err := s.CreateLinkedRepoInvite(ctx, linkedRepoInvite("once", g.ID, base, time.Hour)); err != nil {
		t.Fatal(err)
	}
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sess := storage.LinkedRepoSession{GrantID: g.ID, Sealed: "s", ExpiresAt: base.Add(time.Hour), UpdatedAt: base}
			errs[i] = s.RedeemLinkedRepoInvite(ctx, "once", g.ID, "did:plc:carol", sess, base.Add(time.Second))
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, storage.ErrNotFound):
			t.Fatalf("concurrent use: %v", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d of %d concurrent uses succeeded", ok, n)
	}
}
