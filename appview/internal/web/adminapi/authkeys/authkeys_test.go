package authkeys_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/service/clientkeys"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

type keyList struct {
	Keys []struct {
		KID          string `json:"kid"`
		Status       string `json:"status"`
		CreatedAt    string `json:"created_at"`
		SessionCount int64  `json:"session_count"`
	} `json:"keys"`
	JWKSURI string `json:"jwks_uri"`
}

// statuses renders a listing as "kid:status:sessions" strings.
func (l keyList) statuses() []string {
	var out []string
	for _, k := range l.Keys {
		out = append(out, fmt.Sprintf("%s:%s:%d", k.KID, k.Status, k.SessionCount))
	}
	return out
}

// TestKeyStateMachine walks every row of the client authentication key
// state table through the admin API.
func TestKeyStateMachine(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env, su := newEnv(t, open, appview.Config{PublicURL: "https://lexview.example/"})
		c := newClient(t, env, "")
		wantURI := "https://lexview.example/oauth/clients/" + c.ID + "/jwks.json"
		list := func() keyList {
			t.Helper()
			r := su.Do(t, "GET", keysPath(c.ID, "/auth-keys"), nil)
			expect(t, r, 200, "")
			var l keyList
			r.JSON(t, &l)
			if l.JWKSURI != wantURI {
				t.Fatalf("jwks_uri %q, want %q", l.JWKSURI, wantURI)
			}
			return l
		}

		// Unknown clients.
		for _, route := range []string{"POST /auth-key", "GET /auth-key", "GET /auth-keys", "POST /auth-key/rotate",
			"POST /auth-key/recheck", "DELETE /auth-key/somekid", "DELETE /auth-keys"} {
			method, suffix, _ := strings.Cut(route, " ")
			expect(t, su.Do(t, method, keysPath(storage.NewID(), suffix), nil), 404, "API client not found")
		}

		// No key yet.
		expect(t, su.Do(t, "GET", keysPath(c.ID, "/auth-key"), nil), 404, "authentication key not found")
		if l := list(); len(l.Keys) != 0 {
			t.Fatalf("keys before creation: %+v", l)
		}
		expect(t, su.Do(t, "POST", keysPath(c.ID, "/auth-key/rotate"), nil), 400, "the client has no authentication key")
		expect(t, su.Do(t, "DELETE", keysPath(c.ID, "/auth-keys"), nil), 400, "the client holds no authentication key")
		expect(t, su.Do(t, "DELETE", keysPath(c.ID, "/auth-key/nokid"), nil), 404, "authentication key not found")

		// (none) → current, idempotently.
		r := su.Do(t, "POST", keysPath(c.ID, "/auth-key"), nil)
		expect(t, r, 200, "")
		created := r.Object(t)
		kid1, _ := created["kid"].(string)
		if kid1 == "" || created["jwks_uri"] != wantURI || len(created) != 2 {
			t.Fatalf("create: %s", r.Raw)
		}
		if again := createKey(t, su, c.ID); again != kid1 {
			t.Fatalf("second create gave %q, want the existing %q", again, kid1)
		}
		r = su.Do(t, "GET", keysPath(c.ID, "/auth-key"), nil)
		expect(t, r, 200, "")
		cur := r.Object(t)
		if cur["kid"] != kid1 || cur["status"] != "current" || cur["session_count"] != 0.0 || cur["jwks_uri"] != wantURI {
			t.Fatalf("current key: %s", r.Raw)
		}
		if _, err := time.Parse(time.RFC3339, cur["created_at"].(string)); err != nil {
			t.Fatalf("created_at: %v", err)
		}

		// The private key is sealed for its client and kid.
		stored, err := env.Store.GetClientAuthKey(context.Background(), c.ID, kid1)
		if err != nil {
			t.Fatal(err)
		}
		sealer := testSealer(t)
		if _, err := clientkeys.PrivateKey(sealer, stored); err != nil {
			t.Fatalf("open the sealed key: %v", err)
		}
		moved := stored
		moved.KID = "another"
		if _, err := clientkeys.PrivateKey(sealer, moved); err == nil {
			t.Fatal("the sealed key opened under another kid")
		}

		// current: revoking it is refused.
		s1 := pinSession(t, env, c.ID, kid1)
		s2 := pinSession(t, env, c.ID, kid1)
		expect(t, su.Do(t, "DELETE", keysPath(c.ID, "/auth-key/"+kid1), nil), 400, "cannot revoke the current key; rotate first")
		if !sessionExists(t, env, s1) {
			t.Fatal("refused revocation destroyed a session")
		}

		// current → retiring on rotation; the new key is current.
		kid2, retired := rotate(t, su, c.ID)
		if retired != kid1 || kid2 == kid1 || kid2 == "" {
			t.Fatalf("rotate: kid %q retired %q (was %q)", kid2, retired, kid1)
		}
		if got, want := list().statuses(), []string{kid2 + ":current:0", kid1 + ":retiring:2"}; !slices.Equal(got, want) {
			t.Fatalf("after rotation: %v, want %v", got, want)
		}
		if got := jwksKids(t, env, c.ID); !slices.Equal(got, []string{kid2, kid1}) {
			t.Fatalf("key set after rotation: %v", got)
		}

		// retiring → revoked: out of the key set at once, sessions destroyed.
		r = su.Do(t, "DELETE", keysPath(c.ID, "/auth-key/"+kid1), nil)
		expect(t, r, 200, "")
		if o := r.Object(t); o["kid"] != kid1 || o["sessions_destroyed"] != 2.0 {
			t.Fatalf("revoke: %s", r.Raw)
		}
		if sessionExists(t, env, s1) || sessionExists(t, env, s2) {
			t.Fatal("sessions of the revoked key survive")
		}
		if got := jwksKids(t, env, c.ID); !slices.Equal(got, []string{kid2}) {
			t.Fatalf("key set after revocation: %v", got)
		}
		if got, want := list().statuses(), []string{kid2 + ":current:0", kid1 + ":revoked:0"}; !slices.Equal(got, want) {
			t.Fatalf("after revocation: %v, want %v", got, want)
		}
		// Revoking it again changes nothing.
		r = su.Do(t, "DELETE", keysPath(c.ID, "/auth-key/"+kid1), nil)
		expect(t, r, 200, "")
		if o := r.Object(t); o["sessions_destroyed"] != 0.0 {
			t.Fatalf("second revoke: %s", r.Raw)
		}

		// any → revoked: revoke all.
		kid3, _ := rotate(t, su, c.ID)
		s3 := pinSession(t, env, c.ID, kid3)
		s4 := pinSession(t, env, c.ID, kid2)
		other := pinSession(t, env, c.ID, "") // not established with a client key
		if got, want := list().statuses(), []string{kid3 + ":current:1", kid2 + ":retiring:1", kid1 + ":revoked:0"}; !slices.Equal(got, want) {
			t.Fatalf("before revoke-all: %v, want %v", got, want)
		}
		r = su.Do(t, "DELETE", keysPath(c.ID, "/auth-keys"), nil)
		expect(t, r, 200, "")
		if o := r.Object(t); o["revoked"] != 2.0 || o["sessions_destroyed"] != 2.0 {
			t.Fatalf("revoke all: %s", r.Raw)
		}
		if sessionExists(t, env, s3) || sessionExists(t, env, s4) || !sessionExists(t, env, other) {
			t.Fatal("revoke all: wrong sessions destroyed")
		}
		if got := jwksKids(t, env, c.ID); len(got) != 0 {
			t.Fatalf("key set after revoke all: %v", got)
		}
		expect(t, su.Do(t, "GET", keysPath(c.ID, "/auth-key"), nil), 404, "authentication key not found")
		for _, k := range list().Keys {
			if k.Status != "revoked" {
				t.Fatalf("after revoke all: %+v", list())
			}
		}
		expect(t, su.Do(t, "POST", keysPath(c.ID, "/auth-key/rotate"), nil), 400, "the client has no authentication key")
		// Revoked keys are not held: revoking all again is refused.
		expect(t, su.Do(t, "DELETE", keysPath(c.ID, "/auth-keys"), nil), 400, "the client holds no authentication key")

		// A new key can be created afterwards.
		if kid4 := createKey(t, su, c.ID); kid4 == kid1 || kid4 == kid2 || kid4 == kid3 {
			t.Fatalf("new key after revoke all reuses %q", kid4)
		}

		want := map[string]int{
			clientkeys.EventCreated: 2, clientkeys.EventRotated: 2, clientkeys.EventRevoked: 1, clientkeys.EventRevokedAll: 1,
		}
		if got := eventCounts(t, env, c.ID); !maps.Equal(got, want) {
			t.Fatalf("events %v, want %v", got, want)
		}
	})
}

