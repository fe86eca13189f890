// Package users serves the admin endpoints for admin users, permissions and
// admin API keys: adding, listing, changing and removing admin users,
// handing the super user role on, and minting and revoking API keys.
package users

import (
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/admin"
	"github.com/lexview/lexview/appview/internal/admins"
	"github.com/lexview/lexview/appview/internal/respond"
	"github.com/lexview/lexview/storage"
)

// Mount registers the user, permission and API key endpoints.
func Mount(m *admin.Mux, d admin.Deps) {
	h := handlers{d}
	m.Handle("POST /admin/users", h.create)
	m.Handle("GET /admin/users", h.list)
	m.Handle("GET /admin/users/{id}", h.get)
	m.Handle("PATCH /admin/users/{id}/permissions", h.patchPermissions)
	m.Handle("DELETE /admin/users/{id}", h.delete)
	m.Handle("POST /admin/users/transfer-super", h.transferSuper)
	m.Handle("GET /admin/permissions", h.permissions)
	m.Handle("POST /admin/api-keys", h.createKey)
	m.Handle("GET /admin/api-keys", h.listKeys)
	m.Handle("DELETE /admin/api-keys/{id}", h.deleteKey)
}

type handlers struct{ admin.Deps }

// user is the wire shape of an admin user.
type user struct {
	ID          string   `json:"id"`
	DID         string   `json:"did"`
	IsSuper     bool     `json:"is_super"`
	Permissions []string `json:"permissions"`
	CreatedAt   string   `json:"created_at"`
	LastUsedAt  *string  `json:"last_used_at"`
}

// present shapes u for a response; the super user shows every permission.
func present(u storage.AdminUser) user {
	perms := admins.NewSet(u.Permissions)
	if u.IsSuper {
		perms = admins.NewSet(admins.All())
	}
	return user{
		ID: u.ID, DID: u.DID, IsSuper: u.IsSuper, Permissions: perms.Sorted(),
		CreatedAt: admin.Timestamp(u.CreatedAt), LastUsedAt: admin.NullableTimestamp(u.LastUsedAt),
	}
}

