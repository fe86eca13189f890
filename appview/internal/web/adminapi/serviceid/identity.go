package serviceid

import (
	"net/http"

	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/service/serviceid"
	"github.com/lexview/lexview/appview/internal/web/adminapi"
	"github.com/lexview/lexview/appview/internal/web/respond"
	"github.com/lexview/lexview/storage"
)

// MountIdentity registers the service-identity and verification-method
// endpoints.
func MountIdentity(m *adminapi.Mux, svc *serviceid.Service) {
	h := identityHandlers{svc}
	m.HandleFunc("GET /admin/service-identity", h.get)
	m.HandleFunc("PUT /admin/service-identity", h.put)
	m.HandleFunc("GET /admin/verification-methods", h.listMethods)
	m.HandleFunc("POST /admin/verification-methods", h.addMethod)
	m.HandleFunc("DELETE /admin/verification-methods/{fragment}", h.deleteMethod)
	m.HandleFunc("POST /admin/service-entries/sync-plc", h.syncPLC)
	m.HandleFunc("POST /admin/service-entries/sync-plc/request", h.requestPLCToken)
	m.HandleFunc("POST /admin/service-entries/sync-plc/submit", h.submitAccountPLC)
}

type identityHandlers struct{ svc *serviceid.Service }

func identityJSON(id serviceid.Identity) map[string]any {
	out := map[string]any{"mode": id.Mode, "did": nil, "primary_domain": nil, "document_url": nil}
	if id.PrimaryDomain != "" {
		out["primary_domain"] = id.PrimaryDomain
	}
	if id.DID != "" {
		out["did"] = id.DID
		if id.Mode == serviceid.ModeDIDWeb {
			out["document_url"] = id.PrimaryDomain + "/.well-known/did.json"
		}
	}
	switch id.Mode {
	case serviceid.ModeDIDPLC:
		out["rotation_key"] = nullable(id.RotationKey)
	case serviceid.ModeAttachAccount:
		out["account_handle"], out["account_pds"] = nullable(id.AccountHandle), nullable(id.AccountPDS)
	}
	return out
}

// nullable is s, or JSON null when s is "".
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (h identityHandlers) get(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	id, err := h.svc.Get(r.Context())
	if err != nil {
		return err
	}
	respond.JSON(w, http.StatusOK, identityJSON(id))
	return nil
}

func (h identityHandlers) put(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	var req struct {
		Mode            string `json:"mode"`
		Create          bool   `json:"create"`
		DID             string `json:"did"`
		RotationKey     string `json:"rotation_key"`
		Identifier      string `json:"identifier"`
		Password        string `json:"password"`
		AuthFactorToken string `json:"auth_factor_token"`
	}
	if err := adminapi.Read(w, r, &req); err != nil {
		return err
	}
	id, err := h.svc.SetMode(r.Context(), p.DID(), serviceid.IdentityChange{Mode: req.Mode,
		PLC:     serviceid.PLCRequest{Create: req.Create, DID: req.DID, RotationKey: req.RotationKey},
		Account: serviceid.AccountRequest{Identifier: req.Identifier, Password: req.Password, AuthFactorToken: req.AuthFactorToken}})
	if err != nil {
		return err
	}
	respond.JSON(w, http.StatusOK, identityJSON(id))
	return nil
}

// methodJSON is a verification method: never its private key.
type methodJSON struct {
	FragmentID         string `json:"fragment_id"`
	Type               string `json:"type"`
	KeyType            string `json:"key_type"`
	PublicKeyMultibase string `json:"public_key_multibase"`
	Generated          bool   `json:"generated"`
	CreatedAt          string `json:"created_at"`
}

func toMethodJSON(m storage.VerificationMethod) methodJSON {
	return methodJSON{FragmentID: "#" + m.Fragment, Type: "Multikey", KeyType: m.KeyType, PublicKeyMultibase: m.PublicKeyMultibase,
		Generated: m.SealedPrivateKey != "", CreatedAt: adminapi.Timestamp(m.CreatedAt)}
}

func (h identityHandlers) listMethods(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	list, err := h.svc.Methods(r.Context())
	if err != nil {
		return err
	}
	out := make([]methodJSON, len(list))
	for i, m := range list {
		out[i] = toMethodJSON(m)
	}
	respond.JSON(w, http.StatusOK, map[string]any{"verification_methods": out})
	return nil
}

func (h identityHandlers) addMethod(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	var req struct {
		FragmentID         string `json:"fragment_id"`
		PublicKeyMultibase string `json:"public_key_multibase"`
		Generate           bool   `json:"generate"`
		KeyType            string `json:"key_type"`
	}
	if err := adminapi.Read(w, r, &req); err != nil {
		return err
	}
	m, err := h.svc.AddMethod(r.Context(), p.DID(), serviceid.NewMethod(req))
	if err != nil {
		return err
	}
	respond.JSON(w, http.StatusCreated, toMethodJSON(m))
	return nil
}

func (h identityHandlers) deleteMethod(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	if err := h.svc.DeleteMethod(r.Context(), p.DID(), r.PathValue("fragment")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h identityHandlers) syncPLC(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	if _, err := h.svc.SyncPLC(r.Context(), p.DID()); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h identityHandlers) requestPLCToken(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	if err := h.svc.RequestPLCToken(r.Context(), p.DID()); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h identityHandlers) submitAccountPLC(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	var req struct {
		Token string `json:"token"`
	}
	if err := adminapi.Read(w, r, &req); err != nil {
		return err
	}
	if err := h.svc.SubmitAccountPLC(r.Context(), p.DID(), req.Token); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
