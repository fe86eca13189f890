package storagetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lexview/lexview/storage"
)

// RunOAuth runs the suite for the OAuthStore (DPoP key provisions, device
// sessions and client authentication keys) and the DPoPReplayStore. Each
// subtest gets a fresh store.
func RunOAuth(t *testing.T, open func(t testing.TB) storage.Store) {
	tests := []storeCase{
		{"ProvisionsAreSingleUse", testProvisionsSingleUse},
		{"ProvisionConsumeRace", testProvisionConsumeRace},
		{"DeviceSessions", testDeviceSessions},
		{"SessionTokensOptimistic", testSessionTokensOptimistic},
		{"AuthKeyStateMachine", testAuthKeyStateMachine},
		{"AuthKeyRevokeAllAndSweep", testAuthKeyRevokeAllAndSweep},
		{"AuthKeyCreateRace", testAuthKeyCreateRace},
		{"OAuthRowsCascadeWithClient", testOAuthCascade},
		{"DPoPReplays", testDPoPReplays},
		{"DPoPReplayRace", testDPoPReplayRace},
	}
	runCases(t, open, tests)
}

func oauthClient(t *testing.T, s storage.Store, key string) storage.APIClient {
	t.Helper()
	c := client(key, "https://app.test/"+key+".json", "")
	if err := s.CreateAPIClient(context.Background(), c); err != nil {
		t.Fatalf("create client: %v", err)
	}
	return c
}

func provision(clientID, handle string, expires time.Time) storage.DPoPProvision {
	return storage.DPoPProvision{
		ID: storage.NewID(), HandleHash: "hash-" + handle, ClientID: clientID, SealedKey: "v1:sealed-key-" + handle,
		JKT: "jkt-" + handle, CreatedAt: base, ExpiresAt: expires,
	}
}

func testProvisionsSingleUse(t *testing.T, s storage.Store) {
	ctx := context.Background()
	c := oauthClient(t, s, "hvc_a")
	other := oauthClient(t, s, "hvc_b")
	p := provision(c.ID, "p1", base.Add(10*time.Minute))
	p.PKCEChallenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
	if err := s.CreateDPoPProvision(ctx, p); err != nil {
		t.Fatal(err)
	}
	dup := provision(c.ID, "p1", base.Add(10*time.Minute))
	if err := s.CreateDPoPProvision(ctx, dup); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("duplicate handle: %v", err)
	}
	if _, err := s.ConsumeDPoPProvision(ctx, other.ID, p.HandleHash, base); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("consumed by another client: %v", err)
	}
	now := base.Add(time.Minute)
	// Looking does not use it; only its client sees it, and only unused.
	if _, err := s.GetDPoPProvision(ctx, other.ID, p.HandleHash, now); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("seen by another client: %v", err)
	}
	if _, err := s.GetDPoPProvision(ctx, c.ID, p.HandleHash, p.ExpiresAt); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("seen at expiry: %v", err)
	}
	for range 2 {
		peek, err := s.GetDPoPProvision(ctx, c.ID, p.HandleHash, now)
		if err != nil || peek.ID != p.ID || peek.SealedKey != p.SealedKey || peek.PKCEChallenge != p.PKCEChallenge || !peek.UsedAt.IsZero() {
			t.Fatalf("get: %+v %v", peek, err)
		}
	}
	got, err := s.ConsumeDPoPProvision(ctx, c.ID, p.HandleHash, now)
	if err != nil || got.ID != p.ID || got.ClientID != c.ID || got.SealedKey != p.SealedKey || got.JKT != p.JKT ||
		got.PKCEChallenge != p.PKCEChallenge || !got.CreatedAt.Equal(base) || !got.ExpiresAt.Equal(p.ExpiresAt) || !got.UsedAt.Equal(now) {
		t.Fatalf("consume: %+v %v", got, err)
	}
	if _, err := s.ConsumeDPoPProvision(ctx, c.ID, p.HandleHash, now); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("second consume: %v", err)
	}
	if _, err := s.GetDPoPProvision(ctx, c.ID, p.HandleHash, now); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("get after use: %v", err)
	}

	conf := provision(c.ID, "p2", base.Add(10*time.Minute))
	if err := s.CreateDPoPProvision(ctx, conf); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ConsumeDPoPProvision(ctx, c.ID, conf.HandleHash, base.Add(10*time.Minute)); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("consumed at expiry: %v", err)
	}
	got, err = s.ConsumeDPoPProvision(ctx, c.ID, conf.HandleHash, base.Add(9*time.Minute))
	if err != nil || got.PKCEChallenge != "" {
		t.Fatalf("confidential provision: %+v %v", got, err)
	}
	if _, err := s.ConsumeDPoPProvision(ctx, c.ID, "hash-unknown", base); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("unknown handle: %v", err)
	}

	if err := s.CreateDPoPProvision(ctx, provision(c.ID, "p3", base.Add(time.Hour))); err != nil {
		t.Fatal(err)
	}
	n, err := s.PurgeDPoPProvisions(ctx, base.Add(30*time.Minute))
	if err != nil || n != 2 {
		t.Fatalf("purge: %d %v", n, err)
	}
	if _, err := s.ConsumeDPoPProvision(ctx, c.ID, "hash-p3", base); err != nil {
		t.Fatalf("unexpired provision purged: %v", err)
	}
}

