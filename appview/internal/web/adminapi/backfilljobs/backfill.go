// Package backfilljobs serves the admin backfill endpoints: creating jobs,
// listing them, pausing, resuming and cancelling them, their repositories
// and PDS summary, deleting their per-repository rows, the progress
// stream (Server-Sent Events), and fetching one account's repository at
// once, outside any job (accounts.go). The jobs themselves are run by the
// top-level backfill package.
package backfilljobs

import (
	"net/http"
	"time"

	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/service/backfilljobs"
	"github.com/lexview/lexview/appview/internal/web/adminapi"
	"github.com/lexview/lexview/appview/internal/web/respond"
	jobs "github.com/lexview/lexview/backfill"
	"github.com/lexview/lexview/storage"
)

// Mount registers the backfill endpoints. keepalive is how often an idle
// progress stream sends a comment (0: 15 s).
func Mount(m *adminapi.Mux, svc *backfilljobs.Service, keepalive time.Duration) {
	h := handlers{svc: svc, keepalive: keepalive}
	for route, f := range map[string]adminapi.Func{
		"POST /admin/backfill":                 h.create,
		"GET /admin/backfill/status":           h.list,
		"POST /admin/backfill/{id}/cancel":     h.steer(backfilljobs.Cancel),
		"POST /admin/backfill/{id}/pause":      h.steer(backfilljobs.Pause),
		"POST /admin/backfill/{id}/resume":     h.steer(backfilljobs.Resume),
		"POST /admin/backfill/{id}/retry":      h.retry,
		"POST /admin/backfill/accounts":        h.fetchAccount,
		"GET /admin/backfill/accounts":         h.accounts,
		"GET /admin/backfill/{id}/repos":       h.repos,
		"GET /admin/backfill/{id}/pds-summary": h.pdsSummary,
		"DELETE /admin/backfill/{id}/details":  h.deleteDetails,
		"DELETE /admin/backfill/details":       h.deleteAllDetails,
		"GET /admin/backfill/{id}/events":      h.events,
	} {
		m.HandleFunc(route, h.available(f))
	}
}

type handlers struct {
	svc       *backfilljobs.Service
	keepalive time.Duration
}

