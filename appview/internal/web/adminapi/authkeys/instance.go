package authkeys

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/service/clientkeys"
	"github.com/lexview/lexview/appview/internal/service/domains"
	"github.com/lexview/lexview/appview/internal/web/adminapi"
	"github.com/lexview/lexview/appview/internal/web/respond"
	"github.com/lexview/lexview/storage"
)

// PrimaryDomain names the primary domain, whose key set URL the instance
// key endpoints report.
type PrimaryDomain interface {
	Primary(ctx context.Context) (storage.Domain, bool)
}

// MountInstance registers the instance OAuth key endpoints.
func MountInstance(m *adminapi.Mux, svc *clientkeys.Instance, doms PrimaryDomain) {
	h := instanceHandlers{svc, doms}
	m.HandleFunc("GET /admin/oauth/instance-key", h.list)
	m.HandleFunc("POST /admin/oauth/instance-key/rotate", h.rotate)
	m.HandleFunc("DELETE /admin/oauth/instance-key/{kid}", h.revoke)
}

type instanceHandlers struct {
	svc  *clientkeys.Instance
	doms PrimaryDomain
}

// instanceKeyView is one instance key in responses: its public JWK only
// while it is published; the private key never.
type instanceKeyView struct {
	KID       string          `json:"kid"`
	Status    string          `json:"status"`
	CreatedAt string          `json:"created_at"`
	RetiredAt *string         `json:"retired_at"`
	RevokedAt *string         `json:"revoked_at"`
	PublicJWK json.RawMessage `json:"public_jwk,omitempty"`
}

func toInstanceView(k storage.ClientAuthKey) (instanceKeyView, error) {
	v := instanceKeyView{KID: k.KID, Status: k.Status, CreatedAt: adminapi.Timestamp(k.CreatedAt)}
	if !k.RetiredAt.IsZero() {
		t := adminapi.Timestamp(k.RetiredAt)
		v.RetiredAt = &t
	}
	if !k.RevokedAt.IsZero() {
		t := adminapi.Timestamp(k.RevokedAt)
		v.RevokedAt = &t
	}
	if clientkeys.Published(k) {
		j, err := clientkeys.PublicJWK(k)
		if err != nil {
			return v, err
		}
		if v.PublicJWK, err = json.Marshal(j); err != nil {
			return v, err
		}
	}
	return v, nil
}

// jwksURI is the key set URL on the primary domain; nil without one.
func (h instanceHandlers) jwksURI(ctx context.Context) *string {
	d, ok := h.doms.Primary(ctx)
	if !ok {
		return nil
	}
	u := domains.JWKSURI(d.URL)
	return &u
}

func (h instanceHandlers) list(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	keys, err := h.svc.List(r.Context())
	if err != nil {
		return err
	}
	out := make([]instanceKeyView, len(keys))
	for i, k := range keys {
		if out[i], err = toInstanceView(k); err != nil {
			return err
		}
	}
	respond.JSON(w, http.StatusOK, struct {
		Keys    []instanceKeyView `json:"keys"`
		JWKSURI *string           `json:"jwks_uri"`
	}{out, h.jwksURI(r.Context())})
	return nil
}

func (h instanceHandlers) rotate(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	next, retired, err := h.svc.Rotate(r.Context(), p.DID())
	if err != nil {
		return err
	}
	respond.JSON(w, http.StatusOK, struct {
		KID        string  `json:"kid"`
		RetiredKID string  `json:"retired_kid"`
		JWKSURI    *string `json:"jwks_uri"`
	}{next.KID, retired.KID, h.jwksURI(r.Context())})
	return nil
}

// revoke answers 204; 400 for the current key, 404 for an unknown kid.
func (h instanceHandlers) revoke(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	if err := h.svc.Revoke(r.Context(), p.DID(), r.PathValue("kid")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