func testProvisionConsumeRace(t *testing.T, s storage.Store) {
	ctx := context.Background()
	c := oauthClient(t, s, "hvc_a")
	p := provision(c.ID, "race", base.Add(10*time.Minute))
	if err := s.CreateDPoPProvision(ctx, p); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.ConsumeDPoPProvision(ctx, c.ID, p.HandleHash, base)
			if err != nil && !errors.Is(err, storage.ErrNotFound) {
				t.Error(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				wins++
			}
		}()
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("%d consumers won", wins)
	}
}

func session(clientID, did, jkt string, created time.Time) storage.DeviceSession {
	return storage.DeviceSession{
		ID: storage.NewID(), ClientID: clientID, DID: did, DPoPKeyID: storage.NewID(), JKT: jkt,
		SealedDPoPKey: "v1:key-" + jkt, SealedAccessToken: "v1:at-" + jkt, SealedRefreshToken: "v1:rt-" + jkt,
		ExpiresAt: created.Add(time.Hour), Scopes: "atproto transition:generic", PDSURL: "https://pds.test",
		Issuer: "https://pds.test", CreatedAt: created, UpdatedAt: created,
	}
}

func createSessionT(t *testing.T, s storage.Store, ds storage.DeviceSession) {
	t.Helper()
	if err := s.CreateDeviceSession(context.Background(), ds); err != nil {
		t.Fatalf("create session: %v", err)
	}
}

func sessionIDs(list []storage.DeviceSession) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = s.ID
	}
	return out
}

func testDeviceSessions(t *testing.T, s storage.Store) {
	ctx := context.Background()
	c := oauthClient(t, s, "hvc_a")
	other := oauthClient(t, s, "hvc_b")
	const alice, bob = "did:plc:alice", "did:plc:bob"
	phone := session(c.ID, alice, "jkt-phone", base)
	phone.AuthKID = "kid-1"
	laptop := session(c.ID, alice, "jkt-laptop", base.Add(time.Minute))
	bobs := session(c.ID, bob, "jkt-bob", base)
	foreign := session(other.ID, alice, "jkt-phone", base) // same key under another client is another session
	for _, ds := range []storage.DeviceSession{phone, laptop, bobs, foreign} {
		createSessionT(t, s, ds)
	}
	if err := s.CreateDeviceSession(ctx, session(c.ID, bob, "jkt-phone", base)); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("second session for one key: %v", err)
	}

	got, err := s.GetDeviceSession(ctx, phone.ID)
	phone.Version = 1
	if err != nil || got != phone {
		t.Fatalf("round trip:\n got %+v\nwant %+v\n%v", got, phone, err)
	}
	if got, err := s.GetDeviceSessionByJKT(ctx, c.ID, "jkt-laptop"); err != nil || got.ID != laptop.ID || got.AuthKID != "" {
		t.Fatalf("by jkt: %+v %v", got, err)
	}
	if _, err := s.GetDeviceSessionByJKT(ctx, c.ID, "jkt-none"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("by unknown jkt: %v", err)
	}
	if _, err := s.GetDeviceSession(ctx, storage.NewID()); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("unknown id: %v", err)
	}
	list, err := s.ListDeviceSessions(ctx, c.ID, alice)
	if err != nil || fmt.Sprint(sessionIDs(list)) != fmt.Sprint([]string{laptop.ID, phone.ID}) {
		t.Fatalf("list newest first: %v %v", sessionIDs(list), err)
	}
	if list, err := s.ListDeviceSessions(ctx, c.ID, "did:plc:nobody"); err != nil || list == nil || len(list) != 0 {
		t.Fatalf("empty list: %#v %v", list, err)
	}

	for name, args := range map[string][3]string{
		"another client": {other.ID, alice, phone.ID},
		"another user":   {c.ID, bob, phone.ID},
		"unknown id":     {c.ID, alice, storage.NewID()},
	} {
		if err := s.DeleteDeviceSession(ctx, args[0], args[1], args[2]); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("delete, %s: %v", name, err)
		}
	}
	if err := s.DeleteDeviceSession(ctx, c.ID, alice, phone.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetDeviceSession(ctx, phone.ID); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("deleted session still there: %v", err)
	}
	createSessionT(t, s, session(c.ID, alice, "jkt-tablet", base))
	n, err := s.DeleteDeviceSessions(ctx, c.ID, alice)
	if err != nil || n != 2 {
		t.Fatalf("delete all of alice: %d %v", n, err)
	}
	if _, err := s.GetDeviceSession(ctx, foreign.ID); err != nil {
		t.Fatalf("another client's session went too: %v", err)
	}
	if _, err := s.GetDeviceSession(ctx, bobs.ID); err != nil {
		t.Fatalf("another user's session went too: %v", err)
	}
}

