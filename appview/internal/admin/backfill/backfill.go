// Package backfill serves the admin backfill endpoints: creating jobs,
// listing them, pausing, resuming and cancelling them, their repositories
// and PDS summary, deleting their per-repository rows, and the progress
// stream (Server-Sent Events). The jobs themselves are run by the
// top-level backfill package.
package backfill

import (
	"context"
	"errors"
	"net/http"

	"github.com/lexview/lexview/appview/internal/admin"
	"github.com/lexview/lexview/appview/internal/admins"
	"github.com/lexview/lexview/appview/internal/respond"
	jobs "github.com/lexview/lexview/backfill"
	"github.com/lexview/lexview/storage"
)

// Mount registers the backfill endpoints.
func Mount(m *admin.Mux, d admin.Deps) {
	h := handlers{d}
	m.Handle("POST /admin/backfill", h.available(h.create))
	m.Handle("GET /admin/backfill/status", h.available(h.list))
	m.Handle("POST /admin/backfill/{id}/cancel", h.available(h.cancel))
	m.Handle("POST /admin/backfill/{id}/pause", h.available(h.pause))
	m.Handle("POST /admin/backfill/{id}/resume", h.available(h.resume))
	m.Handle("GET /admin/backfill/{id}/repos", h.available(h.repos))
	m.Handle("GET /admin/backfill/{id}/pds-summary", h.available(h.pdsSummary))
	m.Handle("DELETE /admin/backfill/{id}/details", h.available(h.deleteDetails))
	m.Handle("DELETE /admin/backfill/details", h.available(h.deleteAllDetails))
	m.Handle("GET /admin/backfill/{id}/events", h.available(h.events))
}

type handlers struct{ admin.Deps }

// available answers 503 when the instance runs no backfill manager.
func (h handlers) available(next admin.Handler) admin.Handler {
	return func(w http.ResponseWriter, r *http.Request, p *admins.Principal) {
		if h.Backfill == nil {
			respond.Error(w, http.StatusServiceUnavailable, "backfill is not available on this instance")
			return
		}
		next(w, r, p)
	}
}

