package xrpc

import (
	"net/http"
	"net/url"

	"github.com/lexview/lexview/appview/internal/respond"
	"github.com/lexview/lexview/lexicon"
)

var emptyRecords = []byte(`{"records":[]}`)

// query runs the default query behaviour: one record by `uri`, or a page
// of the target collection, the stored JSON spliced into the answer.
func (h *Handler) query(w http.ResponseWriter, r *http.Request, lex *lexicon.Lexicon) {
	if lex.TargetCollection == "" {
		respond.Raw(w, http.StatusOK, emptyRecords)
		return
	}
	params, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		respond.Error(w, http.StatusBadRequest, "malformed query string")
		return
	}
	links := h.blobs.forRequest(r.Context())
	if params.Has("uri") {
		rec, err := h.reads.Get(r.Context(), lex.TargetCollection, params.Get("uri"))
		if err != nil {
			respond.Fail(w, r, h.log, err)
			return
		}
		buf := append(make([]byte, 0, len(rec.Value)+128), `{"record":`...)
		if buf, err = appendRecord(buf, rec, links); err != nil {
			respond.Internal(w, r, h.log, err)
			return
		}
		respond.Raw(w, http.StatusOK, append(buf, '}'))
		return
	}
	records, cursor, err := h.reads.List(r.Context(), lex.TargetCollection, params)
	if err != nil {
		respond.Fail(w, r, h.log, err)
		return
	}
	buf := make([]byte, 0, 256*len(records)+64)
	buf = append(buf, `{"records":[`...)
	for i, rec := range records {
		if i > 0 {
			buf = append(buf, ',')
		}
		if buf, err = appendRecord(buf, rec, links); err != nil {
			respond.Internal(w, r, h.log, err)
			return
		}
	}
	buf = append(buf, ']')
	if cursor != "" {
		buf = append(buf, `,"cursor":"`...)
		buf = append(buf, cursor...)
		buf = append(buf, '"')
	}
	respond.Raw(w, http.StatusOK, append(buf, '}'))
}
