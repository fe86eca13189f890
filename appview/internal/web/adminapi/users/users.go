// Package users serves the admin endpoints for admin users, permissions and
// admin API keys over the admins service: adding, listing, changing and
// removing admin users, handing the super user role on, and minting and
// revoking API keys.
package users

import (
	"net/http"

	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/web/adminapi"
	"github.com/lexview/lexview/appview/internal/web/respond"
	"github.com/lexview/lexview/storage"
)

// Mount registers the user, permission and API key endpoints.
func Mount(m *adminapi.Mux, svc *admins.Service) {
	h := handlers{svc}
	m.HandleFunc("POST /admin/users", h.create)
	m.HandleFunc("GET /admin/users", h.list)
	m.HandleFunc("GET /admin/users/{id}", h.get)
	m.HandleFunc("PATCH /admin/users/{id}/permissions", h.patchPermissions)
	m.HandleFunc("DELETE /admin/users/{id}", h.delete)
	m.HandleFunc("POST /admin/users/transfer-super", h.transferSuper)
	m.HandleFunc("GET /admin/permissions", h.permissions)
	m.HandleFunc("GET /admin/me", h.me)
	m.HandleFunc("POST /admin/api-keys", h.createKey)
	m.HandleFunc("GET /admin/api-keys", h.listKeys)
	m.HandleFunc("DELETE /admin/api-keys/{id}", h.deleteKey)
}

type handlers struct{ svc *admins.Service }

var errBadBody = fail.New(fail.Invalid, "invalid request body")

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
	return user{
		ID: u.ID, DID: u.DID, IsSuper: u.IsSuper, Permissions: admins.EffectivePermissions(u).Sorted(),
		CreatedAt: adminapi.Timestamp(u.CreatedAt), LastUsedAt: adminapi.NullableTimestamp(u.LastUsedAt),
	}
}

// answer writes u, or returns err.
func answer(w http.ResponseWriter, status int, u storage.AdminUser, err error) error {
	if err != nil {
		return err
	}
	respond.JSON(w, status, present(u))
	return nil
}

func (h handlers) create(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	var req struct {
		DID         string   `json:"did"`
		Template    *string  `json:"template"`
		Permissions []string `json:"permissions"`
	}
	if err := adminapi.Read(w, r, &req); err != nil {
		return err
	}
	if req.DID == "" {
		return errBadBody
	}
	in := admins.NewUser{DID: req.DID, Permissions: req.Permissions}
	if req.Template != nil {
		in.Template = *req.Template
	}
	u, err := h.svc.CreateUser(r.Context(), p, in)
	return answer(w, http.StatusCreated, u, err)
}

func (h handlers) list(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	all, err := h.svc.ListUsers(r.Context())
	if err != nil {
		return err
	}
	out := make([]user, len(all))
	for i, u := range all {
		out[i] = present(u)
	}
	respond.JSON(w, http.StatusOK, out)
	return nil
}

func (h handlers) get(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	u, err := h.svc.GetUser(r.Context(), r.PathValue("id"))
	return answer(w, http.StatusOK, u, err)
}

func (h handlers) patchPermissions(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	var req struct {
		Grant  []string `json:"grant"`
		Revoke []string `json:"revoke"`
	}
	if err := adminapi.Read(w, r, &req); err != nil {
		return err
	}
	u, err := h.svc.UpdatePermissions(r.Context(), p, r.PathValue("id"), req.Grant, req.Revoke)
	return answer(w, http.StatusOK, u, err)
}

func (h handlers) delete(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	if err := h.svc.DeleteUser(r.Context(), p, r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// transferSuper hands the super user role to another admin user.
func (h handlers) transferSuper(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	var req struct {
		TargetUserID string `json:"target_user_id"`
	}
	if err := adminapi.Read(w, r, &req); err != nil {
		return err
	}
	if req.TargetUserID == "" {
		return errBadBody
	}
	u, err := h.svc.TransferSuper(r.Context(), p, req.TargetUserID)
	return answer(w, http.StatusOK, u, err)
}

func (h handlers) permissions(w http.ResponseWriter, _ *http.Request, _ *admins.Principal) error {
	templates := admins.Templates()
	out := make(map[string][]string, len(templates))
	for name, perms := range templates {
		out[name] = admins.NewSet(perms).Sorted()
	}
	respond.JSON(w, http.StatusOK, map[string]any{"permissions": admins.Catalog(), "templates": out})
	return nil
}

// me answers GET /admin/me: the caller's admin user and the permissions
// its credential holds (for an API key, the key's share of its user's),
// so that a front end shows only what the caller may do.
func (h handlers) me(w http.ResponseWriter, _ *http.Request, p *admins.Principal) error {
	credential, keyID := "user", (*string)(nil)
	if p.KeyID != "" {
		credential, keyID = "api_key", &p.KeyID
	}
	respond.JSON(w, http.StatusOK, map[string]any{
		"user": present(p.User), "permissions": p.Perms.Sorted(), "acts_as_super": p.ActsAsSuper(),
		"credential": credential, "key_id": keyID,
	})
	return nil
}