// job is the Backfill job resource of the specification.
type job struct {
	ID             string  `json:"id"`
	Collection     *string `json:"collection"`
	DID            *string `json:"did"`
	Scope          string  `json:"scope"`
	Status         string  `json:"status"`
	Stage          string  `json:"stage"`
	TotalRepos     *int64  `json:"total_repos"`
	ResolvedRepos  *int64  `json:"resolved_repos"`
	ProcessedRepos *int64  `json:"processed_repos"`
	TotalRecords   *int64  `json:"total_records"`
	Error          *string `json:"error"`
	StartedAt      *string `json:"started_at"`
	CompletedAt    *string `json:"completed_at"`
	CreatedAt      string  `json:"created_at"`
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func render(j storage.BackfillJob) job {
	return job{
		ID: j.ID, Collection: optional(j.Collection), DID: optional(j.DID), Scope: j.Scope, Status: j.Status, Stage: j.Stage,
		TotalRepos: j.TotalRepos, ResolvedRepos: j.ResolvedRepos, ProcessedRepos: j.ProcessedRepos, TotalRecords: j.TotalRecords,
		Error: optional(j.Error), StartedAt: admin.NullableTimestamp(j.StartedAt), CompletedAt: admin.NullableTimestamp(j.CompletedAt),
		CreatedAt: admin.Timestamp(j.CreatedAt),
	}
}

type createRequest struct {
	Collection *string  `json:"collection"`
	DIDs       []string `json:"dids"`
	DID        *string  `json:"did"`
}

func (h handlers) create(w http.ResponseWriter, r *http.Request, p *admins.Principal) {
	var req createRequest
	if !admin.Decode(w, r, &req) {
		return
	}
	in := jobs.Request{Accounts: req.DIDs}
	if req.Collection != nil {
		in.Collection = *req.Collection
	}
	if req.DID != nil && *req.DID != "" {
		in.Accounts = append(in.Accounts, *req.DID)
	}
	j, err := h.Backfill.Create(r.Context(), in)
	var re *jobs.RequestError
	if errors.As(err, &re) {
		respond.Error(w, http.StatusBadRequest, re.Message)
		return
	}
	if err != nil {
		respond.Internal(w, r, h.Log, err)
		return
	}
	h.Audit(r.Context(), p, "backfill.created", j.ID, map[string]any{
		"collection": optional(j.Collection), "scope": j.Scope, "accounts": len(j.DIDs),
	})
	respond.JSON(w, http.StatusCreated, map[string]any{"id": j.ID, "status": j.Status})
}

func (h handlers) list(w http.ResponseWriter, r *http.Request, _ *admins.Principal) {
	all, err := h.Backfill.List(r.Context())
	if err != nil {
		respond.Internal(w, r, h.Log, err)
		return
	}
	out := make([]job, len(all))
	for i, j := range all {
		out[i] = render(j)
	}
	respond.JSON(w, http.StatusOK, out)
}

// jobError answers the errors shared by the per-job endpoints; it reports
// whether err was one.
func (h handlers) jobError(w http.ResponseWriter, r *http.Request, err error) bool {
	var se *jobs.StateError
	switch {
	case err == nil:
		return false
	case errors.Is(err, storage.ErrNotFound):
		respond.Error(w, http.StatusNotFound, "backfill job not found")
	case errors.As(err, &se):
		respond.Error(w, http.StatusBadRequest, se.Error())
	default:
		respond.Internal(w, r, h.Log, err)
	}
	return true
}

// control answers the cancel, pause and resume endpoints.
func (h handlers) control(w http.ResponseWriter, r *http.Request, p *admins.Principal,
	action func(ctx context.Context, id string) (storage.BackfillJob, error), event string) {
	id := r.PathValue("id")
	j, err := action(r.Context(), id)
	if h.jobError(w, r, err) {
		return
	}
	h.Audit(r.Context(), p, event, id, map[string]any{"collection": optional(j.Collection)})
	respond.JSON(w, http.StatusOK, map[string]any{"id": j.ID, "status": j.Status})
}

func (h handlers) cancel(w http.ResponseWriter, r *http.Request, p *admins.Principal) {
	h.control(w, r, p, h.Backfill.Cancel, "backfill.cancelled")
}

func (h handlers) pause(w http.ResponseWriter, r *http.Request, p *admins.Principal) {
	h.control(w, r, p, h.Backfill.Pause, "backfill.paused")
}

func (h handlers) resume(w http.ResponseWriter, r *http.Request, p *admins.Principal) {
	h.control(w, r, p, h.Backfill.Resume, "backfill.resumed")
}

// repo is a per-repository row.
type repo struct {
	DID            string  `json:"did"`
	PDSEndpoint    *string `json:"pds_endpoint"`
	Status         string  `json:"status"`
	RecordsFetched int64   `json:"records_fetched"`
}

func (h handlers) repos(w http.ResponseWriter, r *http.Request, _ *admins.Principal) {
	id := r.PathValue("id")
	q := r.URL.Query()
	phase := q.Get("phase")
	if phase == "" {
		phase = jobs.PhaseDiscovered
	}
	if !jobs.ValidPhase(phase) {
		respond.Error(w, http.StatusBadRequest, "phase must be discovered, resolved or fetched")
		return
	}
	limit, err := admin.Limit(r, 50, 100)
	if err != nil {
		respond.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	scope := "backfill-repos\x00" + id + "\x00" + phase
	after := ""
	if c := q.Get("cursor"); c != "" {
		pos, err := storage.DecodeCursor(scope, c)
		if err != nil {
			respond.Error(w, http.StatusBadRequest, "invalid cursor")
			return
		}
		after = pos.URI
	}
	rows, next, err := h.Backfill.Repos(r.Context(), id, phase, after, limit)
	if h.jobError(w, r, err) {
		return
	}
	out := make([]repo, len(rows))
	for i, row := range rows {
		out[i] = repo{DID: row.DID, PDSEndpoint: optional(row.PDSEndpoint), Status: row.Status, RecordsFetched: row.RecordsFetched}
	}
	var cursor *string
	if next != "" {
		c := storage.EncodeCursor(scope, storage.Position{URI: next})
		cursor = &c
	}
	respond.JSON(w, http.StatusOK, map[string]any{"repos": out, "cursor": cursor})
}

type pdsRow struct {
	PDSEndpoint    string `json:"pds_endpoint"`
	TotalRepos     int64  `json:"total_repos"`
	CompletedRepos int64  `json:"completed_repos"`
	TotalRecords   int64  `json:"total_records"`
}

func (h handlers) pdsSummary(w http.ResponseWriter, r *http.Request, _ *admins.Principal) {
	rows, err := h.Backfill.PDSSummary(r.Context(), r.PathValue("id"))
	if h.jobError(w, r, err) {
		return
	}
	out := make([]pdsRow, len(rows))
	for i, s := range rows {
		out[i] = pdsRow{PDSEndpoint: s.PDSEndpoint, TotalRepos: s.TotalRepos, CompletedRepos: s.CompletedRepos, TotalRecords: s.TotalRecords}
	}
	respond.JSON(w, http.StatusOK, map[string]any{"pds_endpoints": out})
}

func (h handlers) deleteDetails(w http.ResponseWriter, r *http.Request, p *admins.Principal) {
	id := r.PathValue("id")
	if h.jobError(w, r, h.Backfill.DeleteDetails(r.Context(), id)) {
		return
	}
	h.Audit(r.Context(), p, "backfill.details_deleted", id, nil)
	w.WriteHeader(http.StatusNoContent)
}

func (h handlers) deleteAllDetails(w http.ResponseWriter, r *http.Request, p *admins.Principal) {
	if err := h.Backfill.DeleteFinishedDetails(r.Context()); err != nil {
		respond.Internal(w, r, h.Log, err)
		return
	}
	h.Audit(r.Context(), p, "backfill.details_deleted", "", map[string]any{"scope": "finished jobs"})
	w.WriteHeader(http.StatusNoContent)
}
