package linkedrepos_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/service/linkedrepos"
	"github.com/lexview/lexview/appview/internal/web/adminapi"
	"github.com/lexview/lexview/appview/internal/web/adminapi/internal/admintest"
	adminlinked "github.com/lexview/lexview/appview/internal/web/adminapi/linkedrepos"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// grant is the admin API's grant shape.
type grant struct {
	ID              string  `json:"id"`
	DID             *string `json:"did"`
	Handle          string  `json:"handle"`
	Reason          string  `json:"reason"`
	Scopes          string  `json:"scopes"`
	Status          string  `json:"status"`
	LastError       *string `json:"last_error"`
	LastRefreshedAt *string `json:"last_refreshed_at"`
	AuthorizedAt    *string `json:"authorized_at"`
	CreatedBy       string  `json:"created_by"`
	CreatedAt       string  `json:"created_at"`
}

type authorizer struct{}

func (authorizer) AuthorizeURL(_ context.Context, req linkedrepos.AuthorizeRequest) (string, error) {
	return "https://pds.example/oauth/authorize?login_hint=" + req.LoginHint, nil
}

// serve mounts the endpoints over a service using clock; withAuth wires
// an authorizer.
func serve(t *testing.T, store storage.Store, clock func() time.Time, withAuth bool) (*admintest.Server, *linkedrepos.Service) {
	var svc *linkedrepos.Service
	srv := admintest.New(t, store, func(m *adminapi.Mux, w *admintest.World) {
		opt := linkedrepos.Options{Store: w.Store, Events: w.Events, Now: clock,
			BaseURL: func(context.Context) string { return "https://lexview.example" }}
		if withAuth {
			opt.Authorizer = authorizer{}
		}
		svc = linkedrepos.New(opt)
		adminlinked.Mount(m, svc)
	}, nil)
	return srv, svc
}

