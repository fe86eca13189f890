package operator

import (
	"maps"
	"net/http"

	"github.com/lexview/lexview/appview/internal/admins"
	"github.com/lexview/lexview/appview/internal/respond"
)

// collectionCount is one collection's record count.
type collectionCount struct {
	Collection string `json:"collection"`
	Count      int64  `json:"count"`
}

// statsResponse is the body of GET /admin/stats:
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
type statsResponse struct {
	TotalRecords      int64             `json:"total_records"`
	Lexicons          int               `json:"lexicons"`
	RecordCollections int               `json:"record_collections"`
	Collections       []collectionCount `json:"collections"`
}

func (h handlers) collectionCounts(w http.ResponseWriter, r *http.Request) ([]collectionCount, bool) {
	counts, err := h.Store.CollectionCounts(r.Context())
	if err != nil {
		respond.Internal(w, r, h.Log, err)
		return nil, false
	}
	out := make([]collectionCount, len(counts))
	for i, c := range counts {
		out[i] = collectionCount{Collection: c.Collection, Count: c.Count}
	}
	return out, true
}

func (h handlers) stats(w http.ResponseWriter, r *http.Request, _ *admins.Principal) {
	counts, ok := h.collectionCounts(w, r)
	if !ok {
		return
	}
	out := statsResponse{Collections: counts}
	for _, c := range counts {
		out.TotalRecords += c.Count
	}
	snap := h.Lexicons.Snapshot()
	out.Lexicons, out.RecordCollections = snap.Len(), len(snap.RecordCollections())
	if h.SyncStatus == nil {
		respond.JSON(w, http.StatusOK, out)
		return
	}
	body := map[string]any{
		"total_records": out.TotalRecords, "lexicons": out.Lexicons,
		"record_collections": out.RecordCollections, "collections": out.Collections,
	}
	maps.Copy(body, h.SyncStatus())
	respond.JSON(w, http.StatusOK, body)
}

// collections answers GET /admin/records/collections: [{collection, count}],
// largest first.
func (h handlers) collections(w http.ResponseWriter, r *http.Request, _ *admins.Principal) {
	counts, ok := h.collectionCounts(w, r)
	if !ok {
		return
	}
	respond.JSON(w, http.StatusOK, counts)
}

// featureFlags answers GET /admin/feature-flags: {flags: {<name>: bool}}.
// The flags are those the App reports in Deps.Features (for example
// "jetstream") plus "sqlite_vacuum", whether the one-time vacuum can be
// scheduled on this backend.
func (h handlers) featureFlags(w http.ResponseWriter, r *http.Request, _ *admins.Principal) {
	flags := maps.Clone(h.Features)
	if flags == nil {
		flags = map[string]bool{}
	}
	flags["sqlite_vacuum"] = h.Store.Dialect() == "sqlite"
	respond.JSON(w, http.StatusOK, map[string]any{"flags": flags})
}
