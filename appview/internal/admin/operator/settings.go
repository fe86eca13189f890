package operator

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"net/http"
	"regexp"
	"unicode/utf8"

	"github.com/lexview/lexview/appview/internal/admin"
	"github.com/lexview/lexview/appview/internal/admins"
	"github.com/lexview/lexview/appview/internal/respond"
	"github.com/lexview/lexview/storage"
)

// LogoKey is the SettingsStore blob key of the instance logo.
const LogoKey = "logo"

// MaxLogoSize bounds the logo image (1 MiB).
const MaxLogoSize = 1 << 20

// settingKey is the form of a setting key: 1 to 100 of [a-z0-9_.-].
var settingKey = regexp.MustCompile(`^[a-z0-9_.-]{1,100}$`)

// reservedKeys name other endpoints under /admin/settings/, so they cannot
// be settings.
var reservedKeys = map[string]bool{LogoKey: true, "db-info": true, "xrpc-proxy": true}

// logoTypes are the accepted logo media types; raster types must also be
// what http.DetectContentType sniffs from the body.
var logoTypes = map[string]bool{
	"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true, "image/svg+xml": true,
}

// validKey answers 400 and returns false when the {key} path value is not
// a setting key.
func validKey(w http.ResponseWriter, key string) bool {
	if !settingKey.MatchString(key) {
		respond.Error(w, http.StatusBadRequest, "invalid setting key: use 1 to 100 characters of a-z, 0-9, _, . and -")
		return false
	}
	if reservedKeys[key] {
		respond.Error(w, http.StatusBadRequest, "reserved setting key")
		return false
	}
	return true
}

// listSettings answers GET /admin/settings: every stored setting as one
// JSON object {key: value}.
func (h handlers) listSettings(w http.ResponseWriter, r *http.Request, _ *admins.Principal) {
	all, err := h.Store.ListSettings(r.Context())
	if err != nil {
		respond.Internal(w, r, h.Log, err)
		return
	}
	respond.JSON(w, http.StatusOK, all)
}

// putSetting answers PUT /admin/settings/{key} with body {value}: 200
// {key, value}.
func (h handlers) putSetting(w http.ResponseWriter, r *http.Request, p *admins.Principal) {
	key := r.PathValue("key")
	if !validKey(w, key) {
		return
	}
	var req struct {
		Value *string `json:"value"`
	}
	if !admin.Decode(w, r, &req) {
		return
	}
	if req.Value == nil {
		respond.Error(w, http.StatusBadRequest, "value is required")
		return
	}
	if err := h.Store.PutSetting(r.Context(), key, *req.Value); err != nil {
		respond.Internal(w, r, h.Log, err)
		return
	}
	h.Audit(r.Context(), p, "setting.updated", key, map[string]any{"value": *req.Value})
	respond.JSON(w, http.StatusOK, map[string]string{"key": key, "value": *req.Value})
}

// deleteSetting answers DELETE /admin/settings/{key}: 204, or 404 when the
// key is unset. The environment variable applies again.
func (h handlers) deleteSetting(w http.ResponseWriter, r *http.Request, p *admins.Principal) {
	key := r.PathValue("key")
	if !validKey(w, key) {
		return
	}
	err := h.Store.DeleteSetting(r.Context(), key)
	if h.Failed(w, r, err, "setting not found") {
		return
	}
	h.Audit(r.Context(), p, "setting.deleted", key, nil)
	w.WriteHeader(http.StatusNoContent)
}

// putLogo answers PUT /admin/settings/logo with a raw image body: 204.
func (h handlers) putLogo(w http.ResponseWriter, r *http.Request, p *admins.Principal) {
	mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || !logoTypes[mediaType] {
		respond.Error(w, http.StatusBadRequest, "logo must be a PNG, JPEG, GIF, WebP or SVG image")
		return
	}
	if r.ContentLength > MaxLogoSize {
		respond.Error(w, http.StatusRequestEntityTooLarge, "logo exceeds 1 MiB")
		return
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxLogoSize))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			respond.Error(w, http.StatusRequestEntityTooLarge, "logo exceeds 1 MiB")
			return
		}
		respond.Error(w, http.StatusBadRequest, "invalid request body")
		return
	}
	if !isImage(mediaType, data) {
		respond.Errorf(w, http.StatusBadRequest, "body is not a %s image", mediaType)
		return
	}
	err = h.Store.PutBlob(r.Context(), LogoKey, storage.Blob{ContentType: mediaType, Data: data, UpdatedAt: h.Now()})
	if err != nil {
		respond.Internal(w, r, h.Log, err)
		return
	}
	h.Audit(r.Context(), p, "logo.updated", LogoKey, map[string]any{"content_type": mediaType, "size_bytes": len(data)})
	w.WriteHeader(http.StatusNoContent)
}

// isImage checks the body against its declared type: raster images by
// content sniffing, SVG as UTF-8 text holding an <svg> element.
func isImage(mediaType string, data []byte) bool {
	if len(data) == 0 {
		return false
	}
	if mediaType == "image/svg+xml" {
		return utf8.Valid(data) && bytes.Contains(bytes.ToLower(data), []byte("<svg"))
	}
	return http.DetectContentType(data) == mediaType
}

// deleteLogo answers DELETE /admin/settings/logo: 204, or 404 when no logo
// is stored.
func (h handlers) deleteLogo(w http.ResponseWriter, r *http.Request, p *admins.Principal) {
	err := h.Store.DeleteBlob(r.Context(), LogoKey)
	if h.Failed(w, r, err, "logo not found") {
		return
	}
	h.Audit(r.Context(), p, "logo.deleted", LogoKey, nil)
	w.WriteHeader(http.StatusNoContent)
}
