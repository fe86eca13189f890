package fixed

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/service/backlinks"
	"github.com/lexview/lexview/appview/internal/web/respond"
	"github.com/lexview/lexview/storage"
)

// Backlinks answers backlink queries from the link index
// (*backlinks.Service).
type Backlinks interface {
	Backlinks(ctx context.Context, q storage.BacklinkQuery) (storage.BacklinkPage, error)
	CountLinkingRecords(ctx context.Context, subject string, source storage.LinkSource) (int64, error)
	BacklinkDIDs(ctx context.Context, q storage.BacklinkDIDQuery) (storage.BacklinkDIDPage, error)
}

// mountBacklinks registers Constellation's backlink methods. Each path
// is registered for every HTTP method, so that no lexicon uploaded under
// the same NSID (nor the XRPC proxy) answers it: the built-in wins, and
// a method other than GET is answered as a query lexicon answers one,
// 404 `method not found`.
func (h *Handler) mountBacklinks(mux *http.ServeMux) {
	for nsid, serve := range map[string]http.HandlerFunc{
		backlinks.MethodGetBacklinks:      h.getBacklinks,
		backlinks.MethodGetBacklinksCount: h.getBacklinksCount,
		backlinks.MethodGetBacklinkDids:   h.getBacklinkDids,
	} {
		wrapped := h.wrap(nsid, serve)
		mux.Handle("/xrpc/"+nsid, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				respond.Error(w, http.StatusNotFound, "method not found")
				return
			}
			wrapped.ServeHTTP(w, r)
		}))
	}
}

// linkRecord is a linking record in getBacklinks' answer.
type linkRecord struct {
	DID        string `json:"did"`
	Collection string `json:"collection"`
	RKey       string `json:"rkey"`
}

// backlinksAnswer is getBacklinks' answer. Cursor is null on the last
// page, as Constellation answers it.
type backlinksAnswer struct {
	Total   int64        `json:"total"`
	Records []linkRecord `json:"records"`
	Cursor  *string      `json:"cursor"`
}

// getBacklinks answers GET /xrpc/blue.microcosm.links.getBacklinks:
// subject, source, did (repeatable), limit, cursor.
func (h *Handler) getBacklinks(w http.ResponseWriter, r *http.Request) {
	p, err := readBacklinkParams(r)
	if err != nil {
		respond.Fail(w, r, h.log, err)
		return
	}
	page, err := h.backlinks.Backlinks(r.Context(), storage.BacklinkQuery{
		Subject: p.subject, Source: p.source, DIDs: p.dids, Limit: p.limit, Cursor: p.cursor,
	})
	if err != nil {
		respond.Fail(w, r, h.log, err)
		return
	}
	out := backlinksAnswer{Total: page.Total, Records: make([]linkRecord, len(page.Records)), Cursor: cursorOrNull(page.Cursor)}
	for i, b := range page.Records {
		out.Records[i] = linkRecord{DID: b.DID, Collection: b.Collection, RKey: b.RKey}
	}
	respond.JSON(w, http.StatusOK, out)
}

// getBacklinksCount answers GET
// /xrpc/blue.microcosm.links.getBacklinksCount: subject, source →
// {total}, the linking records.
func (h *Handler) getBacklinksCount(w http.ResponseWriter, r *http.Request) {
	p, err := readBacklinkParams(r)
	if err != nil {
		respond.Fail(w, r, h.log, err)
		return
	}
	n, err := h.backlinks.CountLinkingRecords(r.Context(), p.subject, p.source)
	if err != nil {
		respond.Fail(w, r, h.log, err)
		return
	}
	respond.JSON(w, http.StatusOK, struct {
		Total int64 `json:"total"`
	}{n})
}

// backlinkDIDsAnswer is getBacklinkDids' answer: Total counts the
// distinct linking accounts.
type backlinkDIDsAnswer struct {
	Total       int64    `json:"total"`
	LinkingDIDs []string `json:"linking_dids"`
	Cursor      *string  `json:"cursor"`
}

// getBacklinkDids answers GET /xrpc/blue.microcosm.links.getBacklinkDids:
// subject, source, limit, cursor.
func (h *Handler) getBacklinkDids(w http.ResponseWriter, r *http.Request) {
	p, err := readBacklinkParams(r)
	if err != nil {
		respond.Fail(w, r, h.log, err)
		return
	}
	page, err := h.backlinks.BacklinkDIDs(r.Context(), storage.BacklinkDIDQuery{
		Subject: p.subject, Source: p.source, Limit: p.limit, Cursor: p.cursor,
	})
	if err != nil {
		respond.Fail(w, r, h.log, err)
		return
	}
	dids := page.DIDs
	if dids == nil {
		dids = []string{}
	}
	respond.JSON(w, http.StatusOK, backlinkDIDsAnswer{Total: page.Total, LinkingDIDs: dids, Cursor: cursorOrNull(page.Cursor)})
}

func cursorOrNull(c string) *string {
	if c == "" {
		return nil
	}
	return &c
}

// backlinkParams are the parameters of the backlink methods.
type backlinkParams struct {
	subject string
	source  storage.LinkSource
	dids    []string
	limit   int // 0: the default
	cursor  string
}

var errMalformedQuery = fail.New(fail.Invalid, "malformed query string")

// readBacklinkParams reads the parameters the backlink methods share (a
// method ignores those it does not take, as other parameters are). As
// Constellation does, it trims the did values and drops empty ones.
func readBacklinkParams(r *http.Request) (backlinkParams, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return backlinkParams{}, errMalformedQuery
	}
	p := backlinkParams{subject: q.Get("subject"), cursor: q.Get("cursor")}
	if p.subject == "" {
		return backlinkParams{}, backlinks.ErrNoSubject
	}
	if p.source, err = backlinks.ParseSource(q.Get("source")); err != nil {
		return backlinkParams{}, err
	}
	for _, d := range q["did"] {
		if d = strings.TrimSpace(d); d != "" {
			p.dids = append(p.dids, d)
		}
	}
	if s, ok := q["limit"]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(s[0]))
		if err != nil || n < 1 || n > storage.MaxBacklinkLimit {
			return backlinkParams{}, fail.Invalidf("limit must be an integer between 1 and %d", storage.MaxBacklinkLimit)
		}
		p.limit = n
	}
	return p, nil
}
