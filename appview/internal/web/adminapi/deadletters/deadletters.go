// Package deadletters serves the admin dead-letter endpoints over the
// dead-letter service: the listing (newest first, keyset-paged), the
// count, one dead letter with its record, and the actions on unresolved
// ones (dismiss, retry, reindex), singly and in bulk.
//
// The `resolved` filter of the listing and the count: absent means
// unresolved only (false is the default), `true` resolved only, `false`
// unresolved only, and `all` or an empty value (`resolved=`) both.
package deadletters

import (
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/service/deadletters"
	"github.com/lexview/lexview/appview/internal/web/adminapi"
	"github.com/lexview/lexview/appview/internal/web/respond"
	"github.com/lexview/lexview/storage"
)

// Page sizes of GET /admin/dead-letters.
const (
	DefaultLimit = 50
	MaxLimit     = 100
)

// Mount registers the dead-letter endpoints.
func Mount(m *adminapi.Mux, svc *deadletters.Service) {
	h := handlers{svc}
	m.HandleFunc("GET /admin/dead-letters", h.list)
	m.HandleFunc("GET /admin/dead-letters/count", h.count)
	m.HandleFunc("GET /admin/dead-letters/{id}", h.get)
	for _, a := range deadletters.Actions {
		m.HandleFunc("POST /admin/dead-letters/{id}/"+a.Name, h.single(a))
		m.HandleFunc("POST /admin/dead-letters/bulk/"+a.Name, h.bulk(a))
	}
}

type handlers struct{ svc *deadletters.Service }

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
		CreatedAt: adminapi.Timestamp(d.CreatedAt), ResolvedAt: adminapi.NullableTimestamp(d.ResolvedAt),
	}
}

// page is the answer of GET /admin/dead-letters; Cursor is left out on
// the last page.
type page struct {
	DeadLetters []item `json:"dead_letters"`
	Cursor      string `json:"cursor,omitempty"`
}

// filter reads `collection` and `resolved` (absent: unresolved only).
func filter(q url.Values) deadletters.Filter {
	f := deadletters.Filter{Collection: q.Get("collection"), Resolved: "false"}
	if q.Has("resolved") {
		f.Resolved = q.Get("resolved")
	}
	return f
}

func (h handlers) list(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	q := r.URL.Query()
	f := filter(q)
	limit, err := adminapi.Limit(r, DefaultLimit, MaxLimit)
	if err != nil {
		return err
	}
	cursor, err := adminapi.Cursor(r)
	if err != nil {
		return err
	}
	list, next, err := h.svc.List(r.Context(), f, limit, cursor)
	if err != nil {
		return err
	}
	out := page{DeadLetters: make([]item, len(list)), Cursor: next}
	for i, d := range list {
		out.DeadLetters[i] = toItem(d)
	}
	respond.JSON(w, http.StatusOK, out)
	return nil
}

func (h handlers) count(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	n, err := h.svc.Count(r.Context(), filter(r.URL.Query()))
	if err != nil {
		return err
	}
	respond.JSON(w, http.StatusOK, map[string]int64{"count": n})
	return nil
}

func (h handlers) get(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	d, err := h.svc.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	out := detail{item: toItem(d)}
	if len(d.Record) > 0 && json.Valid(d.Record) {
		out.Record = d.Record
	}
	respond.JSON(w, http.StatusOK, out)
	return nil
}

// single serves POST /admin/dead-letters/{id}/<action>.
func (h handlers) single(a deadletters.Action) adminapi.Func {
	return func(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
		out, err := h.svc.Apply(r.Context(), p.DID(), a, r.PathValue("id"))
		if err != nil {
			return err
		}
		respond.JSON(w, http.StatusOK, out)
		return nil
	}
}

// bulk serves POST /admin/dead-letters/bulk/<action>.
func (h handlers) bulk(a deadletters.Action) adminapi.Func {
	return func(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
		var req struct {
			IDs        []string `json:"ids"`
			All        bool     `json:"all"`
			Collection string   `json:"collection"`
		}
		if err := adminapi.Read(w, r, &req); err != nil {
			return err
		}
		res, err := h.svc.Bulk(r.Context(), p.DID(), a, deadletters.Selection{IDs: req.IDs, All: req.All, Collection: req.Collection})
		switch {
		case err != nil && r.Context().Err() != nil:
			return nil // the caller left; the service logged how far it got
		case err != nil:
			return err
		}
		respond.JSON(w, http.StatusOK, res)
		return nil
	}
}
