package users_test

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

var secretPattern = regexp.MustCompile(`^hv_[A-Za-z0-9_-]{43}$`)

type createdKey struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Key         string   `json:"key"`
	Permissions []string `json:"permissions"`
	CreatedAt   string   `json:"created_at"`
}

type listedKey struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	KeyPrefix   string   `json:"key_prefix"`
	Permissions []string `json:"permissions"`
	UserID      string   `json:"user_id"`
	UserDID     string   `json:"user_did"`
	CreatedAt   string   `json:"created_at"`
	LastUsedAt  *string  `json:"last_used_at"`
}

// mint creates a key as a through the API.
func mint(t *testing.T, a *testenv.Admin, name string, perms ...admins.Permission) createdKey {
	t.Helper()
	r := a.Do(t, "POST", "/admin/api-keys", map[string]any{"name": name, "permissions": names(perms...)})
	expect(t, "create key "+name, r, 201, "")
	var k createdKey
	r.JSON(t, &k)
	return k
}

// as calls the admin API with an API key.
func as(t *testing.T, env *testenv.Env, secret, method, path string, body any) testenv.Response {
	t.Helper()
	return env.Do(t, method, path, body, testenv.Bearer(secret)...)
}

func TestAPIKeys(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env := testenv.New(t, open(t), appview.Config{})
		su := env.Bootstrap(t)
		suUser := storedUser(t, env, su)

		k := mint(t, su, "  deploy bot ", admins.UsersRead, admins.LexiconsRead)
		if !secretPattern.MatchString(k.Key) || k.ID == "" || k.Name != "deploy bot" ||
			!slices.Equal(k.Permissions, names(admins.LexiconsRead, admins.UsersRead)) || !strings.HasSuffix(k.CreatedAt, "Z") {
			t.Fatalf("created key: %+v", k)
		}
		stored, err := env.Store.GetAdminAPIKeyByHash(context.Background(), admins.HashKey(k.Key))
		if err != nil || stored.ID != k.ID || stored.UserID != suUser.ID || stored.Prefix != k.Key[:8] || stored.Hash == k.Key {
			t.Fatalf("stored key: %+v %v", stored, err)
		}
		expect(t, "key reads users", as(t, env, k.Key, "GET", "/admin/users", nil), 200, "")
		expect(t, "key lacks lexicons:create", as(t, env, k.Key, "POST", "/admin/lexicons", map[string]any{}), 403, "insufficient permissions")
		expect(t, "key lacks api-keys:read", as(t, env, k.Key, "GET", "/admin/api-keys", nil), 403, "insufficient permissions")
		k2 := mint(t, su, "second", admins.APIKeysRead)

		r := su.Do(t, "GET", "/admin/api-keys", nil)
		expect(t, "list", r, 200, "")
		for _, secret := range []string{k.Key, k2.Key, admins.HashKey(k.Key), admins.HashKey(k2.Key)} {
			if strings.Contains(string(r.Raw), secret) || strings.Contains(string(r.Raw), secret[3:]) {
				t.Fatalf("list shows a secret or hash: %s", r.Raw)
			}
		}
		var list []listedKey
		r.JSON(t, &list)
		if len(list) != 2 || list[0].ID != k2.ID || list[1].ID != k.ID {
			t.Fatalf("list is not newest first: %s", r.Raw)
		}
		first := list[1]
		if first.Name != "deploy bot" || first.KeyPrefix != k.Key[:8] || first.UserID != suUser.ID || first.UserDID != suUser.DID ||
			first.CreatedAt != k.CreatedAt || first.LastUsedAt == nil || list[0].LastUsedAt != nil ||
			!slices.Equal(first.Permissions, k.Permissions) {
			t.Fatalf("listed key: %+v", list)
		}
		for _, field := range []string{`"key":`, `"hash"`, `"key_hash"`} {
			if strings.Contains(string(r.Raw), field) {
				t.Fatalf("list has field %s: %s", field, r.Raw)
			}
		}
		// A key's use is recorded for the key and for its creator.
		if u, _ := env.Store.GetAdminUser(context.Background(), suUser.ID); u.LastUsedAt.IsZero() {
			t.Fatal("creator's last_used_at not set")
		}
		// A key holding api-keys:read lists keys.
		expect(t, "second key lists", as(t, env, k2.Key, "GET", "/admin/api-keys", nil), 200, "")

		expect(t, "revoke", su.Do(t, "DELETE", "/admin/api-keys/"+k.ID, nil), 204, "")
		expect(t, "revoke again", su.Do(t, "DELETE", "/admin/api-keys/"+k.ID, nil), 404, "API key not found")
		expect(t, "revoked key", as(t, env, k.Key, "GET", "/admin/users", nil), 401, "")
		expect(t, "unknown key", as(t, env, "hv_"+strings.Repeat("A", 43), "GET", "/admin/users", nil), 401, "")

		created := events(t, env, "api_key.created")
		revoked := events(t, env, "api_key.revoked")
		if len(created) != 2 || len(revoked) != 1 || revoked[0].Subject != k.ID || created[1].Subject != k.ID {
			t.Fatalf("events: created %+v, revoked %+v", created, revoked)
		}
		for _, e := range append(created, revoked...) {
			if strings.Contains(string(e.Detail), k.Key) || strings.Contains(string(e.Detail), k2.Key) ||
				strings.Contains(string(e.Detail), admins.HashKey(k.Key)) {
				t.Fatalf("event detail holds a secret: %s", e.Detail)
			}
		}
	})
}

