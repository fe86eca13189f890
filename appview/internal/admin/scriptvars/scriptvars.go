// Package scriptvars serves the admin endpoints of script variables: named
// secrets that Lua scripts read through `vars`. Values are sealed at rest
// (AES-256-GCM, bound to the variable's key) and never leave through the
// API; Open decrypts them for the script runtime.
package scriptvars

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"

	"github.com/lexview/lexview/appview/internal/admin"
	"github.com/lexview/lexview/appview/internal/admins"
	"github.com/lexview/lexview/appview/internal/respond"
	"github.com/lexview/lexview/oauth"
	"github.com/lexview/lexview/storage"
)

// MaxValueSize bounds a variable's value in bytes (64 KiB).
const MaxValueSize = 64 << 10

// keyPattern is a variable key: 1–128 characters of [A-Za-z0-9_.-],
// starting with a letter or an underscore.
var keyPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]{0,127}$`)

// ValidKey reports whether key is a valid variable key.
func ValidKey(key string) bool { return keyPattern.MatchString(key) }

// purpose is the sealing purpose of the variable key: a sealed value opens
// only under the key it was stored for.
func purpose(key string) string { return "script-variable:" + key }

// Lister is the storage Open needs.
type Lister interface {
	ListScriptVariables(ctx context.Context) ([]storage.ScriptVariable, error)
}

// Open decrypts every stored variable, keyed by name. Variables that do
// not open (sealed with another key, tampered with, or no sealer) are left
// out of the map and named in the returned error, so the caller decides
// whether to run with the rest.
func Open(ctx context.Context, store Lister, sealer *oauth.Sealer) (map[string]string, error) {
	list, err := store.ListScriptVariables(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(list))
	var errs []error
	for _, v := range list {
		if sealer == nil {
			errs = append(errs, fmt.Errorf("script variable %q: token encryption is not configured", v.Key))
			continue
		}
		value, err := sealer.OpenString(purpose(v.Key), v.Sealed)
		if err != nil {
			errs = append(errs, fmt.Errorf("script variable %q: %w", v.Key, err))
			continue
		}
		out[v.Key] = value
	}
	return out, errors.Join(errs...)
}

const (
	msgNotFound = "script variable not found"
	msgNoSealer = "token encryption is not configured"
)

// Mount registers the script-variable endpoints.
func Mount(m *admin.Mux, d admin.Deps) {
	h := handlers{d}
	m.Handle("GET /admin/script-variables", h.list)
	m.Handle("POST /admin/script-variables", h.set)
	m.Handle("DELETE /admin/script-variables/{key}", h.delete)
}

type handlers struct{ admin.Deps }

// VarsInvalidator is implemented by a script runtime that caches the
// decrypted variables: InvalidateVars makes its next run read them again.
type VarsInvalidator interface {
	InvalidateVars()
}

// invalidate lets running scripts see a variable change at once, when the
// runtime caches variables.
func (h handlers) invalidate() {
	if v, ok := h.Scripts.(VarsInvalidator); ok {
		v.InvalidateVars()
	}
}

// variable is the list shape of a variable: never its value.
type variable struct {
	Key       string `json:"key"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

func (h handlers) list(w http.ResponseWriter, r *http.Request, _ *admins.Principal) {
	list, err := h.Store.ListScriptVariables(r.Context())
	if err != nil {
		respond.Internal(w, r, h.Log, err)
		return
	}
	out := make([]variable, len(list))
	for i, v := range list {
		out[i] = variable{Key: v.Key, CreatedAt: admin.Timestamp(v.CreatedAt), UpdatedAt: admin.Timestamp(v.UpdatedAt)}
	}
	respond.JSON(w, http.StatusOK, map[string]any{"variables": out})
}

func (h handlers) set(w http.ResponseWriter, r *http.Request, p *admins.Principal) {
	if h.Sealer == nil {
		respond.Error(w, http.StatusServiceUnavailable, msgNoSealer)
		return
	}
	var req struct {
		Key   string  `json:"key"`
		Value *string `json:"value"`
	}
	if !admin.Decode(w, r, &req) {
		return
	}
	switch {
	case req.Key == "":
		respond.Error(w, http.StatusBadRequest, "key is required")
		return
	case !ValidKey(req.Key):
		respond.Error(w, http.StatusBadRequest,
			"key must be 1 to 128 characters of letters, digits, _, . and -, starting with a letter or _")
		return
	case req.Value == nil:
		respond.Error(w, http.StatusBadRequest, "value is required")
		return
	case len(*req.Value) > MaxValueSize:
		respond.Errorf(w, http.StatusBadRequest, "value must be at most %d bytes", MaxValueSize)
		return
	}
	sealed, err := h.Sealer.SealString(purpose(req.Key), *req.Value)
	if err != nil {
		respond.Internal(w, r, h.Log, err)
		return
	}
	now := h.Now()
	// The store keeps the first CreatedAt of an existing key.
	if err := h.Store.PutScriptVariable(r.Context(), storage.ScriptVariable{
		Key: req.Key, Sealed: sealed, CreatedAt: now, UpdatedAt: now,
	}); err != nil {
		respond.Internal(w, r, h.Log, err)
		return
	}
	h.invalidate()
	h.Audit(r.Context(), p, "script_variable.set", req.Key, nil)
	respond.JSON(w, http.StatusOK, map[string]string{"key": req.Key})
}

func (h handlers) delete(w http.ResponseWriter, r *http.Request, p *admins.Principal) {
	key := r.PathValue("key")
	err := h.Store.DeleteScriptVariable(r.Context(), key)
	if h.Failed(w, r, err, msgNotFound) {
		return
	}
	h.invalidate()
	h.Audit(r.Context(), p, "script_variable.deleted", key, nil)
	w.WriteHeader(http.StatusNoContent)
}
