// Package proxysettings serves GET and PUT /admin/settings/xrpc-proxy: the
// policy saying which NSIDs without a local lexicon are forwarded to their
// authority's service.
package proxysettings

import (
	"net/http"

	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/service/xrpcproxy"
	"github.com/lexview/lexview/appview/internal/web/adminapi"
	"github.com/lexview/lexview/appview/internal/web/respond"
)

// Mount registers the endpoints.
func Mount(m *adminapi.Mux, policies *xrpcproxy.Policies) {
	h := handlers{policies}
	m.HandleFunc("GET /admin/settings/xrpc-proxy", h.get)
	m.HandleFunc("PUT /admin/settings/xrpc-proxy", h.put)
}

type handlers struct{ policies *xrpcproxy.Policies }

func (h handlers) get(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	p, err := h.policies.Get(r.Context())
	if err != nil {
		return err
	}
	respond.JSON(w, http.StatusOK, p)
	return nil
}

// put replaces the policy with {mode, patterns}: 200 with the stored
// policy; 400 for an unknown mode or an invalid pattern ("*" alone among
// them).
func (h handlers) put(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	var req struct {
		Mode     *string  `json:"mode"`
		Patterns []string `json:"patterns"`
	}
	if err := adminapi.Read(w, r, &req); err != nil {
		return err
	}
	if req.Mode == nil {
		return fail.New(fail.Invalid, "mode is required")
	}
	pol := xrpcproxy.Policy{Mode: *req.Mode, Patterns: req.Patterns}
	if pol.Patterns == nil {
		pol.Patterns = []string{}
	}
	if err := h.policies.Put(r.Context(), p.DID(), pol); err != nil {
		return err
	}
	respond.JSON(w, http.StatusOK, pol)
	return nil
}