func TestLinkedRepoEndpoints(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		// The clock is read by the server's goroutines: atomic.
		var at atomic.Int64
		at.Store(time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC).UnixMicro())
		clock := func() time.Time { return time.UnixMicro(at.Load()).UTC() }
		advance := func(d time.Duration) { at.Add(d.Microseconds()) }
		srv, svc := serve(t, open(t), clock, false)
		su := srv.Super

		r := su.Do(t, "GET", "/admin/linked-repos", nil)
		admintest.Expect(t, r, 200, "")
		if string(r.Raw) != `{"linked_repos":[]}` {
			t.Fatalf("empty list: %s", r.Raw)
		}
		r = su.Do(t, "POST", "/admin/linked-repos", map[string]any{"scopes": "repo:app.example.post", "reason": "<b>hi</b>"})
		admintest.Expect(t, r, 200, "")
		var openGrant grant
		r.JSON(t, &openGrant)
		if openGrant.ID == "" || openGrant.DID != nil || openGrant.Handle != "" || openGrant.Scopes != "atproto repo:app.example.post" ||
			openGrant.Status != "pending" || openGrant.LastError != nil || openGrant.AuthorizedAt != nil || openGrant.LastRefreshedAt != nil ||
			openGrant.CreatedBy != su.DID || openGrant.CreatedAt != "2026-05-06T07:08:09.000Z" || openGrant.Reason != "<b>hi</b>" {
			t.Fatalf("created: %s", r.Raw)
		}
		advance(time.Second)
		r = su.Do(t, "POST", "/admin/linked-repos", map[string]any{"scopes": "atproto", "handle": "did:plc:alice"})
		admintest.Expect(t, r, 200, "")
		var pinned grant
		r.JSON(t, &pinned)
		if pinned.DID == nil || *pinned.DID != "did:plc:alice" || pinned.Handle != "did:plc:alice" {
			t.Fatalf("pinned: %s", r.Raw)
		}

		admintest.Expect(t, su.Do(t, "POST", "/admin/linked-repos", map[string]any{"scopes": "atproto", "handle": "did:plc:alice"}),
			409, "a linked repo grant already exists for the DID")
		admintest.Expect(t, su.Do(t, "POST", "/admin/linked-repos", map[string]any{"scopes": "atproto repo:nonsid"}),
			400, `invalid NSID "nonsid" in scope "repo:nonsid"`)
		admintest.Expect(t, su.Do(t, "POST", "/admin/linked-repos", map[string]any{"scopes": "atproto nope"}), 400, `malformed scope "nope"`)
		admintest.Expect(t, su.Do(t, "POST", "/admin/linked-repos", map[string]any{"handle": "alice.example.com"}), 400, "scopes is required")
		admintest.Expect(t, su.Do(t, "POST", "/admin/linked-repos", map[string]any{"scopes": 5}), 400, "invalid request body")
		admintest.Expect(t, su.Do(t, "POST", "/admin/linked-repos", []byte("{")), 400, "invalid request body")
		admintest.Expect(t, su.Do(t, "POST", "/admin/linked-repos", map[string]any{"scopes": "atproto", "handle": "no spaces allowed"}), 400, "")

		r = su.Do(t, "GET", "/admin/linked-repos", nil)
		var list struct {
			LinkedRepos []grant `json:"linked_repos"`
		}
		r.JSON(t, &list)
		if len(list.LinkedRepos) != 2 || list.LinkedRepos[0].ID != pinned.ID || list.LinkedRepos[1].ID != openGrant.ID {
			t.Fatalf("list, newest first: %s", r.Raw)
		}
		if strings.Contains(string(r.Raw), "sealed") || strings.Contains(string(r.Raw), "session") {
			t.Fatalf("list shows session data: %s", r.Raw)
		}

		// authorize: 404 unknown, 400 open, 503 without an OAuth client.
		admintest.Expect(t, su.Do(t, "POST", "/admin/linked-repos/"+storage.NewID()+"/authorize", nil), 404, "linked repo grant not found")
		admintest.Expect(t, su.Do(t, "POST", "/admin/linked-repos/"+openGrant.ID+"/authorize", nil), 400, "the grant is open (no handle): use an invite")
		admintest.Expect(t, su.Do(t, "POST", "/admin/linked-repos/"+pinned.ID+"/authorize", nil), 503, "the instance's OAuth client is not available yet")

		// Invites.
		base := "/admin/linked-repos/" + openGrant.ID
		for _, body := range []any{map[string]any{"expires_in": 59}, map[string]any{"expires_in": 2592001},
			map[string]any{"expires_in": 60.5}, map[string]any{"expires_in": -1}} {
			admintest.Expect(t, su.Do(t, "POST", base+"/invite", body), 400,
				"expires_in must be a whole number of seconds between 60 and 2592000")
		}
		admintest.Expect(t, su.Do(t, "POST", base+"/invite", map[string]any{"expires_in": "60"}), 400, "invalid request body")
		admintest.Expect(t, su.Do(t, "POST", "/admin/linked-repos/"+storage.NewID()+"/invite", nil), 404, "linked repo grant not found")

		r = su.Do(t, "POST", base+"/invite", nil)
		admintest.Expect(t, r, 200, "")
		def := r.Object(t)
		if def["expires_at"] != "2026-05-13T07:08:10.000Z" || !strings.HasPrefix(def["invite_url"].(string), "https://lexview.example/invite/") || len(def) != 2 {
			t.Fatalf("default invite: %s", r.Raw)
		}
		r = su.Do(t, "POST", base+"/invite", map[string]any{"expires_in": 60})
		admintest.Expect(t, r, 200, "")
		short := r.Object(t)
		if short["expires_at"] != "2026-05-06T07:09:10.000Z" {
			t.Fatalf("60 s invite: %s", r.Raw)
		}
		r = su.Do(t, "POST", base+"/invite", map[string]any{"expires_in": 2592000})
		admintest.Expect(t, r, 200, "")
		if r.Object(t)["expires_at"] != "2026-06-05T07:08:10.000Z" {
			t.Fatalf("30 day invite: %s", r.Raw)
		}

		idOf := func(m map[string]any) string {
			u := m["invite_url"].(string)
			return linkedrepos.InviteID(u[strings.LastIndex(u, "/")+1:])
		}
		invites := func() (ids []string, raw string) {
			t.Helper()
			r := su.Do(t, "GET", base+"/invites", nil)
			admintest.Expect(t, r, 200, "")
			var body struct {
				Invites []map[string]string `json:"invites"`
			}
			r.JSON(t, &body)
			for _, inv := range body.Invites {
				if len(inv) != 2 || inv["expires_at"] == "" {
					t.Fatalf("invite shape: %s", r.Raw)
				}
				ids = append(ids, inv["invite_id"])
			}
			return ids, string(r.Raw)
		}
		ids, raw := invites()
		if len(ids) != 3 || !strings.Contains(raw, idOf(def)) || strings.Contains(raw, "/invite/") {
			t.Fatalf("invites: %s", raw)
		}
		admintest.Expect(t, su.Do(t, "GET", "/admin/linked-repos/"+storage.NewID()+"/invites", nil), 404, "")

		// Expiry, with the clock.
		advance(2 * time.Minute)
		if ids, raw := invites(); len(ids) != 2 || strings.Contains(raw, idOf(short)) {
			t.Fatalf("after the 60 s invite expired: %s", raw)
		}
		admintest.Expect(t, su.Do(t, "DELETE", base+"/invites/"+idOf(short), nil), 404, "invite not found")

		// Revoke.
		r = su.Do(t, "DELETE", base+"/invites/"+idOf(def), nil)
		admintest.Expect(t, r, 200, "")
		if string(r.Raw) != `{"revoked":true}` {
			t.Fatalf("revoke: %s", r.Raw)
		}
		admintest.Expect(t, su.Do(t, "DELETE", base+"/invites/"+idOf(def), nil), 404, "invite not found")
		admintest.Expect(t, su.Do(t, "DELETE", base+"/invites/deadbeef", nil), 404, "invite not found")
		admintest.Expect(t, su.Do(t, "DELETE", "/admin/linked-repos/"+pinned.ID+"/invites/"+ids[0], nil), 404, "invite not found")

		// Used invites are not listed and cannot be revoked.
		left, _ := invites()
		if len(left) != 1 {
			t.Fatalf("left: %v", left)
		}
		if err := svc.RedeemInvite(context.Background(), openGrant.ID, left[0], linkedrepos.Account{DID: "did:plc:carol"},
			linkedrepos.Session{Sealed: "sealed-secret", ExpiresAt: clock().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if ids, _ := invites(); len(ids) != 0 {
			t.Fatalf("used invite listed: %v", ids)
		}
		admintest.Expect(t, su.Do(t, "DELETE", base+"/invites/"+left[0], nil), 404, "invite not found")
		r = su.Do(t, "GET", "/admin/linked-repos", nil)
		if strings.Contains(string(r.Raw), "sealed-secret") || !strings.Contains(string(r.Raw), `"status":"active"`) ||
			!strings.Contains(string(r.Raw), `"did":"did:plc:carol"`) {
			t.Fatalf("after authorization: %s", r.Raw)
		}

		// Delete.
		r = su.Do(t, "DELETE", "/admin/linked-repos/"+openGrant.ID, nil)
		admintest.Expect(t, r, 200, "")
		if string(r.Raw) != `{"deleted":true}` {
			t.Fatalf("delete: %s", r.Raw)
		}
		admintest.Expect(t, su.Do(t, "DELETE", "/admin/linked-repos/"+openGrant.ID, nil), 404, "linked repo grant not found")
		if _, err := srv.Store.GetLinkedRepoSession(context.Background(), openGrant.ID); err == nil {
			t.Fatal("session kept after delete")
		}
		types := map[string]bool{}
		for _, e := range srv.Events(t, "linked_repo") {
			types[e.Type] = true
			if strings.Contains(string(e.Detail), "sealed-secret") || strings.Contains(string(e.Detail), "/invite/") {
				t.Fatalf("event reveals a secret: %s", e.Detail)
			}
		}
		for _, want := range []string{"linked_repo.created", "linked_repo.invite_created", "linked_repo.invite_revoked", "linked_repo.authorized", "linked_repo.deleted"} {
			if !types[want] {
				t.Fatalf("no %s event: %v", want, types)
			}
		}
	})
}

