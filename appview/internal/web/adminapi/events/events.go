// Package events serves the admin event log (audit trail): GET
// /admin/events, newest first, filtered by exact type, category prefix,
// severity and subject, paged with an opaque cursor.
package events

import (
	"encoding/json"
	"net/http"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/web/adminapi"
	"github.com/lexview/lexview/appview/internal/web/respond"
)

// Page sizes of GET /admin/events.
const (
	DefaultLimit = 50
	MaxLimit     = 100
)

// Mount registers the event-log endpoint.
func Mount(m *adminapi.Mux, log *eventlog.Log) {
	h := handlers{log}
	m.HandleFunc("GET /admin/events", h.list)
}

type handlers struct{ log *eventlog.Log }

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

func (h handlers) list(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	q := r.URL.Query()
	limit, err := adminapi.Limit(r, DefaultLimit, MaxLimit)
	if err != nil {
		return err
	}
	cursor, err := adminapi.Cursor(r)
	if err != nil {
		return err
	}
	list, next, err := h.log.List(r.Context(), eventlog.Query{
		Type: q.Get("event_type"), Category: q.Get("category"), Severity: q.Get("severity"),
		Subject: q.Get("subject"), Limit: limit, Cursor: cursor,
	})
	if err != nil {
		return err
	}
	out := page{Events: make([]entry, len(list)), Cursor: optional(next)}
	for i, e := range list {
		out.Events[i] = entry{
			ID: e.ID, EventType: e.Type, Severity: e.Severity, ActorDID: optional(e.ActorDID), Subject: optional(e.Subject),
			Detail: detailObject(e.Detail), CreatedAt: adminapi.Timestamp(e.CreatedAt),
		}
	}
	respond.JSON(w, http.StatusOK, out)
	return nil
}