func testSessionTokensOptimistic(t *testing.T, s storage.Store) {
	ctx := context.Background()
	c := oauthClient(t, s, "hvc_a")
	ds := session(c.ID, "did:plc:alice", "jkt", base)
	createSessionT(t, s, ds)
	later := base.Add(time.Hour)
	upd := storage.SessionTokens{SessionID: ds.ID, Version: 1, SealedAccessToken: "v1:at2", SealedRefreshToken: "v1:rt2",
		ExpiresAt: later.Add(time.Hour), UpdatedAt: later}
	got, err := s.UpdateDeviceSessionTokens(ctx, upd)
	if err != nil || got.Version != 2 || got.SealedAccessToken != "v1:at2" || got.SealedRefreshToken != "v1:rt2" ||
		!got.ExpiresAt.Equal(later.Add(time.Hour)) || !got.UpdatedAt.Equal(later) || got.Scopes != ds.Scopes ||
		!got.CreatedAt.Equal(base) || got.SealedDPoPKey != ds.SealedDPoPKey {
		t.Fatalf("update: %+v %v", got, err)
	}
	loser := upd
	loser.SealedAccessToken, loser.SealedRefreshToken = "v1:lost", "v1:lost"
	if _, err := s.UpdateDeviceSessionTokens(ctx, loser); !errors.Is(err, storage.ErrStale) {
		t.Fatalf("stale update: %v", err)
	}
	if cur, _ := s.GetDeviceSession(ctx, ds.ID); cur.SealedRefreshToken != "v1:rt2" {
		t.Fatalf("stale update overwrote: %+v", cur)
	}
	upd.Version, upd.Scopes = 2, "atproto"
	if got, err := s.UpdateDeviceSessionTokens(ctx, upd); err != nil || got.Version != 3 || got.Scopes != "atproto" {
		t.Fatalf("scopes update: %+v %v", got, err)
	}
	upd.SessionID = storage.NewID()
	if _, err := s.UpdateDeviceSessionTokens(ctx, upd); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("missing session: %v", err)
	}

	// Racing refreshes from one version: exactly one wins.
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.UpdateDeviceSessionTokens(ctx, storage.SessionTokens{SessionID: ds.ID, Version: 3,
				SealedAccessToken: fmt.Sprint("v1:at-", i), SealedRefreshToken: fmt.Sprint("v1:rt-", i), ExpiresAt: later, UpdatedAt: later})
			if err != nil && !errors.Is(err, storage.ErrStale) {
				t.Error(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				wins++
			}
		}()
	}
	wg.Wait()
	if cur, _ := s.GetDeviceSession(ctx, ds.ID); wins != 1 || cur.Version != 4 {
		t.Fatalf("%d refreshes won, version %d", wins, cur.Version)
	}
}

func authKey(clientID, kid string, created time.Time) storage.ClientAuthKey {
	return storage.ClientAuthKey{
		KID: kid, ClientID: clientID, SealedPrivateKey: "v1:priv-" + kid, CreatedAt: created,
		PublicJWK: []byte(`{"kty":"EC","crv":"P-256","x":"x-` + kid + `","y":"y","kid":"` + kid + `","alg":"ES256","use":"sig"}`),
	}
}

func keyStatuses(t *testing.T, s storage.Store, clientID string) string {
	t.Helper()
	keys, err := s.ListClientAuthKeys(context.Background(), clientID)
	if err != nil {
		t.Fatalf("list keys: %v", err)
	}
	out := ""
	for _, k := range keys {
		out += fmt.Sprintf("%s:%s:%d ", k.KID, k.Status, k.SessionCount)
	}
	return out
}