func TestLinkedRepoAuthorizeWithOAuthClient(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		srv, _ := serve(t, open(t), time.Now, true)
		r := srv.Super.Do(t, "POST", "/admin/linked-repos", map[string]any{"scopes": "atproto", "handle": "alice.example.com"})
		var g grant
		r.JSON(t, &g)
		r = srv.Super.Do(t, "POST", "/admin/linked-repos/"+g.ID+"/authorize", nil)
		admintest.Expect(t, r, 200, "")
		if string(r.Raw) != `{"authorize_url":"https://pds.example/oauth/authorize?login_hint=alice.example.com"}` {
			t.Fatalf("authorize: %s", r.Raw)
		}
	})
}

// TestLinkedRepoPermissions: each endpoint needs its permission.
func TestLinkedRepoPermissions(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		srv, _ := serve(t, open(t), time.Now, false)
		r := srv.Super.Do(t, "POST", "/admin/linked-repos", map[string]any{"scopes": "atproto"})
		var g grant
		r.JSON(t, &g)
		reader := srv.Caller(t, admins.LinkedReposRead)
		creator := srv.Caller(t, admins.LinkedReposCreate)
		deleter := srv.Caller(t, admins.LinkedReposDelete)
		routes := []struct {
			method, path string
			body         any
			allowed      *admintest.Caller
		}{
			{"GET", "/admin/linked-repos", nil, reader},
			{"GET", "/admin/linked-repos/" + g.ID + "/invites", nil, reader},
			{"POST", "/admin/linked-repos", map[string]any{"scopes": "atproto"}, creator},
			{"POST", "/admin/linked-repos/" + g.ID + "/authorize", nil, creator},
			{"POST", "/admin/linked-repos/" + g.ID + "/invite", nil, creator},
			{"DELETE", "/admin/linked-repos/" + g.ID + "/invites/x", nil, creator},
			{"DELETE", "/admin/linked-repos/" + g.ID, nil, deleter},
		}
		for _, rt := range routes {
			for _, c := range []*admintest.Caller{reader, creator, deleter} {
				r := c.Do(t, rt.method, rt.path, rt.body)
				if c == rt.allowed {
					if r.Status == 403 || r.Status == 401 {
						t.Errorf("%s %s refused to its permission: %d %s", rt.method, rt.path, r.Status, r.Raw)
					}
				} else if r.Status != 403 || r.Error(t) != "insufficient permissions" {
					t.Errorf("%s %s without its permission: %d %s", rt.method, rt.path, r.Status, r.Raw)
				}
			}
		}
	})
}
