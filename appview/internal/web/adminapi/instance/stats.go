package instance

import (
	"maps"
	"net/http"

	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/web/respond"
	"github.com/lexview/lexview/storage"
)

// collectionCount is one collection's record count.
type collectionCount struct {
	Collection string `json:"collection"`
	Count      int64  `json:"count"`
}

func toCounts(counts []storage.CollectionCount) []collectionCount {
	out := make([]collectionCount, len(counts))
	for i, c := range counts {
		out[i] = collectionCount{Collection: c.Collection, Count: c.Count}
	}
	return out
}

// stats answers GET /admin/stats:
//
//	{
//	  "total_records": 1234,          // records in every collection
//	  "lexicons": 7,                  // lexicons loaded
//	  "record_collections": 3,        // collections with a record-type lexicon
//	  "collections": [{"collection": "app.example.post", "count": 1200}, ...],
//	  "sources": {"jetstream": {"connected": true, "cursor": ..., ...}},
//	  "ingest": {"connected": true, "cursor": ..., "last_event_at": ..., ...},
//	  "writer": {"queued": 0, "committed": ..., "rejected": ..., ...},
//	  "backfill": {...}
//	}
//
// (the last four from Deps.SyncStatus: see appview's syncStatus).
//
// collections lists every collection holding records, largest first.
func (h handlers) stats(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	st, err := h.instance.Stats(r.Context())
	if err != nil {
		return err
	}
	body := map[string]any{
		"total_records": st.TotalRecords, "lexicons": st.Lexicons,
		"record_collections": st.RecordCollections, "collections": toCounts(st.Collections),
	}
	maps.Copy(body, st.Sync)
	respond.JSON(w, http.StatusOK, body)
	return nil
}

// validation answers GET /admin/stats/validation: the validation modes,
// the records stored with a validation error per collection and reason,
// and the background re-validations (instance.ValidationReport;
// docs/admin-api.md#statistics).
func (h handlers) validation(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	rep, err := h.instance.Validation(r.Context())
	if err != nil {
		return err
	}
	respond.JSON(w, http.StatusOK, rep)
	return nil
}

// history answers GET /admin/stats/history?window=hour|day (default
// hour): the instance's sampled figures as history.Window encodes them
// (docs/admin-api.md#statistics-history).
func (h handlers) history(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	win, err := h.instance.History(r.URL.Query().Get("window"))
	if err != nil {
		return err
	}
	respond.JSON(w, http.StatusOK, win)
	return nil
}

// health answers GET /admin/stats/health: {status, checked_at, parts:
// [{name, status, message}]}, ingestion, backfill and database.
func (h handlers) health(w http.ResponseWriter, _ *http.Request, _ *admins.Principal) error {
	hl, err := h.instance.Health()
	if err != nil {
		return err
	}
	respond.JSON(w, http.StatusOK, hl)
	return nil
}

// collections answers GET /admin/records/collections: [{collection, count}],
// largest first.
func (h handlers) collections(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	counts, err := h.instance.CollectionCounts(r.Context())
	if err != nil {
		return err
	}
	respond.JSON(w, http.StatusOK, toCounts(counts))
	return nil
}

// featureFlags answers GET /admin/feature-flags: {flags: {<name>: bool}}.
func (h handlers) featureFlags(w http.ResponseWriter, _ *http.Request, _ *admins.Principal) error {
	respond.JSON(w, http.StatusOK, map[string]any{"flags": h.instance.FeatureFlags()})
	return nil
}
