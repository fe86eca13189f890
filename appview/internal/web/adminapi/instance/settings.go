package instance

import (
	"errors"
	"io"
	"mime"
	"net/http"

	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/service/instance"
	"github.com/lexview/lexview/appview/internal/web/adminapi"
	"github.com/lexview/lexview/appview/internal/web/respond"
)

// listSettings answers GET /admin/settings: every stored setting as one
// JSON object {key: value}.
func (h handlers) listSettings(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	all, err := h.instance.Settings(r.Context())
	if err != nil {
		return err
	}
	respond.JSON(w, http.StatusOK, all)
	return nil
}

// putSetting answers PUT /admin/settings/{key} with body {value}: 200
// {key, value}.
func (h handlers) putSetting(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	key := r.PathValue("key")
	if err := instance.CheckSettingKey(key); err != nil {
		return err
	}
	var req struct {
		Value *string `json:"value"`
	}
	if err := adminapi.Read(w, r, &req); err != nil {
		return err
	}
	if err := h.instance.PutSetting(r.Context(), p.DID(), key, req.Value); err != nil {
		return err
	}
	respond.JSON(w, http.StatusOK, map[string]string{"key": key, "value": *req.Value})
	return nil
}

// deleteSetting answers DELETE /admin/settings/{key}: 204, or 404 when the
// key is unset. The environment variable applies again.
func (h handlers) deleteSetting(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	if err := h.instance.DeleteSetting(r.Context(), p.DID(), r.PathValue("key")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// putLogo answers PUT /admin/settings/logo with a raw image body: 204.
func (h handlers) putLogo(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		mediaType = ""
	}
	if err := instance.CheckLogoType(mediaType); err != nil {
		return err
	}
	if r.ContentLength > instance.MaxLogoSize {
		return instance.ErrLogoTooLarge
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, instance.MaxLogoSize))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return instance.ErrLogoTooLarge
		}
		return fail.New(fail.Invalid, "invalid request body")
	}
	if err := h.instance.PutLogo(r.Context(), p.DID(), mediaType, data); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// deleteLogo answers DELETE /admin/settings/logo: 204, or 404 when no logo
// is stored.
func (h handlers) deleteLogo(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	if err := h.instance.DeleteLogo(r.Context(), p.DID()); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
