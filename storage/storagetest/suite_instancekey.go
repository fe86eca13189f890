package storagetest

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/lexview/lexview/storage"
)

// RunInstanceKey runs the suite for the instance's own OAuth client keys
// (InstanceKeyStore). Each subtest gets a fresh store.
func RunInstanceKey(t *testing.T, open func(t testing.TB) storage.Store) {
	tests := []storeCase{
		{"LifeCycle", testInstanceKeyLifeCycle},
		{"OneCurrentUnderRace", testInstanceKeyRace},
	}
	runCases(t, open, tests)
}

func instanceKey(kid string, at time.Time) storage.ClientAuthKey {
	return storage.ClientAuthKey{
		KID: kid, SealedPrivateKey: "sealed-" + kid, Status: storage.AuthKeyCurrent, CreatedAt: at,
		PublicJWK: json.RawMessage(`{"kty":"EC","crv":"P-256","x":"` + kid + `","y":"y"}`),
	}
}

func testInstanceKeyLifeCycle(t *testing.T, s storage.Store) {
	ctx := context.Background()
	if list, err := s.ListInstanceKeys(ctx); err != nil || len(list) != 0 {
		t.Fatalf("empty store: %v %v", list, err)
	}
	if _, err := s.RotateInstanceKey(ctx, instanceKey("k0", base), base); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("rotate with no current key: %v", err)
	}
	first, created, err := s.CreateInstanceKey(ctx, instanceKey("k1", base))
	if err != nil || !created || first.KID != "k1" || first.Status != storage.AuthKeyCurrent {
		t.Fatalf("create: %+v %v %v", first, created, err)
	}
	again, created, err := s.CreateInstanceKey(ctx, instanceKey("k2", base.Add(time.Second)))
	if err != nil || created || again.KID != "k1" {
		t.Fatalf("create is idempotent: %+v %v %v", again, created, err)
	}
	got, err := s.GetInstanceKey(ctx, "k1")
	if err != nil || got.SealedPrivateKey != "sealed-k1" || !got.CreatedAt.Equal(base) || !got.RetiredAt.IsZero() {
		t.Fatalf("get: %+v %v", got, err)
	}
	var jwk map[string]string
	if err := json.Unmarshal(got.PublicJWK, &jwk); err != nil || jwk["x"] != "k1" || jwk["crv"] != "P-256" {
		t.Fatalf("public JWK round trip: %s %v", got.PublicJWK, err)
	}
	if _, err := s.GetInstanceKey(ctx, "nope"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("get unknown: %v", err)
	}
	if err := s.RevokeInstanceKey(ctx, "k1", base); !errors.Is(err, storage.ErrCurrentKey) {
		t.Fatalf("revoke current: %v", err)
	}
	at := base.Add(time.Minute)
	retired, err := s.RotateInstanceKey(ctx, instanceKey("k2", at), at)
	if err != nil || retired.KID != "k1" || retired.Status != storage.AuthKeyRetiring || !retired.RetiredAt.Equal(at) {
		t.Fatalf("rotate: %+v %v", retired, err)
	}
	if _, err := s.RotateInstanceKey(ctx, instanceKey("k2", at), at); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("rotate to a taken kid: %v", err)
	}
	list, err := s.ListInstanceKeys(ctx)
	if err != nil || len(list) != 2 || list[0].KID != "k2" || list[0].Status != storage.AuthKeyCurrent ||
		list[1].KID != "k1" || list[1].Status != storage.AuthKeyRetiring {
		t.Fatalf("list after rotate (newest first): %+v %v", list, err)
	}
	if err := s.RevokeInstanceKey(ctx, "nope", at); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("revoke unknown: %v", err)
	}
	revokedAt := at.Add(time.Minute)
	if err := s.RevokeInstanceKey(ctx, "k1", revokedAt); err != nil {
		t.Fatalf("revoke retiring: %v", err)
	}
	if err := s.RevokeInstanceKey(ctx, "k1", revokedAt.Add(time.Hour)); err != nil {
		t.Fatalf("revoke again is a no-op: %v", err)
	}
	got, err = s.GetInstanceKey(ctx, "k1")
	if err != nil || got.Status != storage.AuthKeyRevoked || !got.RevokedAt.Equal(revokedAt) || !got.RetiredAt.Equal(at) {
		t.Fatalf("revoked key: %+v %v", got, err)
	}
}

func testInstanceKeyRace(t *testing.T, s storage.Store) {
	ctx := context.Background()
	const n = 8
	kids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			k, _, err := s.CreateInstanceKey(ctx, instanceKey("race-"+string(rune('a'+i)), base))
			if err != nil {
				t.Errorf("create %d: %v", i, err)
			}
			kids[i] = k.KID
		})
	}
	wg.Wait()
	for _, kid := range kids[1:] {
		if kid != kids[0] {
			t.Fatalf("concurrent creations returned different current keys: %v", kids)
		}
	}
	list, err := s.ListInstanceKeys(ctx)
	if err != nil || len(list) != 1 {
		t.Fatalf("one key stored: %+v %v", list, err)
	}
}