// TestRevokeAllNeedsAHeldKey: DELETE .../auth-keys answers 400 when the
// client holds no current or retiring key, whether it never had one or
// every key it had is revoked, and then changes nothing and audits nothing.
func TestRevokeAllNeedsAHeldKey(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env, su := newEnv(t, open, appview.Config{})
		c := newClient(t, env, "")
		revokeAll := func() testenv.Response { return su.Do(t, "DELETE", keysPath(c.ID, "/auth-keys"), nil) }
		statuses := func() []string {
			t.Helper()
			r := su.Do(t, "GET", keysPath(c.ID, "/auth-keys"), nil)
			expect(t, r, 200, "")
			var l keyList
			r.JSON(t, &l)
			return l.statuses()
		}

		expect(t, revokeAll(), 400, "the client holds no authentication key")

		// Current and retiring keys are held, revoked ones are not.
		kid1 := createKey(t, su, c.ID)
		kid2, _ := rotate(t, su, c.ID)
		kid3, _ := rotate(t, su, c.ID)
		expect(t, su.Do(t, "DELETE", keysPath(c.ID, "/auth-key/"+kid1), nil), 200, "")
		if got, want := statuses(), []string{kid3 + ":current:0", kid2 + ":retiring:0", kid1 + ":revoked:0"}; !slices.Equal(got, want) {
			t.Fatalf("keys: %v, want %v", got, want)
		}
		r := revokeAll()
		expect(t, r, 200, "")
		if string(r.Raw) != `{"revoked":2,"sessions_destroyed":0}` {
			t.Fatalf("revoke all: %s", r.Raw)
		}

		// Only revoked keys left.
		before := statuses()
		expect(t, revokeAll(), 400, "the client holds no authentication key")
		if got := statuses(); !slices.Equal(got, before) {
			t.Fatalf("refused revoke all changed keys: %v, was %v", got, before)
		}
		if got := eventCounts(t, env, c.ID)[clientkeys.EventRevokedAll]; got != 1 {
			t.Fatalf("%d %s events, want 1", got, clientkeys.EventRevokedAll)
		}

		// A new current key is held again.
		createKey(t, su, c.ID)
		r = revokeAll()
		expect(t, r, 200, "")
		if string(r.Raw) != `{"revoked":1,"sessions_destroyed":0}` {
			t.Fatalf("revoke all with a new key: %s", r.Raw)
		}
	})
}

