// Package deadletters serves the admin dead-letter endpoints: the listing
// (newest first, keyset-paged), the count, one dead letter with its
// record, and the actions on unresolved ones (dismiss, retry, reindex),
// singly and in bulk.
//
// The `resolved` filter of the listing and the count: absent means
// unresolved only (false is the default), `true` resolved only, `false`
// unresolved only, and `all` or an empty value (`resolved=`) both.
//
// Retry and reindex do the bookkeeping here, not in the script machinery:
// the runtime only runs the script (or the fetch and the indexing
// pipeline) and returns its error. Success resolves the dead letter; a
// failure stores the error and one more attempt on it and answers 200
// with `resolved: false` and the error.
package deadletters

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/admin"
	"github.com/lexview/lexview/appview/internal/admins"
	"github.com/lexview/lexview/appview/internal/respond"
	"github.com/lexview/lexview/storage"
)

// Page sizes of GET /admin/dead-letters.
const (
	DefaultLimit = 50
	MaxLimit     = 100
)

// Mount registers the dead-letter endpoints.
func Mount(m *admin.Mux, d admin.Deps) {
	h := handlers{d}
	m.Handle("GET /admin/dead-letters", h.list)
	m.Handle("GET /admin/dead-letters/count", h.count)
	m.Handle("GET /admin/dead-letters/{id}", h.get)
	for _, a := range actions {
		m.Handle("POST /admin/dead-letters/{id}/"+a.name, h.single(a))
		m.Handle("POST /admin/dead-letters/bulk/"+a.name, h.bulk(a))
	}
}

type handlers struct{ admin.Deps }

// item is the list shape of a dead letter.
type item struct {
	ID         string  `json:"id"`
	Kind       string  `json:"kind"`
	LexiconID  string  `json:"lexicon_id"`
	URI        string  `json:"uri"`
	DID        string  `json:"did"`
	Collection string  `json:"collection"`
	RKey       string  `json:"rkey"`
	Action     string  `json:"action"`
	Error      string  `json:"error"`
	Attempts   int     `json:"attempts"`
	CreatedAt  string  `json:"created_at"`
	ResolvedAt *string `json:"resolved_at,omitempty"`
}

// detail adds the original record (null when there is none).
type detail struct {
	item
	Record json.RawMessage `json:"record"`
}

func toItem(d storage.DeadLetter) item {
	return item{
		ID: d.ID, Kind: d.Kind, LexiconID: d.LexiconID, URI: d.URI, DID: d.DID, Collection: d.Collection,
		RKey: d.RKey, Action: d.Action, Error: d.Error, Attempts: d.Attempts,
		CreatedAt: admin.Timestamp(d.CreatedAt), ResolvedAt: admin.NullableTimestamp(d.ResolvedAt),
	}
}

// page is the answer of GET /admin/dead-letters; Cursor is left out on
// the last page.
type page struct {
	DeadLetters []item `json:"dead_letters"`
	Cursor      string `json:"cursor,omitempty"`
}

// filter is the parsed collection and resolved parameters, with the
// cursor scope they make.
type filter struct {
	query storage.DeadLetterQuery
	scope string
}

// parseFilter reads `collection` and `resolved`.
func parseFilter(q url.Values) (filter, error) {
	var f filter
	f.query.Collection = q.Get("collection")
	if f.query.Collection != "" {
		if _, err := syntax.ParseNSID(f.query.Collection); err != nil {
			return f, errors.New("collection must be a valid NSID")
		}
	}
	resolved := "false"
	if q.Has("resolved") {
		resolved = q.Get("resolved")
	}
	switch resolved {
	case "true", "false":
		b := resolved == "true"
		f.query.Resolved = &b
	case "", "all":
		resolved = "all"
	default:
		return f, errors.New("resolved must be true, false or all")
	}
	// A cursor continues only the listing it came from.
	f.scope = "dead-letters\x00" + f.query.Collection + "\x00" + resolved
	return f, nil
}

func encodeCursor(scope string, p *storage.DeadLetterPosition) string {
	return storage.EncodeCursor(scope, storage.Position{IndexedAt: p.CreatedAt, URI: p.ID})
}

func decodeCursor(scope, c string) (*storage.DeadLetterPosition, error) {
	pos, err := storage.DecodeCursor(scope, c)
	if err != nil || pos.URI == "" {
		return nil, storage.ErrInvalidCursor
	}
	return &storage.DeadLetterPosition{CreatedAt: pos.IndexedAt, ID: pos.URI}, nil
}

func (h handlers) list(w http.ResponseWriter, r *http.Request, _ *admins.Principal) {
	q := r.URL.Query()
	f, err := parseFilter(q)
	if err != nil {
		respond.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	if f.query.Limit, err = admin.Limit(r, DefaultLimit, MaxLimit); err != nil {
		respond.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	if q.Has("cursor") {
		if f.query.After, err = decodeCursor(f.scope, q.Get("cursor")); err != nil {
			respond.Error(w, http.StatusBadRequest, "invalid cursor")
			return
		}
	}
	list, next, err := h.Store.ListDeadLetters(r.Context(), f.query)
	if err != nil {
		respond.Internal(w, r, h.Log, err)
		return
	}
	out := page{DeadLetters: make([]item, len(list))}
	for i, d := range list {
		out.DeadLetters[i] = toItem(d)
	}
	if next != nil {
		out.Cursor = encodeCursor(f.scope, next)
	}
	respond.JSON(w, http.StatusOK, out)
}

func (h handlers) count(w http.ResponseWriter, r *http.Request, _ *admins.Principal) {
	f, err := parseFilter(r.URL.Query())
	if err != nil {
		respond.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	n, err := h.Store.CountDeadLetters(r.Context(), f.query)
	if err != nil {
		respond.Internal(w, r, h.Log, err)
		return
	}
	respond.JSON(w, http.StatusOK, map[string]int64{"count": n})
}

func (h handlers) get(w http.ResponseWriter, r *http.Request, _ *admins.Principal) {
	d, err := h.Store.GetDeadLetter(r.Context(), r.PathValue("id"))
	if h.Failed(w, r, err, msgNotFound) {
		return
	}
	out := detail{item: toItem(d)}
	if len(d.Record) > 0 && json.Valid(d.Record) {
		out.Record = d.Record
	}
	respond.JSON(w, http.StatusOK, out)
}
