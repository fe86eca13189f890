// Package linkedrepos serves the admin endpoints of linked repos over the
// linked repos service: grants, their authorization and their invites.
package linkedrepos

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"

	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/service/linkedrepos"
	"github.com/lexview/lexview/appview/internal/web/adminapi"
	"github.com/lexview/lexview/appview/internal/web/respond"
	"github.com/lexview/lexview/storage"
)

// Mount registers the linked-repo endpoints.
func Mount(m *adminapi.Mux, svc *linkedrepos.Service) {
	h := handlers{svc}
	m.HandleFunc("GET /admin/linked-repos", h.list)
	m.HandleFunc("POST /admin/linked-repos", h.create)
	m.HandleFunc("POST /admin/linked-repos/{id}/authorize", h.authorize)
	m.HandleFunc("POST /admin/linked-repos/{id}/invite", h.invite)
	m.HandleFunc("GET /admin/linked-repos/{id}/invites", h.invites)
	m.HandleFunc("DELETE /admin/linked-repos/{id}/invites/{invite}", h.revoke)
	m.HandleFunc("DELETE /admin/linked-repos/{id}", h.delete)
}

type handlers struct{ svc *linkedrepos.Service }

// grantJSON is a grant as the admin API shows it: never its session.
type grantJSON struct {
	ID              string  `json:"id"`
	DID             *string `json:"did"`
	Handle          string  `json:"handle,omitempty"`
	Reason          string  `json:"reason"`
	Scopes          string  `json:"scopes"`
	Status          string  `json:"status"`
	LastError       *string `json:"last_error"`
	LastRefreshedAt *string `json:"last_refreshed_at"`
	AuthorizedAt    *string `json:"authorized_at"`
	CreatedBy       string  `json:"created_by"`
	CreatedAt       string  `json:"created_at"`
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func toGrantJSON(g storage.LinkedRepoGrant) grantJSON {
	return grantJSON{
		ID: g.ID, DID: nullable(g.DID), Handle: g.Handle, Reason: g.Reason, Scopes: g.Scopes, Status: g.Status,
		LastError: nullable(g.LastError), LastRefreshedAt: adminapi.NullableTimestamp(g.LastRefreshedAt),
		AuthorizedAt: adminapi.NullableTimestamp(g.AuthorizedAt), CreatedBy: g.CreatedBy, CreatedAt: adminapi.Timestamp(g.CreatedAt),
	}
}

func (h handlers) list(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	list, err := h.svc.List(r.Context())
	if err != nil {
		return err
	}
	out := make([]grantJSON, len(list))
	for i, g := range list {
		out[i] = toGrantJSON(g)
	}
	respond.JSON(w, http.StatusOK, map[string]any{"linked_repos": out})
	return nil
}

func (h handlers) create(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	var req struct {
		Scopes *string `json:"scopes"`
		Handle *string `json:"handle"`
		Reason *string `json:"reason"`
	}
	if err := adminapi.Read(w, r, &req); err != nil {
		return err
	}
	if req.Scopes == nil {
		return fail.New(fail.Invalid, "scopes is required")
	}
	in := linkedrepos.CreateInput{Scopes: *req.Scopes}
	if req.Handle != nil {
		in.Handle = *req.Handle
	}
	if req.Reason != nil {
		in.Reason = *req.Reason
	}
	g, err := h.svc.Create(r.Context(), p.DID(), in)
	if err != nil {
		return err
	}
	respond.JSON(w, http.StatusOK, toGrantJSON(g))
	return nil
}

func (h handlers) authorize(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	u, err := h.svc.Authorize(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	respond.JSON(w, http.StatusOK, map[string]string{"authorize_url": u})
	return nil
}

// maxInviteBody bounds the optional invite body.
const maxInviteBody = 4 << 10

func (h handlers) invite(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	expiresIn, err := readExpiresIn(w, r)
	if err != nil {
		return err
	}
	m, err := h.svc.Invite(r.Context(), p.DID(), r.PathValue("id"), expiresIn)
	if err != nil {
		return err
	}
	respond.JSON(w, http.StatusOK, map[string]string{"invite_url": m.URL, "expires_at": adminapi.Timestamp(m.ExpiresAt)})
	return nil
}

// readExpiresIn reads the optional `{expires_in}` body: nil when the body
// or the field is absent, a 400 when it is not a whole number.
func readExpiresIn(w http.ResponseWriter, r *http.Request) (*int64, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxInviteBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, fail.Wrap(fail.TooLarge, "request body too large", err)
		}
		return nil, fail.Wrap(fail.Invalid, "invalid request body", err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, nil
	}
	var req struct {
		ExpiresIn *float64 `json:"expires_in"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fail.Wrap(fail.Invalid, "invalid request body", err)
	}
	if req.ExpiresIn == nil {
		return nil, nil
	}
	v := *req.ExpiresIn
	if v != math.Trunc(v) || v < linkedrepos.MinInviteLifetime || v > linkedrepos.MaxInviteLifetime {
		return nil, fail.Invalidf("expires_in must be a whole number of seconds between %d and %d",
			linkedrepos.MinInviteLifetime, linkedrepos.MaxInviteLifetime)
	}
	n := int64(v)
	return &n, nil
}

func (h handlers) invites(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	list, err := h.svc.Invites(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	type inviteJSON struct {
		InviteID  string `json:"invite_id"`
		ExpiresAt string `json:"expires_at"`
	}
	out := make([]inviteJSON, len(list))
	for i, inv := range list {
		out[i] = inviteJSON{InviteID: inv.ID, ExpiresAt: adminapi.Timestamp(inv.ExpiresAt)}
	}
	respond.JSON(w, http.StatusOK, map[string]any{"invites": out})
	return nil
}

func (h handlers) revoke(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	if err := h.svc.RevokeInvite(r.Context(), p.DID(), r.PathValue("id"), r.PathValue("invite")); err != nil {
		return err
	}
	respond.JSON(w, http.StatusOK, map[string]bool{"revoked": true})
	return nil
}

func (h handlers) delete(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	if err := h.svc.Delete(r.Context(), p.DID(), r.PathValue("id")); err != nil {
		return err
	}
	respond.JSON(w, http.StatusOK, map[string]bool{"deleted": true})
	return nil
}
