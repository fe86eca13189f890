package storagetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/lexview/lexview/storage"
)

// RunOAuthClient runs the suite for the instance's own OAuth client state
// (OAuthClientStore). Each subtest gets a fresh store.
func RunOAuthClient(t *testing.T, open func(t testing.TB) storage.Store) {
	tests := []storeCase{
		{"AuthRequestSingleUse", testAuthRequestSingleUse},
		{"AuthRequestExpiry", testAuthRequestExpiry},
		{"AuthRequestTakenOnceUnderRace", testAuthRequestRace},
		{"ClientSessions", testClientSessions},
	}
	runCases(t, open, tests)
}

func authRequest(state string, at time.Time, ttl time.Duration) storage.OAuthAuthRequest {
	return storage.OAuthAuthRequest{
		State: state, Purpose: "admin_signin", Subject: "grant-1", DomainOrigin: "https://a.example",
		ClientID: "https://a.example/oauth-client-metadata.json", AccountDID: "did:plc:alice",
		SealedData: "sealed-" + state, CreatedAt: at, ExpiresAt: at.Add(ttl),
	}
}

func testAuthRequestSingleUse(t *testing.T, s storage.Store) {
	ctx := context.Background()
	want := authRequest("st1", base, 10*time.Minute)
	if err := s.CreateOAuthAuthRequest(ctx, want); err != nil {
		t.Fatalf("create: %v", err)
	}
	if err := s.CreateOAuthAuthRequest(ctx, authRequest("st1", base, time.Minute)); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("create with a taken state: %v", err)
	}
	if _, err := s.TakeOAuthAuthRequest(ctx, "nope", base); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("take unknown: %v", err)
	}
	got, err := s.TakeOAuthAuthRequest(ctx, "st1", base.Add(time.Minute))
	if err != nil {
		t.Fatalf("take: %v", err)
	}
	if got.State != want.State || got.Purpose != want.Purpose || got.Subject != want.Subject ||
		got.DomainOrigin != want.DomainOrigin || got.ClientID != want.ClientID || got.AccountDID != want.AccountDID ||
		got.SealedData != want.SealedData || !got.CreatedAt.Equal(want.CreatedAt) || !got.ExpiresAt.Equal(want.ExpiresAt) {
		t.Fatalf("take returned %+v, want %+v", got, want)
	}
	if _, err := s.TakeOAuthAuthRequest(ctx, "st1", base.Add(time.Minute)); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("second take of a used state: %v", err)
	}
}

func testAuthRequestExpiry(t *testing.T, s storage.Store) {
	ctx := context.Background()
	for _, st := range []string{"old1", "old2", "fresh"} {
		ttl := time.Minute
		if st == "fresh" {
			ttl = time.Hour
		}
		if err := s.CreateOAuthAuthRequest(ctx, authRequest(st, base, ttl)); err != nil {
			t.Fatalf("create %s: %v", st, err)
		}
	}
	later := base.Add(time.Minute) // old ones expire exactly now
	if _, err := s.TakeOAuthAuthRequest(ctx, "old1", later); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("take expired: %v", err)
	}
	if _, err := s.TakeOAuthAuthRequest(ctx, "old1", base); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("an expired state taken once is gone: %v", err)
	}
	n, err := s.DeleteExpiredOAuthAuthRequests(ctx, later)
	if err != nil || n != 1 {
		t.Fatalf("delete expired: %d %v (want 1: old2)", n, err)
	}
	if _, err := s.TakeOAuthAuthRequest(ctx, "old2", base); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("swept state: %v", err)
	}
	if _, err := s.TakeOAuthAuthRequest(ctx, "fresh", later); err != nil {
		t.Fatalf("the unexpired state survives the sweep: %v", err)
	}
}

func testAuthRequestRace(t *testing.T, s storage.Store) {
	ctx := context.Background()
	if err := s.CreateOAuthAuthRequest(ctx, authRequest("race", base, time.Hour)); err != nil {
		t.Fatalf("create: %v", err)
	}
	const n = 8
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.TakeOAuthAuthRequest(ctx, "race", base)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won++
			case !errors.Is(err, storage.ErrNotFound):
				t.Errorf("take: %v", err)
			}
		}()
	}
	wg.Wait()
	if won != 1 {
		t.Fatalf("%d concurrent takes succeeded, want exactly 1", won)
	}
}

func testClientSessions(t *testing.T, s storage.Store) {
	ctx := context.Background()
	if _, err := s.GetOAuthClientSession(ctx, "did:plc:alice", "s1"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("get unknown: %v", err)
	}
	sess := storage.OAuthClientSession{
		DID: "did:plc:alice", SessionID: "s1", Purpose: "linked_repo", DomainOrigin: "https://a.example",
		ClientID: "https://a.example/oauth-client-metadata.json", SealedData: "sealed-1", CreatedAt: base, UpdatedAt: base,
	}
	if err := s.PutOAuthClientSession(ctx, sess); err != nil {
		t.Fatalf("put: %v", err)
	}
	other := sess
	other.SessionID, other.SealedData = "s2", "sealed-other"
	if err := s.PutOAuthClientSession(ctx, other); err != nil {
		t.Fatalf("put a second session of the DID: %v", err)
	}
	upd := sess
	upd.SealedData, upd.CreatedAt, upd.UpdatedAt = "sealed-2", base.Add(time.Hour), base.Add(time.Minute)
	if err := s.PutOAuthClientSession(ctx, upd); err != nil {
		t.Fatalf("put again (upsert): %v", err)
	}
	got, err := s.GetOAuthClientSession(ctx, "did:plc:alice", "s1")
	if err != nil || got.SealedData != "sealed-2" || got.Purpose != "linked_repo" || got.ClientID != sess.ClientID ||
		got.DomainOrigin != sess.DomainOrigin || !got.CreatedAt.Equal(base) || !got.UpdatedAt.Equal(base.Add(time.Minute)) {
		t.Fatalf("get after upsert (created_at kept): %+v %v", got, err)
	}
	if err := s.DeleteOAuthClientSession(ctx, "did:plc:alice", "s1"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if err := s.DeleteOAuthClientSession(ctx, "did:plc:alice", "s1"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("delete again: %v", err)
	}
	if got, err := s.GetOAuthClientSession(ctx, "did:plc:alice", "s2"); err != nil || got.SealedData != "sealed-other" {
		t.Fatalf("the other session is untouched: %+v %v", got, err)
	}
}
