package users_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// userJSON mirrors the wire shape of an admin user.
type userJSON struct {
	ID          string   `json:"id"`
	DID         string   `json:"did"`
	IsSuper     bool     `json:"is_super"`
	Permissions []string `json:"permissions"`
	CreatedAt   string   `json:"created_at"`
	LastUsedAt  *string  `json:"last_used_at"`
}

func names(perms ...admins.Permission) []string {
	out := make([]string, len(perms))
	for i, p := range perms {
		out[i] = string(p)
	}
	slices.Sort(out)
	return out
}

var allNames = names(admins.All()...)

func expect(t *testing.T, what string, r testenv.Response, status int, errPrefix string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("%s: status %d, want %d: %s", what, r.Status, status, r.Raw)
	}
	if errPrefix != "" && !strings.HasPrefix(r.Error(t), errPrefix) {
		t.Fatalf("%s: error %q, want %q...", what, r.Error(t), errPrefix)
	}
}

func decodeUser(t *testing.T, r testenv.Response) userJSON {
	t.Helper()
	var u userJSON
	r.JSON(t, &u)
	if u.Permissions == nil {
		t.Fatalf("permissions is not an array: %s", r.Raw)
	}
	return u
}

// storedUser finds an admin's user record.
func storedUser(t *testing.T, env *testenv.Env, a *testenv.Admin) storage.AdminUser {
	t.Helper()
	u, err := env.Store.GetAdminUserByDID(context.Background(), a.Account.DID.String())
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func events(t *testing.T, env *testenv.Env, eventType string) []storage.Event {
	t.Helper()
	evs, _, err := env.Store.ListEvents(context.Background(), storage.EventFilter{Type: eventType, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func TestCreateUser(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env := testenv.New(t, open(t), appview.Config{})
		su := env.Bootstrap(t)

		r := su.Do(t, "POST", "/admin/users", map[string]any{"did": "did:plc:plainuser"})
		expect(t, "no template, no permissions", r, 201, "")
		u := decodeUser(t, r)
		if u.ID == "" || u.DID != "did:plc:plainuser" || u.IsSuper || len(u.Permissions) != 0 ||
			!strings.HasSuffix(u.CreatedAt, "Z") || u.LastUsedAt != nil {
			t.Fatalf("plain user: %s", r.Raw)
		}
		if !strings.Contains(string(r.Raw), `"last_used_at":null`) {
			t.Fatalf("last_used_at must be null: %s", r.Raw)
		}

		r = su.Do(t, "POST", "/admin/users", map[string]any{
			"did": "did:web:viewer.example", "template": "viewer", "permissions": []string{"users:read", "events:read"},
		})
		expect(t, "template and permissions", r, 201, "")
		want := names(append(slices.Clone(admins.Templates()["viewer"]), admins.UsersRead)...)
		want = slices.Compact(want)
		if u := decodeUser(t, r); !slices.Equal(u.Permissions, want) {
			t.Fatalf("union: %v, want %v", u.Permissions, want)
		}
		for tmpl, perms := range admins.Templates() {
			r := su.Do(t, "POST", "/admin/users", map[string]any{"did": "did:web:" + strings.ReplaceAll(tmpl, "_", "-") + ".tmpl.example", "template": tmpl})
			expect(t, "template "+tmpl, r, 201, "")
			if u := decodeUser(t, r); !slices.Equal(u.Permissions, slices.Compact(names(perms...))) {
				t.Fatalf("template %s: %v", tmpl, u.Permissions)
			}
		}

		expect(t, "duplicate DID", su.Do(t, "POST", "/admin/users", map[string]any{"did": "did:plc:plainuser", "template": "viewer"}),
			409, "user already exists")
		expect(t, "missing did", su.Do(t, "POST", "/admin/users", map[string]any{"template": "viewer"}), 400, "invalid request body")
		expect(t, "invalid did", su.Do(t, "POST", "/admin/users", map[string]any{"did": "alice.example"}), 400, "")
		expect(t, "unknown template", su.Do(t, "POST", "/admin/users", map[string]any{"did": "did:plc:x1", "template": "root"}), 400, "")
		expect(t, "unknown permission", su.Do(t, "POST", "/admin/users",
			map[string]any{"did": "did:plc:x2", "permissions": []string{"users:read", "users:fly"}}), 400, "unknown permissions: users:fly")
		expect(t, "permissions not strings", su.Do(t, "POST", "/admin/users",
			map[string]any{"did": "did:plc:x3", "permissions": "users:read"}), 400, "invalid request body")
		expect(t, "malformed JSON", su.Do(t, "POST", "/admin/users", []byte(`{"did":`)), 400, "invalid request body")
		if n, _ := env.Store.CountAdminUsers(context.Background()); n != 2+len(admins.Templates())+1 {
			t.Fatalf("refused creations stored users: %d", n)
		}

		// A caller cannot grant what it lacks, neither directly nor through a
		// template.
		limited := env.AddAdmin(t, admins.UsersCreate, admins.UsersRead, admins.LexiconsRead)
		r = limited.Do(t, "POST", "/admin/users", map[string]any{"did": "did:plc:x4", "permissions": []string{"lexicons:read", "lexicons:delete", "stats:read"}})
		expect(t, "granting beyond the caller", r, 403, "cannot grant permissions you do not hold")
		if e := r.Error(t); !strings.Contains(e, "lexicons:delete") || !strings.Contains(e, "stats:read") || strings.Contains(e, "lexicons:read") {
			t.Fatalf("403 must list what is lacking: %q", e)
		}
		expect(t, "template beyond the caller", limited.Do(t, "POST", "/admin/users", map[string]any{"did": "did:plc:x5", "template": "viewer"}),
			403, "cannot grant permissions you do not hold")
		r = limited.Do(t, "POST", "/admin/users", map[string]any{"did": "did:plc:x6", "permissions": []string{"lexicons:read"}})
		expect(t, "granting a subset", r, 201, "")

		evs := events(t, env, "user.created")
		if len(evs) != 2+len(admins.Templates())+1 || evs[0].Subject != "did:plc:x6" || evs[0].ActorDID != limited.Account.DID.String() {
			t.Fatalf("user.created events: %+v", evs)
		}
	})
}

func TestGetAndListUsers(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env := testenv.New(t, open(t), appview.Config{})
		su := env.Bootstrap(t)
		created := decodeUser(t, su.Do(t, "POST", "/admin/users", map[string]any{"did": "did:plc:second", "permissions": []string{"users:read"}}))

		var list []userJSON
		r := su.Do(t, "GET", "/admin/users", nil)
		expect(t, "list", r, 200, "")
		r.JSON(t, &list)
		if len(list) != 2 || list[0].DID != su.Account.DID.String() || !list[0].IsSuper || list[1].ID != created.ID {
			t.Fatalf("list: %s", r.Raw)
		}
		if !slices.Equal(list[0].Permissions, allNames) || list[0].LastUsedAt == nil {
			t.Fatalf("super user in the list: %+v", list[0])
		}
		if list[1].LastUsedAt != nil {
			t.Fatalf("unused user has last_used_at: %+v", list[1])
		}

		// The super user shows every permission whatever is stored.
		suUser := storedUser(t, env, su)
		if err := env.Store.SetAdminUserPermissions(context.Background(), suUser.ID, []string{"stats:read"}); err != nil {
			t.Fatal(err)
		}
		r = su.Do(t, "GET", "/admin/users/"+suUser.ID, nil)
		expect(t, "get super", r, 200, "")
		if u := decodeUser(t, r); !u.IsSuper || !slices.Equal(u.Permissions, allNames) {
			t.Fatalf("super user shows %v", u.Permissions)
		}
		expect(t, "missing user", su.Do(t, "GET", "/admin/users/"+storage.NewID(), nil), 404, "user not found")

		// Using the instance sets last_used_at.
		second := env.AddAdmin(t, admins.UsersRead)
		expect(t, "second admin", second.Do(t, "GET", "/admin/users", nil), 200, "")
		if u := decodeUser(t, su.Do(t, "GET", "/admin/users/"+storedUser(t, env, second).ID, nil)); u.LastUsedAt == nil {
			t.Fatalf("last_used_at not set after use: %+v", u)
		}

		r = su.Do(t, "GET", "/admin/permissions", nil)
		expect(t, "permissions", r, 200, "")
		var defs struct {
			Permissions []admins.PermissionInfo `json:"permissions"`
			Templates   map[string][]string     `json:"templates"`
		}
		r.JSON(t, &defs)
		if len(defs.Permissions) != len(admins.All()) || defs.Permissions[0].Description == "" || len(defs.Templates) != 4 {
			t.Fatalf("permission definitions: %s", r.Raw)
		}
		for _, tmpl := range []string{"viewer", "operator", "manager", "full_access"} {
			if !slices.IsSorted(defs.Templates[tmpl]) || len(defs.Templates[tmpl]) == 0 {
				t.Fatalf("template %s: %v", tmpl, defs.Templates[tmpl])
			}
		}
		if !slices.Equal(defs.Templates["full_access"], allNames) {
			t.Fatalf("full_access: %v", defs.Templates["full_access"])
		}
	})
}

