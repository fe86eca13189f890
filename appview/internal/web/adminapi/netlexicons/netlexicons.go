// Package netlexicons serves the admin network-lexicon endpoints: add by
// NSID (resolved through DNS and fetched from the authority's PDS), list,
// remove, and resolve without storing, over the netlexicons service.
package netlexicons

import (
	"encoding/json"
	"net/http"

	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/service/netlexicons"
	"github.com/lexview/lexview/appview/internal/web/adminapi"
	adminlexicons "github.com/lexview/lexview/appview/internal/web/adminapi/lexicons"
	"github.com/lexview/lexview/appview/internal/web/respond"
	"github.com/lexview/lexview/storage"
)

// Mount registers the network lexicon endpoints.
func Mount(m *adminapi.Mux, svc *netlexicons.Service) {
	h := handlers{svc}
	m.HandleFunc("POST /admin/network-lexicons", h.add)
	m.HandleFunc("GET /admin/network-lexicons", h.list)
	m.HandleFunc("GET /admin/network-lexicons/resolve/{nsid}", h.resolve)
	m.HandleFunc("DELETE /admin/network-lexicons/{nsid}", h.delete)
}

type handlers struct{ svc *netlexicons.Service }

// row is the list shape: the specification's fields, then cid (of the
// schema record last fetched) and upstream_deleted_at (when the authority
// was first seen not to publish the schema any more; null while it does).
type row struct {
	NSID              string  `json:"nsid"`
	AuthorityDID      string  `json:"authority_did"`
	TargetCollection  *string `json:"target_collection"`
	LastFetchedAt     string  `json:"last_fetched_at"`
	CreatedAt         string  `json:"created_at"`
	CID               string  `json:"cid"`
	UpstreamDeletedAt *string `json:"upstream_deleted_at"`
}

func toRow(n storage.NetworkLexicon) row {
	r := row{NSID: n.NSID, AuthorityDID: n.AuthorityDID, LastFetchedAt: adminapi.Timestamp(n.LastFetchedAt),
		CreatedAt: adminapi.Timestamp(n.CreatedAt), CID: n.CID}
	if n.TargetCollection != "" {
		r.TargetCollection = &n.TargetCollection
	}
	if !n.UpstreamDeletedAt.IsZero() {
		t := adminapi.Timestamp(n.UpstreamDeletedAt)
		r.UpstreamDeletedAt = &t
	}
	return r
}

// added is the answer to an add: the specification's {nsid,
// authority_did, revision}, then, as for an upload, the backfill job of a
// record lexicon and warnings when there is something to say.
type added struct {
	NSID         string `json:"nsid"`
	AuthorityDID string `json:"authority_did"`
	Revision     int    `json:"revision"`
	adminlexicons.Outcome
}

func (h handlers) add(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	var req struct {
		NSID             string  `json:"nsid"`
		TargetCollection *string `json:"target_collection"`
	}
	if err := adminapi.Read(w, r, &req); err != nil {
		return err
	}
	if req.NSID == "" {
		return fail.New(fail.Invalid, "nsid is required")
	}
	target := ""
	if req.TargetCollection != nil {
		target = *req.TargetCollection
	}
	res, err := h.svc.Add(r.Context(), p.DID(), req.NSID, target)
	if err != nil {
		return err
	}
	out := added{NSID: res.Row.NSID, AuthorityDID: res.Row.AuthorityDID, Revision: res.Lexicon.Revision,
		Outcome: adminlexicons.NewOutcome(res.Upload)}
	status := http.StatusOK
	if res.Created {
		status = http.StatusCreated
	}
	respond.JSON(w, status, out)
	return nil
}

func (h handlers) list(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	rows, err := h.svc.List(r.Context())
	if err != nil {
		return err
	}
	out := make([]row, len(rows))
	for i, n := range rows {
		out[i] = toRow(n)
	}
	respond.JSON(w, http.StatusOK, out)
	return nil
}

// resolved is the answer of resolve: what each step found.
type resolved struct {
	NSID         string          `json:"nsid"`
	Authority    string          `json:"authority"`
	AuthorityDID string          `json:"authority_did"`
	PDS          string          `json:"pds"`
	URI          string          `json:"uri"`
	CID          string          `json:"cid"`
	LexiconType  string          `json:"lexicon_type"`
	Schema       json.RawMessage `json:"schema"`
}

func (h handlers) resolve(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	nsid := r.PathValue("nsid")
	res, err := h.svc.Resolve(r.Context(), nsid)
	if err != nil {
		return err
	}
	a := res.Schema.Authority
	respond.JSON(w, http.StatusOK, resolved{NSID: nsid, Authority: a.Domain, AuthorityDID: a.DID, PDS: a.PDS(),
		URI: res.Schema.URI, CID: res.Schema.CID, LexiconType: string(res.Kind), Schema: res.Schema.Document})
	return nil
}

func (h handlers) delete(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	if err := h.svc.Delete(r.Context(), p.DID(), r.PathValue("nsid")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
