package xrpc

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/respond"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
)

// Page size limits of the default list query.
const (
	DefaultLimit = 20
	MaxLimit     = 100
)

var emptyRecords = []byte(`{"records":[]}`)

// query runs the default query behaviour: one record by `uri`, or a page
// of the target collection.
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
	if params.Has("uri") {
		h.getRecord(w, r, lex, params.Get("uri"))
		return
	}
	q, err := parseListParams(lex.TargetCollection, params)
	if err != nil {
		respond.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	page, err := h.records.ListRecords(r.Context(), q)
	if err != nil {
		respond.Internal(w, r, h.log, err)
		return
	}
	links := h.blobs.forRequest(r.Context())
	buf := make([]byte, 0, 256*len(page.Records)+64)
	buf = append(buf, `{"records":[`...)
	for i, rec := range page.Records {
		if i > 0 {
			buf = append(buf, ',')
		}
		if buf, err = appendRecord(buf, rec, links); err != nil {
			respond.Internal(w, r, h.log, err)
			return
		}
	}
	buf = append(buf, ']')
	if page.Next != nil {
		buf = append(buf, `,"cursor":"`...)
		buf = append(buf, storage.EncodeCursor(listScope(q), *page.Next)...)
		buf = append(buf, '"')
	}
	buf = append(buf, '}')
	respond.Raw(w, http.StatusOK, buf)
}

// listScope binds cursors to the listing they page through.
func listScope(q storage.ListQuery) string { return "records\x00" + q.Collection + "\x00" + q.DID }

// parseListParams validates limit, did and cursor.
func parseListParams(collection string, params url.Values) (storage.ListQuery, error) {
	q := storage.ListQuery{Collection: collection, Limit: DefaultLimit}
	if params.Has("limit") {
		n, err := strconv.Atoi(params.Get("limit"))
		if err != nil || n < 1 || n > MaxLimit {
			return q, errors.New("limit must be an integer between 1 and 100")
		}
		q.Limit = n
	}
	if params.Has("did") {
		did, err := syntax.ParseDID(params.Get("did"))
		if err != nil {
			return q, errors.New("invalid did")
		}
		q.DID = did.String()
	}
	if params.Has("cursor") {
		pos, err := storage.DecodeCursor(listScope(q), params.Get("cursor"))
		if err != nil {
			return q, errors.New("invalid cursor")
		}
		q.After = &pos
	}
	return q, nil
}

// getRecord answers {record: {...}} for one AT URI of the target collection.
func (h *Handler) getRecord(w http.ResponseWriter, r *http.Request, lex *lexicon.Lexicon, raw string) {
	aturi, err := syntax.ParseATURI(raw)
	if err != nil || aturi.Collection() == "" || aturi.RecordKey() == "" {
		respond.Error(w, http.StatusBadRequest, "invalid AT URI")
		return
	}
	if aturi.Collection().String() != lex.TargetCollection {
		respond.Error(w, http.StatusNotFound, "record not found")
		return
	}
	did, err := aturi.Authority().AsDID()
	if err != nil {
		handle, _ := aturi.Authority().AsHandle()
		if h.ids == nil {
			respond.Error(w, http.StatusNotFound, "record not found")
			return
		}
		if did, err = h.ids.ResolveHandle(r.Context(), handle); err != nil {
			respond.Error(w, http.StatusNotFound, "record not found")
			return
		}
	}
	uri := "at://" + did.String() + "/" + aturi.Collection().String() + "/" + aturi.RecordKey().String()
	rec, err := h.records.GetRecord(r.Context(), uri)
	if errors.Is(err, storage.ErrNotFound) {
		respond.Error(w, http.StatusNotFound, "record not found")
		return
	}
	if err != nil {
		respond.Internal(w, r, h.log, err)
		return
	}
	buf := append(make([]byte, 0, len(rec.Value)+128), `{"record":`...)
	if buf, err = appendRecord(buf, rec, h.blobs.forRequest(r.Context())); err != nil {
		respond.Internal(w, r, h.log, err)
		return
	}
	respond.Raw(w, http.StatusOK, append(buf, '}'))
}