func TestPatchPermissions(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env := testenv.New(t, open(t), appview.Config{})
		su := env.Bootstrap(t)
		target := decodeUser(t, su.Do(t, "POST", "/admin/users", map[string]any{"did": "did:plc:target", "template": "viewer"}))
		path := "/admin/users/" + target.ID + "/permissions"

		r := su.Do(t, "PATCH", path, map[string]any{"grant": []string{"users:read", "stats:read"}, "revoke": []string{"records:read", "users:delete"}})
		expect(t, "grant and revoke", r, 200, "")
		want := slices.DeleteFunc(names(append(slices.Clone(admins.Templates()["viewer"]), admins.UsersRead)...), func(s string) bool { return s == "records:read" })
		if u := decodeUser(t, r); !slices.Equal(u.Permissions, want) {
			t.Fatalf("after patch: %v, want %v", u.Permissions, want)
		}
		if u := decodeUser(t, su.Do(t, "GET", "/admin/users/"+target.ID, nil)); !slices.Equal(u.Permissions, want) {
			t.Fatalf("stored after patch: %v", u.Permissions)
		}
		expect(t, "empty patch", su.Do(t, "PATCH", path, map[string]any{}), 200, "")

		expect(t, "unknown grant", su.Do(t, "PATCH", path, map[string]any{"grant": []string{"nope"}}), 400, "unknown permissions")
		expect(t, "unknown revoke", su.Do(t, "PATCH", path, map[string]any{"revoke": []string{"nope"}}), 400, "unknown permissions")
		expect(t, "malformed", su.Do(t, "PATCH", path, []byte(`[`)), 400, "invalid request body")
		expect(t, "missing user", su.Do(t, "PATCH", "/admin/users/"+storage.NewID()+"/permissions",
			map[string]any{"grant": []string{"users:read"}}), 404, "user not found")
		suID := storedUser(t, env, su).ID
		expect(t, "super user", su.Do(t, "PATCH", "/admin/users/"+suID+"/permissions",
			map[string]any{"revoke": []string{"users:read"}}), 400, "cannot modify the super user's permissions")

		updater := env.AddAdmin(t, admins.UsersUpdate, admins.StatsRead)
		expect(t, "granting beyond the caller", updater.Do(t, "PATCH", path, map[string]any{"grant": []string{"users:delete"}}),
			403, "cannot grant permissions you do not hold: users:delete")
		// Revoking is not limited to what the caller holds.
		r = updater.Do(t, "PATCH", path, map[string]any{"grant": []string{"stats:read"}, "revoke": []string{"lexicons:read"}})
		expect(t, "revoking beyond the caller", r, 200, "")
		if u := decodeUser(t, r); slices.Contains(u.Permissions, "lexicons:read") {
			t.Fatalf("lexicons:read not revoked: %v", u.Permissions)
		}
		if evs := events(t, env, "user.permissions_updated"); len(evs) != 3 || evs[0].ActorDID != updater.Account.DID.String() || evs[0].Subject != "did:plc:target" {
			t.Fatalf("user.permissions_updated events: %+v", evs)
		}
	})
}