func TestAPIKeyValidation(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env := testenv.New(t, open(t), appview.Config{})
		su := env.Bootstrap(t)
		post := func(body any) testenv.Response { return su.Do(t, "POST", "/admin/api-keys", body) }

		expect(t, "missing name", post(map[string]any{"permissions": []string{"users:read"}}), 400, "invalid request body")
		expect(t, "blank name", post(map[string]any{"name": "  ", "permissions": []string{"users:read"}}), 400, "invalid request body")
		expect(t, "long name", post(map[string]any{"name": strings.Repeat("n", 101), "permissions": []string{"users:read"}}), 400, "")
		expect(t, "100 characters", post(map[string]any{"name": strings.Repeat("é", 100), "permissions": []string{"users:read"}}), 201, "")
		expect(t, "missing permissions", post(map[string]any{"name": "k"}), 400, "invalid request body")
		expect(t, "null permissions", post(map[string]any{"name": "k", "permissions": nil}), 400, "invalid request body")
		expect(t, "empty permissions", post(map[string]any{"name": "k", "permissions": []string{}}), 400, "")
		expect(t, "unknown permission", post(map[string]any{"name": "k", "permissions": []string{"users:read", "root"}}), 400, "unknown permissions: root")
		expect(t, "malformed", post([]byte(`{"name": 5}`)), 400, "invalid request body")

		maker := env.AddAdmin(t, admins.APIKeysCreate, admins.UsersRead)
		r := maker.Do(t, "POST", "/admin/api-keys", map[string]any{"name": "k", "permissions": []string{"users:read", "users:delete"}})
		expect(t, "beyond the caller", r, 403, "cannot grant permissions you do not hold: users:delete")
		k := mint(t, maker, "reader", admins.UsersRead)
		// A key cannot mint a key beyond its own permissions either.
		expect(t, "key lacks api-keys:create", as(t, env, k.Key, "POST", "/admin/api-keys",
			map[string]any{"name": "k", "permissions": []string{"users:read"}}), 403, "insufficient permissions")
		wide := mint(t, maker, "minter", admins.APIKeysCreate)
		expect(t, "key minting beyond itself", as(t, env, wide.Key, "POST", "/admin/api-keys",
			map[string]any{"name": "k", "permissions": []string{"users:read"}}), 403, "cannot grant permissions you do not hold")
		expect(t, "key minting within itself", as(t, env, wide.Key, "POST", "/admin/api-keys",
			map[string]any{"name": "k", "permissions": []string{"api-keys:create"}}), 201, "")
		if n := len(events(t, env, "api_key.created")); n != 4 {
			t.Fatalf("api_key.created events: %d", n)
		}
	})
}

// TestAPIKeyFollowsCreator checks that a key's permissions are the
// intersection with its creator's current permissions, and that a removed
// creator's keys stop working.
func TestAPIKeyFollowsCreator(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env := testenv.New(t, open(t), appview.Config{})
		su := env.Bootstrap(t)
		creator := env.AddAdmin(t, admins.UsersRead, admins.StatsRead, admins.APIKeysCreate, admins.APIKeysRead)
		creatorID := storedUser(t, env, creator).ID
		k := mint(t, creator, "follower", admins.UsersRead, admins.APIKeysRead)

		expect(t, "before revoke", as(t, env, k.Key, "GET", "/admin/users", nil), 200, "")
		expect(t, "revoke from creator", su.Do(t, "PATCH", "/admin/users/"+creatorID+"/permissions",
			map[string]any{"revoke": []string{"users:read"}}), 200, "")
		expect(t, "after revoke", as(t, env, k.Key, "GET", "/admin/users", nil), 403, "insufficient permissions")
		expect(t, "other permission kept", as(t, env, k.Key, "GET", "/admin/api-keys", nil), 200, "")

		// Granting the creator more does not widen the key.
		expect(t, "grant to creator", su.Do(t, "PATCH", "/admin/users/"+creatorID+"/permissions",
			map[string]any{"grant": []string{"users:read", "lexicons:read"}}), 200, "")
		expect(t, "regranted", as(t, env, k.Key, "GET", "/admin/users", nil), 200, "")
		expect(t, "not in the key", as(t, env, k.Key, "GET", "/admin/lexicons", nil), 403, "insufficient permissions")

		// Removing the creator (here with a key of the super user) removes
		// its keys.
		suKey := mint(t, su, "super", admins.UsersRead, admins.UsersDelete)
		expect(t, "delete creator", as(t, env, suKey.Key, "DELETE", "/admin/users/"+creatorID, nil), 204, "")
		expect(t, "creator's key", as(t, env, k.Key, "GET", "/admin/api-keys", nil), 401, "")
		var list []listedKey
		su.Do(t, "GET", "/admin/api-keys", nil).JSON(t, &list)
		if len(list) != 1 || list[0].ID != suKey.ID {
			t.Fatalf("a deleted user's keys are still listed: %+v", list)
		}
	})
}
