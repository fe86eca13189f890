package users

import (
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/lexview/lexview/appview/internal/admin"
	"github.com/lexview/lexview/appview/internal/admins"
	"github.com/lexview/lexview/appview/internal/respond"
)

// MaxKeyName bounds an API key's name, in characters.
const MaxKeyName = 100

type createKeyRequest struct {
	Name        string    `json:"name"`
	Permissions *[]string `json:"permissions"`
}

// createdKey is the one response that shows a key's secret.
type createdKey struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Key         string   `json:"key"`
	Permissions []string `json:"permissions"`
	CreatedAt   string   `json:"created_at"`
}

// listedKey is the list shape of a key: never the secret or its hash.
type listedKey struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	KeyPrefix   string   `json:"key_prefix"`
	Permissions []string `json:"permissions"`
	UserID      string   `json:"user_id"`
	UserDID     *string  `json:"user_did"`
	CreatedAt   string   `json:"created_at"`
	LastUsedAt  *string  `json:"last_used_at"`
}

func (h handlers) createKey(w http.ResponseWriter, r *http.Request, p *admins.Principal) {
	var req createKeyRequest
	if !admin.Decode(w, r, &req) {
		return
	}
	name := strings.TrimSpace(req.Name)
	if name == "" || req.Permissions == nil {
		respond.Error(w, http.StatusBadRequest, "invalid request body")
		return
	}
	if utf8.RuneCountInString(name) > MaxKeyName {
		respond.Errorf(w, http.StatusBadRequest, "name must be at most %d characters", MaxKeyName)
		return
	}
	if len(*req.Permissions) == 0 {
		respond.Error(w, http.StatusBadRequest, "permissions must not be empty")
		return
	}
	perms, ok := known(w, *req.Permissions)
	if !ok || !mayGrant(w, p, perms) {
		return
	}
	secret, key, err := admins.MintKey(r.Context(), h.Store, p.User.ID, name, perms.Sorted(), h.Now())
	if err != nil {
		respond.Internal(w, r, h.Log, err)
		return
	}
	h.Audit(r.Context(), p, "api_key.created", key.ID, map[string]any{
		"name": key.Name, "key_prefix": key.Prefix, "permissions": key.Permissions, "user_id": key.UserID,
	})
	respond.JSON(w, http.StatusCreated, createdKey{
		ID: key.ID, Name: key.Name, Key: secret, Permissions: key.Permissions, CreatedAt: admin.Timestamp(key.CreatedAt),
	})
}

func (h handlers) listKeys(w http.ResponseWriter, r *http.Request, _ *admins.Principal) {
	keys, err := h.Store.ListAdminAPIKeys(r.Context())
	if err != nil {
		respond.Internal(w, r, h.Log, err)
		return
	}
	users, err := h.Store.ListAdminUsers(r.Context())
	if err != nil {
		respond.Internal(w, r, h.Log, err)
		return
	}
	dids := make(map[string]string, len(users))
	for _, u := range users {
		dids[u.ID] = u.DID
	}
	out := make([]listedKey, len(keys))
	for i, k := range keys {
		perms := slices.Clone(k.Permissions)
		slices.Sort(perms)
		out[i] = listedKey{
			ID: k.ID, Name: k.Name, KeyPrefix: k.Prefix, Permissions: perms, UserID: k.UserID,
			CreatedAt: admin.Timestamp(k.CreatedAt), LastUsedAt: admin.NullableTimestamp(k.LastUsedAt),
		}
		if did, ok := dids[k.UserID]; ok {
			out[i].UserDID = &did
		}
	}
	respond.JSON(w, http.StatusOK, out)
}

func (h handlers) deleteKey(w http.ResponseWriter, r *http.Request, p *admins.Principal) {
	id := r.PathValue("id")
	err := h.Store.DeleteAdminAPIKey(r.Context(), id)
	if h.Failed(w, r, err, "API key not found") {
		return
	}
	h.Audit(r.Context(), p, "api_key.revoked", id, nil)
	w.WriteHeader(http.StatusNoContent)
}