func TestDeleteUser(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env := testenv.New(t, open(t), appview.Config{})
		su := env.Bootstrap(t)
		target := decodeUser(t, su.Do(t, "POST", "/admin/users", map[string]any{"did": "did:plc:doomed"}))

		expect(t, "super user", su.Do(t, "DELETE", "/admin/users/"+storedUser(t, env, su).ID, nil), 400, "cannot delete the super user")
		deleter := env.AddAdmin(t, admins.UsersDelete)
		expect(t, "self", deleter.Do(t, "DELETE", "/admin/users/"+storedUser(t, env, deleter).ID, nil), 400, "cannot delete yourself")
		expect(t, "delete", deleter.Do(t, "DELETE", "/admin/users/"+target.ID, nil), 204, "")
		expect(t, "gone", su.Do(t, "GET", "/admin/users/"+target.ID, nil), 404, "user not found")
		expect(t, "again", deleter.Do(t, "DELETE", "/admin/users/"+target.ID, nil), 404, "user not found")
		if evs := events(t, env, "user.deleted"); len(evs) != 1 || evs[0].Subject != "did:plc:doomed" {
			t.Fatalf("user.deleted events: %+v", evs)
		}
	})
}

func TestTransferSuper(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env := testenv.New(t, open(t), appview.Config{})
		su := env.Bootstrap(t)
		suID := storedUser(t, env, su).ID
		heir := env.AddAdmin(t, admins.StatsRead)
		heirID := storedUser(t, env, heir).ID

		expect(t, "missing target", su.Do(t, "POST", "/admin/users/transfer-super", map[string]any{}), 400, "invalid request body")
		expect(t, "malformed", su.Do(t, "POST", "/admin/users/transfer-super", []byte(`{"target_user_id":`)), 400, "invalid request body")
		expect(t, "unknown target", su.Do(t, "POST", "/admin/users/transfer-super", map[string]any{"target_user_id": storage.NewID()}), 404, "user not found")
		expect(t, "target already super", su.Do(t, "POST", "/admin/users/transfer-super", map[string]any{"target_user_id": suID}), 400, "")
		everything := env.AddAdmin(t, admins.All()...)
		expect(t, "not the super user", everything.Do(t, "POST", "/admin/users/transfer-super", map[string]any{"target_user_id": heirID}),
			403, "insufficient permissions")
		// An API key of the super user holding fewer than every permission
		// is limited to them: it cannot hand the role on (issue 12, finding 2).
		mint := su.Do(t, "POST", "/admin/api-keys", map[string]any{"name": "stats only", "permissions": []string{"stats:read"}})
		expect(t, "mint a limited key", mint, 201, "")
		limited, _ := mint.Object(t)["key"].(string)
		r := env.Do(t, "POST", "/admin/users/transfer-super", map[string]any{"target_user_id": heirID}, testenv.Bearer(limited)...)
		expect(t, "limited key of the super user", r, 403, "insufficient permissions")
		if u, _ := env.Store.GetAdminUser(context.Background(), heirID); u.IsSuper {
			t.Fatal("a limited key made another user the super user")
		}
		full := su.Do(t, "POST", "/admin/api-keys", map[string]any{"name": "full", "permissions": allNames})
		expect(t, "mint a full key", full, 201, "")
		fullKey, _ := full.Object(t)["key"].(string)
		expect(t, "full key of the super user, refused target", env.Do(t, "POST", "/admin/users/transfer-super",
			map[string]any{"target_user_id": suID}, testenv.Bearer(fullKey)...), 400, "")

		r = su.Do(t, "POST", "/admin/users/transfer-super", map[string]any{"target_user_id": heirID})
		expect(t, "transfer", r, 200, "")
		if u := decodeUser(t, r); u.ID != heirID || !u.IsSuper || !slices.Equal(u.Permissions, allNames) {
			t.Fatalf("new super user: %s", r.Raw)
		}
		if u, _ := env.Store.GetAdminUser(context.Background(), heirID); !u.IsSuper || !slices.Equal(u.Permissions, allNames) {
			t.Fatalf("stored new super user: %+v", u)
		}
		// The former super user is an ordinary user keeping its stored
		// permissions (every permission, from the bootstrap).
		old, _ := env.Store.GetAdminUser(context.Background(), suID)
		if old.IsSuper || !slices.Equal(old.Permissions, allNames) {
			t.Fatalf("former super user: %+v", old)
		}
		expect(t, "former super user transfers", su.Do(t, "POST", "/admin/users/transfer-super", map[string]any{"target_user_id": suID}),
			403, "insufficient permissions")
		expect(t, "new super user deletes the former", heir.Do(t, "DELETE", "/admin/users/"+suID, nil), 204, "")
		if evs := events(t, env, "user.super_transferred"); len(evs) != 1 || evs[0].Subject != heir.Account.DID.String() {
			t.Fatalf("user.super_transferred events: %+v", evs)
		}
	})
}

