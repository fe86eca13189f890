package appview_test

import (
	"strings"
	"testing"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/appview/internal/web/adminapi"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// concretePath fills a route pattern's wildcards with placeholder values.
func concretePath(pattern string) string {
	var b strings.Builder
	for _, seg := range strings.Split(pattern, "/") {
		if b.Len() > 0 || seg != "" {
			b.WriteByte('/')
		}
		if strings.HasPrefix(seg, "{") {
			seg = "did:plc:placeholder"
		}
		b.WriteString(seg)
	}
	return b.String()
}

// TestPermissionTableWalk checks every mounted admin route against the
// permission table: no credentials → 401, a DID that is not an admin →
// 403 forbidden, an admin lacking the route's permission → 403
// insufficient permissions.
func TestPermissionTableWalk(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env := testenv.New(t, open(t), appview.Config{})
		env.Bootstrap(t)
		stranger := env.PLC.NewAccount(t, true, "https://pds.test")
		routes := env.App.AdminRoutes()
		if len(routes) == 0 {
			t.Fatal("no admin routes mounted")
		}
		for _, route := range routes {
			rule, ok := adminapi.RuleFor(route)
			if !ok {
				t.Fatalf("%s is mounted but not in the table", route)
			}
			method, pattern, _ := strings.Cut(route, " ")
			path := concretePath(pattern)

			if r := env.Do(t, method, path, nil); r.Status != 401 || r.Error(t) == "" {
				t.Errorf("%s without credentials: %d %s", route, r.Status, r.Raw)
			}
			if r := env.Do(t, method, path, nil, "Authorization", "Bearer hv_not-a-key"); r.Status != 401 {
				t.Errorf("%s with an unknown key: %d %s", route, r.Status, r.Raw)
			}
			if r := env.Do(t, method, path, nil, testenv.Bearer(stranger.ServiceAuth(t))...); r.Status != 403 || r.Error(t) != "forbidden" {
				t.Errorf("%s as a non-admin: %d %s", route, r.Status, r.Raw)
			}
			if len(rule.Perms) == 0 && !rule.SuperOnly {
				continue // open to every admin (GET /admin/me)
			}
			// An admin holding everything except what the route needs.
			var perms []admins.Permission
			for _, p := range admins.All() {
				needed := false
				for _, n := range rule.Perms {
					needed = needed || n == p
				}
				if !needed || len(rule.Perms) > 1 && p != rule.Perms[0] {
					perms = append(perms, p)
				}
			}
			lacking := env.AddAdmin(t, perms...)
			if r := lacking.Do(t, method, path, nil); r.Status != 403 || r.Error(t) != "insufficient permissions" {
				t.Errorf("%s without its permission %v: %d %s", route, rule.Perms, r.Status, r.Raw)
			}
		}
	})
}
