package operator

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/admin"
	"github.com/lexview/lexview/appview/internal/admins"
	"github.com/lexview/lexview/appview/internal/respond"
	"github.com/lexview/lexview/storage"
)

// Record listing page sizes and the bulk-delete bound.
const (
	DefaultRecordLimit = 50
	MaxRecordLimit     = 100
	MaxDeleteURIs      = 1000
	// maxAuditedURIs bounds the URIs copied into a record.deleted event.
	maxAuditedURIs = 100
)

// record is the admin shape of an indexed record.
type record struct {
	URI        string          `json:"uri"`
	DID        string          `json:"did"`
	Collection string          `json:"collection"`
	RKey       string          `json:"rkey"`
	CID        string          `json:"cid"`
	IndexedAt  string          `json:"indexed_at"`
	Record     json.RawMessage `json:"record"`
}

// recordPage is the body of GET /admin/records.
type recordPage struct {
	Records []record `json:"records"`
	Cursor  *string  `json:"cursor"`
}

// recordScope binds admin record cursors to one collection (or all, "")
// and DID filter. It differs from the XRPC listing's scope, so cursors do
// not cross over.
func recordScope(q storage.ListQuery) string {
	return "admin-records\x00" + q.Collection + "\x00" + q.DID
}

// listRecords answers GET /admin/records?collection=&did=&limit=&cursor=:
// the records of one collection, or of every collection when collection is
// absent or empty, newest first; with did, that repository's records in
// AT URI order (collection, then record key), highest first.
func (h handlers) listRecords(w http.ResponseWriter, r *http.Request, _ *admins.Principal) {
	params := r.URL.Query()
	var q storage.ListQuery
	if raw := params.Get("collection"); raw != "" {
		nsid, err := syntax.ParseNSID(raw)
		if err != nil {
			respond.Error(w, http.StatusBadRequest, "invalid collection NSID")
			return
		}
		q.Collection = nsid.String()
	}
	var err error
	if q.Limit, err = admin.Limit(r, DefaultRecordLimit, MaxRecordLimit); err != nil {
		respond.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	if params.Has("did") {
		did, err := syntax.ParseDID(params.Get("did"))
		if err != nil {
			respond.Error(w, http.StatusBadRequest, "invalid did")
			return
		}
		q.DID = did.String()
	}
	if params.Has("cursor") {
		pos, err := storage.DecodeCursor(recordScope(q), params.Get("cursor"))
		if err != nil {
			respond.Error(w, http.StatusBadRequest, "invalid cursor")
			return
		}
		q.After = &pos
	}
	page, err := h.Store.ListRecords(r.Context(), q)
	if err != nil {
		respond.Internal(w, r, h.Log, err)
		return
	}
	out := recordPage{Records: make([]record, len(page.Records))}
	for i, rec := range page.Records {
		out.Records[i] = record{
			URI: rec.URI, DID: rec.DID, Collection: rec.Collection, RKey: rec.RKey, CID: rec.CID,
			IndexedAt: admin.Timestamp(rec.IndexedAt), Record: rec.Value,
		}
	}
	if page.Next != nil {
		c := storage.EncodeCursor(recordScope(q), *page.Next)
		out.Cursor = &c
	}
	respond.JSON(w, http.StatusOK, out)
}

// deleteRecords answers DELETE /admin/records with body {uris: [...]}:
// 200 {deleted: n}, n counting the URIs that were indexed.
func (h handlers) deleteRecords(w http.ResponseWriter, r *http.Request, p *admins.Principal) {
	var req struct {
		URIs []string `json:"uris"`
	}
	if !admin.Decode(w, r, &req) {
		return
	}
	if len(req.URIs) == 0 || len(req.URIs) > MaxDeleteURIs {
		respond.Errorf(w, http.StatusBadRequest, "uris must hold 1 to %d AT URIs", MaxDeleteURIs)
		return
	}
	seen := make(map[string]bool, len(req.URIs))
	var uris []string
	for _, raw := range req.URIs {
		if err := validRecordURI(raw); err != nil {
			respond.Error(w, http.StatusBadRequest, err.Error())
			return
		}
		if !seen[raw] {
			seen[raw] = true
			uris = append(uris, raw)
		}
	}
	ctx := r.Context()
	var deleted []string
	ops := make([]storage.RecordOp, len(uris))
	for i, uri := range uris {
		_, err := h.Store.GetRecord(ctx, uri)
		switch {
		case err == nil:
			deleted = append(deleted, uri)
		case !errors.Is(err, storage.ErrNotFound):
			respond.Internal(w, r, h.Log, err)
			return
		}
		ops[i] = storage.RecordOp{Delete: true, Record: storage.Record{URI: uri}}
	}
	if err := h.Store.ApplyBatch(ctx, storage.Batch{Ops: ops}); err != nil {
		respond.Internal(w, r, h.Log, err)
		return
	}
	if len(deleted) > 0 {
		subject := ""
		if len(deleted) == 1 {
			subject = deleted[0]
		}
		detail := map[string]any{"deleted": len(deleted), "uris": deleted[:min(len(deleted), maxAuditedURIs)]}
		if len(deleted) > maxAuditedURIs {
			detail["uris_truncated"] = true
		}
		h.Audit(ctx, p, "record.deleted", subject, detail)
	}
	respond.JSON(w, http.StatusOK, map[string]int{"deleted": len(deleted)})
}

// validRecordURI accepts at://DID/collection/rkey, the form records are
// indexed under.
func validRecordURI(raw string) error {
	u, err := syntax.ParseATURI(raw)
	if err != nil {
		return fmt.Errorf("invalid AT URI %q", raw)
	}
	if _, err := u.Authority().AsDID(); err != nil || u.Collection() == "" || u.RecordKey() == "" {
		return fmt.Errorf("invalid AT URI %q: want at://DID/collection/rkey", raw)
	}
	return nil
}

// deleteCollection answers DELETE /admin/records/collection: the collection
// comes from the query (?collection=) or the body ({collection}); 200
// {deleted: n}.
func (h handlers) deleteCollection(w http.ResponseWriter, r *http.Request, p *admins.Principal) {
	raw := r.URL.Query().Get("collection")
	if raw == "" && r.ContentLength != 0 {
		var req struct {
			Collection string `json:"collection"`
		}
		if !admin.Decode(w, r, &req) {
			return
		}
		raw = req.Collection
	}
	if raw == "" {
		respond.Error(w, http.StatusBadRequest, "collection is required")
		return
	}
	nsid, err := syntax.ParseNSID(raw)
	if err != nil {
		respond.Error(w, http.StatusBadRequest, "invalid collection NSID")
		return
	}
	n, err := h.Store.DeleteCollection(r.Context(), nsid.String())
	if err != nil {
		respond.Internal(w, r, h.Log, err)
		return
	}
	h.Audit(r.Context(), p, "collection.deleted", nsid.String(), map[string]any{"deleted": n})
	respond.JSON(w, http.StatusOK, map[string]int64{"deleted": n})
}