// TestBootstrapRace sends the first admin requests of eight DIDs at once,
// each with the claim token: exactly one becomes the super user, the
// others are refused.
func TestBootstrapRace(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env := testenv.New(t, open(t), appview.Config{})
		const n = 8
		reqs := make([]*http.Request, n)
		for i := range reqs {
			acct := env.PLC.NewAccount(t, i%2 == 0, "https://pds.test")
			req, err := http.NewRequest("GET", env.URL+"/admin/users", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+acct.ServiceAuth(t))
			req.Header.Set("X-Claim-Token", env.App.ClaimToken())
			reqs[i] = req
		}
		statuses := make([]int, n)
		errs := make([]error, n)
		var start, done sync.WaitGroup
		start.Add(1)
		for i := range reqs {
			done.Add(1)
			go func() {
				defer done.Done()
				start.Wait()
				resp, err := http.DefaultClient.Do(reqs[i])
				if err != nil {
					errs[i] = err
					return
				}
				resp.Body.Close()
				statuses[i] = resp.StatusCode
			}()
		}
		start.Done()
		done.Wait()
		ok, forbidden := 0, 0
		for i, s := range statuses {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			switch s {
			case 200:
				ok++
			case 403:
				forbidden++
			}
		}
		if ok != 1 || forbidden != n-1 {
			t.Fatalf("statuses %v: want one 200 and %d 403", statuses, n-1)
		}
		users, err := env.Store.ListAdminUsers(context.Background())
		if err != nil || len(users) != 1 || !users[0].IsSuper {
			t.Fatalf("users after the race: %+v %v", users, err)
		}
	})
}

