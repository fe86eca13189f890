// Package events serves the admin event log (audit trail): GET
// /admin/events, newest first, filtered by exact type, category prefix,
// severity and subject, paged with an opaque cursor.
package events

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/lexview/lexview/appview/internal/admin"
	"github.com/lexview/lexview/appview/internal/admins"
	"github.com/lexview/lexview/appview/internal/eventlog"
	"github.com/lexview/lexview/appview/internal/respond"
	"github.com/lexview/lexview/storage"
)

// Page sizes of GET /admin/events.
const (
	DefaultLimit = 50
	MaxLimit     = 100
)

// cursorScope binds event-log cursors to this listing. The filters are not
// part of the scope: the position (an event id) means the same under any
// filter.
const cursorScope = "events"

// Mount registers the event-log endpoint.
func Mount(m *admin.Mux, d admin.Deps) {
	h := handlers{d}
	m.Handle("GET /admin/events", h.list)
}

type handlers struct{ admin.Deps }

// entry is the wire shape of an event-log entry.
type entry struct {
	ID        string          `json:"id"`
	EventType string          `json:"event_type"`
	Severity  string          `json:"severity"`
	ActorDID  *string         `json:"actor_did"`
	Subject   *string         `json:"subject"`
	Detail    json.RawMessage `json:"detail"`
	CreatedAt string          `json:"created_at"`
}

// page is the response of GET /admin/events.
type page struct {
	Events []entry `json:"events"`
	Cursor *string `json:"cursor"`
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// detailObject returns the stored detail when it is a JSON object, and {}
// otherwise, so clients always get an object.
func detailObject(raw []byte) json.RawMessage {
	var obj map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &obj) != nil || obj == nil {
		return json.RawMessage(`{}`)
	}
	return raw
}

// encodeCursor makes the opaque cursor continuing after e.
func encodeCursor(e storage.Event) string {
	return storage.EncodeCursor(cursorScope, storage.Position{IndexedAt: e.CreatedAt, URI: e.ID})
}

// decodeCursor returns the event id a cursor continues after.
func decodeCursor(c string) (string, error) {
	pos, err := storage.DecodeCursor(cursorScope, c)
	if err != nil {
		return "", err
	}
	if _, err := strconv.ParseInt(pos.URI, 10, 64); err != nil {
		return "", storage.ErrInvalidCursor
	}
	return pos.URI, nil
}

func (h handlers) list(w http.ResponseWriter, r *http.Request, _ *admins.Principal) {
	q := r.URL.Query()
	limit, err := admin.Limit(r, DefaultLimit, MaxLimit)
	if err != nil {
		respond.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	f := storage.EventFilter{
		Type: q.Get("event_type"), Category: q.Get("category"), Severity: q.Get("severity"),
		Subject: q.Get("subject"), Limit: limit,
	}
	switch f.Severity {
	case "", eventlog.Info, eventlog.Warn, eventlog.Error:
	default:
		respond.Error(w, http.StatusBadRequest, "severity must be info, warn or error")
		return
	}
	if q.Has("cursor") {
		if f.Before, err = decodeCursor(q.Get("cursor")); err != nil {
			respond.Error(w, http.StatusBadRequest, "invalid cursor")
			return
		}
	}
	list, more, err := h.Store.ListEvents(r.Context(), f)
	if errors.Is(err, storage.ErrInvalidCursor) {
		respond.Error(w, http.StatusBadRequest, "invalid cursor")
		return
	}
	if err != nil {
		respond.Internal(w, r, h.Log, err)
		return
	}
	out := page{Events: make([]entry, len(list))}
	for i, e := range list {
		out.Events[i] = entry{
			ID: e.ID, EventType: e.Type, Severity: e.Severity, ActorDID: optional(e.ActorDID), Subject: optional(e.Subject),
			Detail: detailObject(e.Detail), CreatedAt: admin.Timestamp(e.CreatedAt),
		}
	}
	if more && len(list) > 0 {
		c := encodeCursor(list[len(list)-1])
		out.Cursor = &c
	}
	respond.JSON(w, http.StatusOK, out)
}