// TestConcurrentCreate checks that racing creations agree on one key.
func TestConcurrentCreate(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env, su := newEnv(t, open, appview.Config{})
		c := newClient(t, env, "")
		kids := make([]string, 8)
		var wg sync.WaitGroup
		for i := range kids {
			wg.Go(func() {
				r := su.Do(t, "POST", keysPath(c.ID, "/auth-key"), nil)
				if r.Status == 200 {
					kids[i], _ = r.Object(t)["kid"].(string)
				}
			})
		}
		wg.Wait()
		for _, k := range kids {
			if k == "" || k != kids[0] {
				t.Fatalf("concurrent creations: %v", kids)
			}
		}
		if n := eventCounts(t, env, c.ID)[clientkeys.EventCreated]; n != 1 {
			t.Fatalf("%d creation events", n)
		}
	})
}

// TestSweep checks the automatic removal of retiring keys without sessions.
func TestSweep(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env, su := newEnv(t, open, appview.Config{})
		ctx := context.Background()
		c := newClient(t, env, "")
		kid1 := createKey(t, su, c.ID)
		kid2, _ := rotate(t, su, c.ID)
		kid3, _ := rotate(t, su, c.ID)
		pinSession(t, env, c.ID, kid2)
		// kid1 and kid2 retiring (kid2 with a session), kid3 current.

		n, err := clientkeys.Sweep(ctx, env.Store, nil, time.Now())
		if err != nil || n != 0 {
			t.Fatalf("sweep within the grace period: %d, %v", n, err)
		}
		n, err = clientkeys.Sweep(ctx, env.Store, eventLog(env), time.Now().Add(clientkeys.SweepGrace+time.Minute))
		if err != nil || n != 1 {
			t.Fatalf("sweep: %d, %v", n, err)
		}
		if _, err := env.Store.GetClientAuthKey(ctx, c.ID, kid1); err != storage.ErrNotFound {
			t.Fatalf("retiring key without sessions survives: %v", err)
		}
		if got := jwksKids(t, env, c.ID); !slices.Equal(got, []string{kid3, kid2}) {
			t.Fatalf("key set after sweep: %v", got)
		}
		if n := eventCounts(t, env, c.ID)[clientkeys.EventSwept]; n != 1 {
			t.Fatalf("%d sweep events", n)
		}
	})
}

// TestSweepRunsHourly checks that a started App sweeps.
func TestSweepRunsHourly(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		clock := &fakeClock{t: time.Now()}
		env, su := newEnv(t, open, appview.Config{Now: clock.Now})
		c := newClient(t, env, "")
		kid1 := createKey(t, su, c.ID)
		rotate(t, su, c.ID)
		clock.Advance(clientkeys.SweepGrace + time.Minute)
		if err := env.App.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			_, err := env.Store.GetClientAuthKey(context.Background(), c.ID, kid1)
			if err == storage.ErrNotFound {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the retiring key was not swept: %v", err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// fakeClock is a settable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