// known parses permission names, answering 400 and returning false when
// one is unknown.
func known(w http.ResponseWriter, names []string) (admins.Set, bool) {
	var unknown []string
	for _, n := range names {
		if !admins.Valid(admins.Permission(n)) {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		respond.Error(w, http.StatusBadRequest, "unknown permissions: "+strings.Join(slices.Compact(unknown), ", "))
		return nil, false
	}
	return admins.NewSet(names), true
}

// mayGrant answers 403 and returns false when want holds permissions the
// caller lacks.
func mayGrant(w http.ResponseWriter, p *admins.Principal, want admins.Set) bool {
	var lacking []string
	for _, n := range want.Sorted() {
		if !p.Perms.Has(admins.Permission(n)) {
			lacking = append(lacking, n)
		}
	}
	if len(lacking) > 0 {
		respond.Error(w, http.StatusForbidden, "cannot grant permissions you do not hold: "+strings.Join(lacking, ", "))
		return false
	}
	return true
}

// union returns the permissions in any of the sets.
func union(sets ...admins.Set) admins.Set {
	out := admins.Set{}
	for _, s := range sets {
		for p := range s {
			out[p] = struct{}{}
		}
	}
	return out
}

type createRequest struct {
	DID         string   `json:"did"`
	Template    *string  `json:"template"`
	Permissions []string `json:"permissions"`
}

func (h handlers) create(w http.ResponseWriter, r *http.Request, p *admins.Principal) {
	var req createRequest
	if !admin.Decode(w, r, &req) {
		return
	}
	if req.DID == "" {
		respond.Error(w, http.StatusBadRequest, "invalid request body")
		return
	}
	did, err := syntax.ParseDID(req.DID)
	if err != nil {
		respond.Error(w, http.StatusBadRequest, "did is not a valid DID")
		return
	}
	var fromTemplate admins.Set
	if req.Template != nil && *req.Template != "" {
		tmpl, ok := admins.Templates()[*req.Template]
		if !ok {
			respond.Error(w, http.StatusBadRequest, "template must be one of viewer, operator, manager, full_access")
			return
		}
		fromTemplate = admins.NewSet(tmpl)
	}
	extra, ok := known(w, req.Permissions)
	if !ok {
		return
	}
	perms := union(fromTemplate, extra)
	if !mayGrant(w, p, perms) {
		return
	}
	u := storage.AdminUser{ID: storage.NewID(), DID: did.String(), Permissions: perms.Sorted(), CreatedAt: h.Now()}
	err = h.Store.CreateAdminUser(r.Context(), u)
	if errors.Is(err, storage.ErrConflict) {
		respond.Error(w, http.StatusConflict, "user already exists")
		return
	}
	if err != nil {
		respond.Internal(w, r, h.Log, err)
		return
	}
	h.Audit(r.Context(), p, "user.created", u.DID, map[string]any{"user_id": u.ID, "permissions": u.Permissions})
	respond.JSON(w, http.StatusCreated, present(u))
}

func (h handlers) list(w http.ResponseWriter, r *http.Request, _ *admins.Principal) {
	all, err := h.Store.ListAdminUsers(r.Context())
	if err != nil {
		respond.Internal(w, r, h.Log, err)
		return
	}
	out := make([]user, len(all))
	for i, u := range all {
		out[i] = present(u)
	}
	respond.JSON(w, http.StatusOK, out)
}

// lookup loads the user named by the {id} path value, answering 404 or 500
// and returning false on failure.
func (h handlers) lookup(w http.ResponseWriter, r *http.Request, id string) (storage.AdminUser, bool) {
	u, err := h.Store.GetAdminUser(r.Context(), id)
	if errors.Is(err, storage.ErrNotFound) {
		respond.Error(w, http.StatusNotFound, "user not found")
		return u, false
	}
	if err != nil {
		respond.Internal(w, r, h.Log, err)
		return u, false
	}
	return u, true
}

func (h handlers) get(w http.ResponseWriter, r *http.Request, _ *admins.Principal) {
	if u, ok := h.lookup(w, r, r.PathValue("id")); ok {
		respond.JSON(w, http.StatusOK, present(u))
	}
}

type patchRequest struct {
	Grant  []string `json:"grant"`
	Revoke []string `json:"revoke"`
}

func (h handlers) patchPermissions(w http.ResponseWriter, r *http.Request, p *admins.Principal) {
	var req patchRequest
	if !admin.Decode(w, r, &req) {
		return
	}
	grant, ok := known(w, req.Grant)
	if !ok {
		return
	}
	revoke, ok := known(w, req.Revoke)
	if !ok {
		return
	}
	if both := grant.Intersect(revoke); len(both) > 0 {
		respond.Error(w, http.StatusBadRequest, "permissions both granted and revoked: "+strings.Join(both.Sorted(), ", "))
		return
	}
	if !mayGrant(w, p, grant) {
		return
	}
	u, ok := h.lookup(w, r, r.PathValue("id"))
	if !ok {
		return
	}
	if u.IsSuper {
		respond.Error(w, http.StatusBadRequest, "cannot modify the super user's permissions")
		return
	}
	perms := union(admins.NewSet(u.Permissions), grant)
	for q := range revoke {
		delete(perms, q)
	}
	u.Permissions = perms.Sorted()
	err := h.Store.SetAdminUserPermissions(r.Context(), u.ID, u.Permissions)
	if h.Failed(w, r, err, "user not found") {
		return
	}
	h.Audit(r.Context(), p, "user.permissions_updated", u.DID, map[string]any{
		"user_id": u.ID, "granted": grant.Sorted(), "revoked": revoke.Sorted(), "permissions": u.Permissions,
	})
	respond.JSON(w, http.StatusOK, present(u))
}

func (h handlers) delete(w http.ResponseWriter, r *http.Request, p *admins.Principal) {
	u, ok := h.lookup(w, r, r.PathValue("id"))
	if !ok {
		return
	}
	switch {
	case u.IsSuper:
		respond.Error(w, http.StatusBadRequest, "cannot delete the super user")
		return
	case u.ID == p.User.ID:
		respond.Error(w, http.StatusBadRequest, "cannot delete yourself")
		return
	}
	err := h.Store.DeleteAdminUser(r.Context(), u.ID)
	if h.Failed(w, r, err, "user not found") {
		return
	}
	h.Audit(r.Context(), p, "user.deleted", u.DID, map[string]any{"user_id": u.ID})
	w.WriteHeader(http.StatusNoContent)
}

type transferRequest struct {
	TargetUserID string `json:"target_user_id"`
}

// transferSuper hands the super user role to another admin user. The gate
// has already checked that the caller is the super user.
func (h handlers) transferSuper(w http.ResponseWriter, r *http.Request, p *admins.Principal) {
	var req transferRequest
	if !admin.Decode(w, r, &req) {
		return
	}
	if req.TargetUserID == "" {
		respond.Error(w, http.StatusBadRequest, "invalid request body")
		return
	}
	target, ok := h.lookup(w, r, req.TargetUserID)
	if !ok {
		return
	}
	if target.IsSuper {
		respond.Error(w, http.StatusBadRequest, "user is already the super user")
		return
	}
	all := admins.NewSet(admins.All()).Sorted()
	err := h.Store.TransferSuper(r.Context(), p.User.ID, target.ID, all)
	if errors.Is(err, storage.ErrNotFound) {
		// The target was removed, or the caller stopped being the super
		// user, since the checks above.
		respond.Error(w, http.StatusConflict, "super user changed concurrently; try again")
		return
	}
	if err != nil {
		respond.Internal(w, r, h.Log, err)
		return
	}
	target.IsSuper, target.Permissions = true, all
	h.Audit(r.Context(), p, "user.super_transferred", target.DID, map[string]any{
		"from_user_id": p.User.ID, "from_did": p.User.DID, "to_user_id": target.ID, "to_did": target.DID,
	})
	respond.JSON(w, http.StatusOK, present(target))
}

func (h handlers) permissions(w http.ResponseWriter, _ *http.Request, _ *admins.Principal) {
	templates := make(map[string][]string, len(admins.Templates()))
	for name, perms := range admins.Templates() {
		templates[name] = admins.NewSet(perms).Sorted()
	}
	respond.JSON(w, http.StatusOK, map[string]any{"permissions": admins.Catalog(), "templates": templates})
}
