package authkeys_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/oauth"
	"github.com/lexview/lexview/storage"
)

// newEnv starts an instance and bootstraps its super user.
func newEnv(t *testing.T, open func(testing.TB) storage.Store, cfg appview.Config) (*testenv.Env, *testenv.Admin) {
	t.Helper()
	env := testenv.NewUnstarted(t, open(t), cfg)
	return env, env.Bootstrap(t)
}

// keysPath is the admin path of a client's key endpoints plus suffix.
func keysPath(clientID, suffix string) string {
	return "/admin/api-clients/" + clientID + suffix
}

// expect checks a response's status and, when msg is set, its error.
func expect(t *testing.T, r testenv.Response, status int, msg string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Raw)
	}
	if msg != "" {
		if got := r.Error(t); got != msg {
			t.Fatalf("error %q, want %q", got, msg)
		}
	}
	if strings.Contains(string(r.Raw), `"d"`) {
		t.Fatalf("response carries a private key: %s", r.Raw)
	}
}

// createKey gives the client a key through the admin API and returns its
// kid.
func createKey(t *testing.T, su *testenv.Admin, clientID string) string {
	t.Helper()
	r := su.Do(t, "POST", keysPath(clientID, "/auth-key"), nil)
	expect(t, r, 200, "")
	return r.Object(t)["kid"].(string)
}

// rotate rotates the client's key and returns the new and retired kids.
func rotate(t *testing.T, su *testenv.Admin, clientID string) (kid, retired string) {
	t.Helper()
	r := su.Do(t, "POST", keysPath(clientID, "/auth-key/rotate"), nil)
	expect(t, r, 200, "")
	o := r.Object(t)
	return o["kid"].(string), o["retired_kid"].(string)
}

// pinSession stores a device session established with the client key kid,
// with sealed dummy tokens and key, and returns its id.
func pinSession(t *testing.T, env *testenv.Env, clientID, kid string) string {
	t.Helper()
	sealer := testSealer(t)
	seal := func(purpose string) string {
		s, err := sealer.SealString(purpose, "dummy-"+storage.NewID())
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	now := time.Now()
	s := storage.DeviceSession{
		ID: storage.NewID(), ClientID: clientID, DID: "did:plc:sessionuser", DPoPKeyID: storage.NewID(),
		JKT: storage.NewID(), SealedDPoPKey: seal("session:dpop_key"), SealedAccessToken: seal("session:access_token"),
		SealedRefreshToken: seal("session:refresh_token"), ExpiresAt: now.Add(time.Hour), Scopes: "atproto",
		PDSURL: "https://pds.test", Issuer: "https://pds.test", AuthKID: kid, CreatedAt: now, UpdatedAt: now,
	}
	if err := env.Store.CreateDeviceSession(context.Background(), s); err != nil {
		t.Fatalf("create device session: %v", err)
	}
	return s.ID
}

// sessionExists reports whether a device session is still stored.
func sessionExists(t *testing.T, env *testenv.Env, id string) bool {
	t.Helper()
	_, err := env.Store.GetDeviceSession(context.Background(), id)
	if err != nil && err != storage.ErrNotFound {
		t.Fatal(err)
	}
	return err == nil
}

// jwksKids fetches the client's public key set and returns its kids.
func jwksKids(t *testing.T, env *testenv.Env, clientID string) []string {
	t.Helper()
	r := env.Do(t, "GET", "/oauth/clients/"+clientID+"/jwks.json", nil)
	if r.Status != 200 {
		t.Fatalf("jwks: %d %s", r.Status, r.Raw)
	}
	var set oauth.JWKS
	r.JSON(t, &set)
	kids := []string{}
	for _, k := range set.Keys {
		kids = append(kids, k.Kid)
	}
	return kids
}

// eventCounts counts the auth_key.* events recorded for a client by type.
func eventCounts(t *testing.T, env *testenv.Env, clientID string) map[string]int {
	t.Helper()
	list, _, err := env.Store.ListEvents(context.Background(), storage.EventFilter{
		Category: "auth_key", Subject: clientID, Limit: 100,
	})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, e := range list {
		out[e.Type]++
	}
	return out
}

// newClient creates a confidential API client.
func newClient(t *testing.T, env *testenv.Env, clientIDURL string) storage.APIClient {
	t.Helper()
	c, _ := env.NewClient(t, apiclients.NewClient{ClientIDURL: clientIDURL})
	return c
}

// testSealer seals with the test instances' TOKEN_ENCRYPTION_KEY.
func testSealer(t *testing.T) *oauth.Sealer {
	t.Helper()
	key, err := oauth.ParseKey(testenv.TokenKey)
	if err != nil {
		t.Fatal(err)
	}
	s, err := oauth.NewSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// eventLog is an event log on the instance's store.
func eventLog(env *testenv.Env) *eventlog.Log {
	return eventlog.New(eventlog.Options{Store: env.Store, Logger: slog.New(slog.DiscardHandler)})
}
