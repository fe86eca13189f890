package backfilljobs

import (
	"net/http"

	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/web/adminapi"
	"github.com/lexview/lexview/appview/internal/web/respond"
	jobs "github.com/lexview/lexview/backfill"
)

// laneAccount is an account in the on-demand lane.
type laneAccount struct {
	DID         string  `json:"did"`
	Status      string  `json:"status"` // running or queued
	Trigger     string  `json:"trigger"`
	RequestedBy *string `json:"requested_by"`
	QueuedAt    string  `json:"queued_at"`
	StartedAt   *string `json:"started_at"`
}

// accounts answers GET /admin/backfill/accounts: the accounts this
// instance is fetching on demand, then those waiting, and how many
// accounts it remembers fetching lately.
func (h handlers) accounts(w http.ResponseWriter, _ *http.Request, _ *admins.Principal) error {
	st, err := h.svc.Accounts()
	if err != nil {
		return err
	}
	out := make([]laneAccount, len(st.Items))
	for i, it := range st.Items {
		out[i] = laneAccount{DID: it.DID, Status: "queued", Trigger: it.Trigger, RequestedBy: optional(it.Actor),
			QueuedAt: adminapi.Timestamp(it.Queued), StartedAt: adminapi.NullableTimestamp(it.Started)}
		if !it.Started.IsZero() {
			out[i].Status = "running"
		}
	}
	respond.JSON(w, http.StatusOK, map[string]any{"accounts": out, "remembered": st.Remembered})
	return nil
}

type fetchAccountRequest struct {
	DID string `json:"did"`
}

// fetchedAccount is the answer to POST /admin/backfill/accounts.
type fetchedAccount struct {
	DID    string `json:"did"`
	Status string `json:"status"`
	// LastFetchAt and AgainAt are set for status recent: when the
	// account's last fetch ended, and when it may be fetched again.
	LastFetchAt *string `json:"last_fetch_at"`
	AgainAt     *string `json:"again_at"`
}

// fetchAccount answers POST /admin/backfill/accounts {did}: one account's
// repository (a DID or a handle) is fetched at once, beside the jobs. 202
// when it was queued now or already was (status queued or pending), 200
// with status recent when it was fetched lately and is not fetched again
// yet, 400 for an account that does not resolve, 503 when the queue is
// full.
func (h handlers) fetchAccount(w http.ResponseWriter, r *http.Request, p *admins.Principal) error {
	var req fetchAccountRequest
	if err := adminapi.Read(w, r, &req); err != nil {
		return err
	}
	a, err := h.svc.FetchAccount(r.Context(), p.DID(), req.DID)
	if err != nil {
		return err
	}
	out := fetchedAccount{DID: a.DID, Status: a.Status}
	status := http.StatusAccepted
	if a.Status == jobs.OnDemandRecent {
		status = http.StatusOK
		out.LastFetchAt, out.AgainAt = adminapi.NullableTimestamp(a.LastFetch), adminapi.NullableTimestamp(a.Again)
	}
	respond.JSON(w, status, out)
	return nil
}