// available answers 503 when the instance runs no backfill, before
// anything else.
func (h handlers) available(next adminapi.Func) adminapi.Func {
	return func(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
		if err := h.svc.Available(); err != nil {
			return err
		}
		return next(w, r, p)
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
	// Additions to the specification's resource: the repositories that
	// failed for good, counted by reason, and the seconds the fetching
	// stage still needs at its measured rate (null when unknown).
	FailedRepos *int64           `json:"failed_repos"`
	Failures    map[string]int64 `json:"failures"`
	ETASeconds  *int64           `json:"eta_seconds"`
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (h handlers) render(r *http.Request, j storage.BackfillJob) (job, error) {
	out := render(j)
	failures, err := h.svc.Failures(r.Context(), j)
	if err != nil {
		return out, err
	}
	out.Failures = failures
	out.ETASeconds = backfilljobs.ETA(j, time.Now())
	return out, nil
}

func render(j storage.BackfillJob) job {
	return job{
		FailedRepos: j.FailedRepos,
		ID:          j.ID, Collection: optional(j.Collection), DID: optional(j.DID), Scope: j.Scope, Status: j.Status, Stage: j.Stage,
		TotalRepos: j.TotalRepos, ResolvedRepos: j.ResolvedRepos, ProcessedRepos: j.ProcessedRepos, TotalRecords: j.TotalRecords,
		Error: optional(j.Error), StartedAt: adminapi.NullableTimestamp(j.StartedAt), CompletedAt: adminapi.NullableTimestamp(j.CompletedAt),
		CreatedAt: adminapi.Timestamp(j.CreatedAt),
	}
}

type createRequest struct {
	Collection *string  `json:"collection"`
	DIDs       []string `json:"dids"`
	DID        *string  `json:"did"`
}

func (h handlers) create(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	var req createRequest
	if err := adminapi.Read(w, r, &req); err != nil {
		return err
	}
	in := jobs.Request{Accounts: req.DIDs}
	if req.Collection != nil {
		in.Collection = *req.Collection
	}
	if req.DID != nil && *req.DID != "" {
		in.Accounts = append(in.Accounts, *req.DID)
	}
	j, err := h.svc.Create(r.Context(), p.DID(), in)
	if err != nil {
		return err
	}
	respond.JSON(w, http.StatusCreated, map[string]any{"id": j.ID, "status": j.Status})
	return nil
}

func (h handlers) list(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	all, err := h.svc.List(r.Context())
	if err != nil {
		return err
	}
	out := make([]job, len(all))
	for i, j := range all {
		if out[i], err = h.render(r, j); err != nil {
			return err
		}
	}
	respond.JSON(w, http.StatusOK, out)
	return nil
}

// steer answers the cancel, pause and resume endpoints.
func (h handlers) steer(c backfilljobs.Control) adminapi.Func {
	return func(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
		j, err := h.svc.Steer(r.Context(), p.DID(), c, r.PathValue("id"))
		if err != nil {
			return err
		}
		respond.JSON(w, http.StatusOK, map[string]any{"id": j.ID, "status": j.Status})
		return nil
	}
}

// retry answers POST /admin/backfill/{id}/retry: the failed repositories
// of a job that completed with errors are fetched again.
func (h handlers) retry(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	j, n, err := h.svc.Retry(r.Context(), p.DID(), r.PathValue("id"))
	if err != nil {
		return err
	}
	respond.JSON(w, http.StatusOK, map[string]any{"id": j.ID, "status": j.Status, "retried_repos": n})
	return nil
}

// repo is a per-repository row.
type repo struct {
	DID            string  `json:"did"`
	PDSEndpoint    *string `json:"pds_endpoint"`
	Status         string  `json:"status"`
	RecordsFetched int64   `json:"records_fetched"`
	// FetchMethod is "car" or "list_records" once fetched, else null.
	FetchMethod *string `json:"fetch_method"`
	// Error and FailureReason say why a failed repository failed (else
	// null); additions to the specification's row.
	Error         *string `json:"error"`
	FailureReason *string `json:"failure_reason"`
}

func (h handlers) repos(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	q := r.URL.Query()
	if err := backfilljobs.CheckPhase(q.Get("phase")); err != nil {
		return err
	}
	limit, err := adminapi.Limit(r, 50, 100)
	if err != nil {
		return err
	}
	rows, next, err := h.svc.Repos(r.Context(), r.PathValue("id"), q.Get("phase"), q.Get("cursor"), limit)
	if err != nil {
		return err
	}
	out := make([]repo, len(rows))
	for i, row := range rows {
		out[i] = repo{DID: row.DID, PDSEndpoint: optional(row.PDSEndpoint), Status: row.Status, RecordsFetched: row.RecordsFetched,
			FetchMethod: optional(row.FetchMethod), Error: optional(row.Error), FailureReason: optional(row.FailureReason)}
	}
	respond.JSON(w, http.StatusOK, map[string]any{"repos": out, "cursor": optional(next)})
	return nil
}

type pdsRow struct {
	PDSEndpoint    string `json:"pds_endpoint"`
	TotalRepos     int64  `json:"total_repos"`
	CompletedRepos int64  `json:"completed_repos"`
	TotalRecords   int64  `json:"total_records"`
}

func (h handlers) pdsSummary(w http.ResponseWriter, r *http.Request, _ *admins.Principal) error {
	rows, err := h.svc.PDSSummary(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	out := make([]pdsRow, len(rows))
	for i, s := range rows {
		out[i] = pdsRow{PDSEndpoint: s.PDSEndpoint, TotalRepos: s.TotalRepos, CompletedRepos: s.CompletedRepos, TotalRecords: s.TotalRecords}
	}
	respond.JSON(w, http.StatusOK, map[string]any{"pds_endpoints": out})
	return nil
}

func (h handlers) deleteDetails(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	if err := h.svc.DeleteDetails(r.Context(), p.DID(), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h handlers) deleteAllDetails(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	if err := h.svc.DeleteFinishedDetails(r.Context(), p.DID()); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