func testAuthKeyStateMachine(t *testing.T, s storage.Store) {
	ctx := context.Background()
	c := oauthClient(t, s, "hvc_a")
	if _, err := s.RotateClientAuthKey(ctx, c.ID, authKey(c.ID, "k0", base), base); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("rotate without a key: %v", err)
	}
	if _, err := s.GetCurrentClientAuthKey(ctx, c.ID); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("current without a key: %v", err)
	}
	k1 := authKey(c.ID, "k1", base)
	got, created, err := s.CreateClientAuthKey(ctx, k1)
	if err != nil || !created || got.Status != storage.AuthKeyCurrent || got.KID != "k1" {
		t.Fatalf("create: %+v %v %v", got, created, err)
	}
	got, created, err = s.CreateClientAuthKey(ctx, authKey(c.ID, "k-other", base.Add(time.Second)))
	if err != nil || created || got.KID != "k1" {
		t.Fatalf("create is idempotent: %+v %v %v", got, created, err)
	}
	got, err = s.GetClientAuthKey(ctx, c.ID, "k1")
	if err != nil || got.SealedPrivateKey != k1.SealedPrivateKey || !got.CreatedAt.Equal(base) || !got.RetiredAt.IsZero() {
		t.Fatalf("get: %+v %v", got, err)
	}
	sameJSON(t, got.PublicJWK, k1.PublicJWK)

	s1 := session(c.ID, "did:plc:alice", "jkt-1", base)
	s1.AuthKID = "k1"
	s2 := session(c.ID, "did:plc:bob", "jkt-2", base)
	s2.AuthKID = "k1"
	createSessionT(t, s, s1)
	createSessionT(t, s, s2)

	rotated := base.Add(time.Hour)
	retired, err := s.RotateClientAuthKey(ctx, c.ID, authKey(c.ID, "k2", rotated), rotated)
	if err != nil || retired.KID != "k1" || retired.Status != storage.AuthKeyRetiring || !retired.RetiredAt.Equal(rotated) || retired.SessionCount != 2 {
		t.Fatalf("rotate: %+v %v", retired, err)
	}
	if cur, err := s.GetCurrentClientAuthKey(ctx, c.ID); err != nil || cur.KID != "k2" || cur.SessionCount != 0 {
		t.Fatalf("current after rotate: %+v %v", cur, err)
	}
	if _, err := s.RotateClientAuthKey(ctx, c.ID, authKey(c.ID, "k1", rotated), rotated); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("rotate to a taken kid: %v", err)
	}
	if got := keyStatuses(t, s, c.ID); got != "k2:current:0 k1:retiring:2 " {
		t.Fatalf("after a failed rotate: %s", got)
	}

	if _, err := s.RevokeClientAuthKey(ctx, c.ID, "k2", rotated); !errors.Is(err, storage.ErrCurrentKey) {
		t.Fatalf("revoke current: %v", err)
	}
	if _, err := s.RevokeClientAuthKey(ctx, c.ID, "nope", rotated); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("revoke unknown: %v", err)
	}
	other := oauthClient(t, s, "hvc_b")
	if _, err := s.RevokeClientAuthKey(ctx, other.ID, "k1", rotated); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("revoke through another client: %v", err)
	}
	n, err := s.RevokeClientAuthKey(ctx, c.ID, "k1", rotated.Add(time.Minute))
	if err != nil || n != 2 {
		t.Fatalf("revoke retiring: %d %v", n, err)
	}
	if _, err := s.GetDeviceSession(ctx, s1.ID); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("session pinned to a revoked key survived: %v", err)
	}
	got, _ = s.GetClientAuthKey(ctx, c.ID, "k1")
	if got.Status != storage.AuthKeyRevoked || !got.RevokedAt.Equal(rotated.Add(time.Minute)) || !got.RetiredAt.Equal(rotated) {
		t.Fatalf("revoked key: %+v", got)
	}
	if n, err := s.RevokeClientAuthKey(ctx, c.ID, "k1", rotated); err != nil || n != 0 {
		t.Fatalf("revoke twice: %d %v", n, err)
	}
	if got := keyStatuses(t, s, c.ID); got != "k2:current:0 k1:revoked:0 " {
		t.Fatalf("final: %s", got)
	}
}

