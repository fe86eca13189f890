package users

import (
	"net/http"

	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/web/adminapi"
	"github.com/lexview/lexview/appview/internal/web/respond"
)

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

func (h handlers) createKey(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	var req struct {
		Name        string    `json:"name"`
		Permissions *[]string `json:"permissions"`
	}
	if err := adminapi.Read(w, r, &req); err != nil {
		return err
	}
	if req.Permissions == nil {
		return errBadBody
	}
	secret, key, err := h.svc.CreateKey(r.Context(), p, req.Name, *req.Permissions)
	if err != nil {
		return err
	}
	respond.JSON(w, http.StatusCreated, createdKey{
		ID: key.ID, Name: key.Name, Key: secret, Permissions: key.Permissions, CreatedAt: adminapi.Timestamp(key.CreatedAt),
	})
	return nil
}

func (h handlers) listKeys(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	keys, err := h.svc.ListKeys(r.Context())
	if err != nil {
		return err
	}
	out := make([]listedKey, len(keys))
	for i, k := range keys {
		out[i] = listedKey{
			ID: k.ID, Name: k.Name, KeyPrefix: k.Prefix, Permissions: k.Permissions, UserID: k.UserID,
			CreatedAt: adminapi.Timestamp(k.CreatedAt), LastUsedAt: adminapi.NullableTimestamp(k.LastUsedAt),
		}
		if k.UserDID != "" {
			out[i].UserDID = &k.UserDID
		}
	}
	respond.JSON(w, http.StatusOK, out)
	return nil
}

func (h handlers) deleteKey(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	if err := h.svc.RevokeKey(r.Context(), p, r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
