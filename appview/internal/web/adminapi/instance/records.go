package instance

import (
	"bytes"
	"encoding/json"
	"net/http"
	"unicode/utf8"

	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/service/records"
	"github.com/lexview/lexview/appview/internal/web/adminapi"
	"github.com/lexview/lexview/appview/internal/web/respond"
	"github.com/lexview/lexview/storage"
)

// Record listing page sizes.
const (
	DefaultRecordLimit = 50
	MaxRecordLimit     = 100
)

// record is the admin shape of an indexed record.
type record struct {
	URI        string          `json:"uri"`
	DID        string          `json:"did"`
	Collection string          `json:"collection"`
	RKey       string          `json:"rkey"`
	CID        string          `json:"cid"`
	IndexedAt  string          `json:"indexed_at"`
	CreatedAt  string          `json:"created_at"` // what listings order it by
	Record     json.RawMessage `json:"record"`
	// Invalid is the record's validation error when it is stored flagged
	// (the validation modes flag and hide); absent for a valid record.
	Invalid string `json:"invalid,omitempty"`
	// Labels are the labels that apply to the record or its author.
	Labels []label `json:"labels"`
}

// label is the admin shape of a label on a record or its author.
type label struct {
	Src string `json:"src"`
	URI string `json:"uri"` // the record's AT URI, or its author's DID
	CID string `json:"cid,omitempty"`
	Val string `json:"val"`
	Cts string `json:"cts"`
	Exp string `json:"exp,omitempty"`
}

// recordPage is the body of GET /admin/records.
type recordPage struct {
	Records []record `json:"records"`
	Cursor  *string  `json:"cursor"`
}

// listRecords answers GET /admin/records?collection=&did=&limit=&cursor=:
// the records of one collection, or of every collection when collection is
// absent or empty, newest created first; with did, that repository's records in AT
// URI order (collection, then record key), highest first.
func (h handlers) listRecords(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	params := r.URL.Query()
	q := records.Query{Collection: params.Get("collection")}
	if params.Has("did") {
		did := params.Get("did")
		q.DID = &did
	}
	var err error
	if q.Limit, err = adminapi.Limit(r, DefaultRecordLimit, MaxRecordLimit); err != nil {
		return err
	}
	if q.Cursor, err = adminapi.Cursor(r); err != nil {
		return err
	}
	list, next, err := h.records.List(r.Context(), q)
	if err != nil {
		return err
	}
	uris := make([]string, len(list))
	for i, rec := range list {
		uris[i] = rec.URI
	}
	labels, err := h.records.Labels(r.Context(), uris)
	if err != nil {
		return err
	}
	out := recordPage{Records: make([]record, len(list)), Cursor: optional(next)}
	for i, rec := range list {
		out.Records[i] = record{
			URI: rec.URI, DID: rec.DID, Collection: rec.Collection, RKey: rec.RKey, CID: rec.CID,
			IndexedAt: adminapi.Timestamp(rec.IndexedAt), CreatedAt: adminapi.Timestamp(rec.CreatedAt), Record: rec.Value,
			Invalid: rec.Invalid, Labels: adminLabels(labels[rec.URI], labels[rec.DID]),
		}
		if !utf8.Valid(rec.Value) {
			// A record stored before the writer refused invalid UTF-8:
			// its invalid bytes are inside strings, the repair keeps it JSON.
			out.Records[i].Record = bytes.ToValidUTF8(rec.Value, []byte("\uFFFD"))
		}
	}
	respond.JSON(w, http.StatusOK, out)
	return nil
}

// adminLabels lists a record's labels, then its author's.
func adminLabels(sets ...[]storage.Label) []label {
	out := []label{}
	for _, set := range sets {
		for _, l := range set {
			al := label{Src: l.Src, URI: l.URI, CID: l.CID, Val: l.Val, Cts: adminapi.Timestamp(l.Cts)}
			if !l.Exp.IsZero() {
				al.Exp = adminapi.Timestamp(l.Exp)
			}
			out = append(out, al)
		}
	}
	return out
}

// deleteRecords answers DELETE /admin/records with body {uris: [...]}:
// 200 {deleted: n}, n counting the URIs that were indexed.
func (h handlers) deleteRecords(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	var req struct {
		URIs []string `json:"uris"`
	}
	if err := adminapi.Read(w, r, &req); err != nil {
		return err
	}
	n, err := h.records.Delete(r.Context(), p.DID(), req.URIs)
	if err != nil {
		return err
	}
	respond.JSON(w, http.StatusOK, map[string]int{"deleted": n})
	return nil
}

// deleteCollection answers DELETE /admin/records/collection: the collection
// comes from the query (?collection=) or the body ({collection}); 200
// {deleted: n}.
func (h handlers) deleteCollection(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	collection := r.URL.Query().Get("collection")
	if collection == "" && r.ContentLength != 0 {
		var req struct {
			Collection string `json:"collection"`
		}
		if err := adminapi.Read(w, r, &req); err != nil {
			return err
		}
		collection = req.Collection
	}
	n, err := h.records.DeleteCollection(r.Context(), p.DID(), collection)
	if err != nil {
		return err
	}
	respond.JSON(w, http.StatusOK, map[string]int64{"deleted": n})
	return nil
}