func testAuthKeyRevokeAllAndSweep(t *testing.T, s storage.Store) {
	ctx := context.Background()
	c := oauthClient(t, s, "hvc_a")
	if _, _, err := s.RevokeAllClientAuthKeys(ctx, c.ID, base); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("revoke all without keys: %v", err)
	}
	if _, _, err := s.CreateClientAuthKey(ctx, authKey(c.ID, "k1", base)); err != nil {
		t.Fatal(err)
	}
	for i, kid := range []string{"k2", "k3", "k4"} {
		at := base.Add(time.Duration(i+1) * time.Hour)
		if _, err := s.RotateClientAuthKey(ctx, c.ID, authKey(c.ID, kid, at), at); err != nil {
			t.Fatal(err)
		}
	}
	// k1, k2, k3 retiring (retired at +1h, +2h, +3h); k2 has a session.
	pinned := session(c.ID, "did:plc:alice", "jkt-1", base)
	pinned.AuthKID = "k2"
	createSessionT(t, s, pinned)
	unpinned := session(c.ID, "did:plc:alice", "jkt-2", base)
	createSessionT(t, s, unpinned)

	swept, err := s.SweepRetiringClientAuthKeys(ctx, base.Add(150*time.Minute))
	if err != nil || len(swept) != 1 || swept[0].KID != "k1" || swept[0].ClientID != c.ID {
		t.Fatalf("sweep with grace: %+v %v", swept, err)
	}
	if swept, err := s.SweepRetiringClientAuthKeys(ctx, base.Add(24*time.Hour)); err != nil || len(swept) != 1 || swept[0].KID != "k3" {
		t.Fatalf("sweep: %+v %v", swept, err)
	}
	if got := keyStatuses(t, s, c.ID); got != "k4:current:0 k2:retiring:1 " {
		t.Fatalf("after sweeps: %s", got)
	}

	keys, sessions, err := s.RevokeAllClientAuthKeys(ctx, c.ID, base.Add(time.Hour))
	if err != nil || keys != 2 || sessions != 1 {
		t.Fatalf("revoke all: %d keys, %d sessions, %v", keys, sessions, err)
	}
	if _, err := s.GetDeviceSession(ctx, unpinned.ID); err != nil {
		t.Fatalf("unpinned session destroyed: %v", err)
	}
	if got := keyStatuses(t, s, c.ID); got != "k4:revoked:0 k2:revoked:0 " {
		t.Fatalf("after revoke all: %s", got)
	}
	// Only revoked keys left: the client holds none.
	if keys, sessions, err := s.RevokeAllClientAuthKeys(ctx, c.ID, base); !errors.Is(err, storage.ErrNotFound) || keys != 0 || sessions != 0 {
		t.Fatalf("revoke all again: %d keys, %d sessions, %v", keys, sessions, err)
	}
	if got := keyStatuses(t, s, c.ID); got != "k4:revoked:0 k2:revoked:0 " {
		t.Fatalf("after refused revoke all: %s", got)
	}
	if swept, err := s.SweepRetiringClientAuthKeys(ctx, base.Add(48*time.Hour)); err != nil || len(swept) != 0 {
		t.Fatalf("sweep removed revoked keys: %+v %v", swept, err)
	}
	got, created, err := s.CreateClientAuthKey(ctx, authKey(c.ID, "k5", base))
	if err != nil || !created || got.KID != "k5" {
		t.Fatalf("new key after revoke all: %+v %v %v", got, created, err)
	}
}

func testAuthKeyCreateRace(t *testing.T, s storage.Store) {
	ctx := context.Background()
	c := oauthClient(t, s, "hvc_a")
	var wg sync.WaitGroup
	var mu sync.Mutex
	kids := map[string]int{}
	createdCount := 0
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, created, err := s.CreateClientAuthKey(ctx, authKey(c.ID, fmt.Sprint("k", i), base))
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			kids[k.KID]++
			if created {
				createdCount++
			}
		}()
	}
	wg.Wait()
	if createdCount != 1 || len(kids) != 1 {
		t.Fatalf("created %d keys; callers saw %v", createdCount, kids)
	}
}

func testOAuthCascade(t *testing.T, s storage.Store) {
	ctx := context.Background()
	c := oauthClient(t, s, "hvc_a")
	p := provision(c.ID, "p", base.Add(time.Hour))
	ds := session(c.ID, "did:plc:alice", "jkt", base)
	if err := s.CreateDPoPProvision(ctx, p); err != nil {
		t.Fatal(err)
	}
	createSessionT(t, s, ds)
	if _, _, err := s.CreateClientAuthKey(ctx, authKey(c.ID, "k1", base)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteAPIClient(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetDeviceSession(ctx, ds.ID); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("session survived its client: %v", err)
	}
	if _, err := s.GetClientAuthKey(ctx, c.ID, "k1"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("auth key survived its client: %v", err)
	}
	if n, err := s.PurgeDPoPProvisions(ctx, base.Add(100*time.Hour)); err != nil || n != 0 {
		t.Fatalf("provision survived its client: %d %v", n, err)
	}
}