// TestMe: GET /admin/me answers any authenticated admin with its user and
// the permissions its credential holds: a limited API key shows the key's
// share and is not the super user; no credential is 401.
func TestMe(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env := testenv.New(t, open(t), appview.Config{})
		su := env.Bootstrap(t)
		var me struct {
			User        userJSON `json:"user"`
			Permissions []string `json:"permissions"`
			ActsAsSuper bool     `json:"acts_as_super"`
			Credential  string   `json:"credential"`
			KeyID       *string  `json:"key_id"`
		}
		r := su.Do(t, "GET", "/admin/me", nil)
		expect(t, "super user", r, 200, "")
		r.JSON(t, &me)
		if !me.User.IsSuper || !me.ActsAsSuper || me.Credential != "user" || me.KeyID != nil ||
			!slices.Equal(me.Permissions, allNames) {
			t.Fatalf("super user: %s", r.Raw)
		}

		r = su.Do(t, "POST", "/admin/api-keys", map[string]any{"name": "reader", "permissions": []string{"lexicons:read"}})
		expect(t, "create key", r, 201, "")
		key, _ := r.Object(t)["key"].(string)
		id, _ := r.Object(t)["id"].(string)
		r = env.Do(t, "GET", "/admin/me", nil, testenv.Bearer(key)...)
		expect(t, "limited key", r, 200, "")
		me.KeyID = nil
		r.JSON(t, &me)
		if me.ActsAsSuper || me.Credential != "api_key" || me.KeyID == nil || *me.KeyID != id ||
			!slices.Equal(me.Permissions, []string{"lexicons:read"}) || !me.User.IsSuper {
			t.Fatalf("limited key: %s", r.Raw)
		}

		expect(t, "no credential", env.Do(t, "GET", "/admin/me", nil), 401, "")
	})
}
