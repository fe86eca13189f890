package backfilljobs_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// onDemandEntry waits for the backfill.on_demand entry of did (60 s at
// most).
func (w *world) onDemandEntry(t *testing.T, did string) (storage.Event, map[string]any) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		events, _, err := w.env.Store.ListEvents(t.Context(), storage.EventFilter{Type: "backfill.on_demand", Subject: did, Limit: 5})
		if err != nil {
			t.Fatal(err)
		}
		if len(events) > 0 {
			var d map[string]any
			if err := json.Unmarshal(events[0].Detail, &d); err != nil {
				t.Fatal(err)
			}
			return events[0], d
		}
		if time.Now().After(deadline) {
			t.Fatalf("no backfill.on_demand entry for %s", did)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestFetchAccount: POST /admin/backfill/accounts fetches one account's
// repository at once, outside any job, and records it in the event log
// with the operator as actor; asked again soon after it answers recent
// and fetches nothing; an account that does not resolve is a 400; the
// route needs backfill:create. GET /admin/backfill/accounts lists the
// account being fetched.
func TestFetchAccount(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		w := setup(t, open(t), "")
		did := w.account(t, 4)
		r := w.su.Do(t, "POST", "/admin/backfill/accounts", map[string]any{"did": did})
		if r.Status != 202 {
			t.Fatalf("%d %s", r.Status, r.Raw)
		}
		if m := r.Object(t); m["did"] != did || m["status"] != "queued" || m["again_at"] != nil {
			t.Fatalf("answer: %s", r.Raw)
		}
		ev, d := w.onDemandEntry(t, did)
		if ev.ActorDID != w.su.Account.DID.String() || d["trigger"] != "operator" || d["outcome"] != "fetched" || d["records"] != 4.0 {
			t.Fatalf("entry: actor %s %s", ev.ActorDID, ev.Detail)
		}
		if n, err := w.env.Store.CountRecords(t.Context(), postNSID); err != nil || n != 4 {
			t.Fatalf("%d records indexed (%v)", n, err)
		}
		if jobs := w.jobs(t); len(jobs) != 0 {
			t.Fatalf("a job was created: %+v", jobs)
		}

		r = w.su.Do(t, "POST", "/admin/backfill/accounts", map[string]any{"did": did})
		if m := r.Object(t); r.Status != 200 || m["status"] != "recent" || m["last_fetch_at"] == nil || m["again_at"] == nil {
			t.Fatalf("again: %d %s", r.Status, r.Raw)
		}
		for _, body := range []map[string]any{{"did": "nobody.test"}, {}} {
			if r := w.su.Do(t, "POST", "/admin/backfill/accounts", body); r.Status != 400 {
				t.Fatalf("%v: %d %s", body, r.Status, r.Raw)
			}
		}
		viewer := w.env.AddAdmin(t, admins.BackfillRead)
		if r := viewer.Do(t, "POST", "/admin/backfill/accounts", map[string]any{"did": did}); r.Status != 403 {
			t.Fatalf("without backfill:create: %d %s", r.Status, r.Raw)
		}

		// An account caught being fetched (its PDS stalls).
		held := w.account(t, 2)
		gate, listing := make(chan struct{}), make(chan struct{}, 8)
		w.pds.OnListRecords(func(d, _, _ string) {
			if d == held {
				listing <- struct{}{}
				<-gate
			}
		})
		defer close(gate)
		if r := w.su.Do(t, "POST", "/admin/backfill/accounts", map[string]any{"did": held}); r.Status != 202 {
			t.Fatalf("%d %s", r.Status, r.Raw)
		}
		<-listing
		r = viewer.Do(t, "GET", "/admin/backfill/accounts", nil)
		var lane struct {
			Accounts []struct {
				DID, Status, Trigger string
				RequestedBy          *string `json:"requested_by"`
				StartedAt            *string `json:"started_at"`
			} `json:"accounts"`
			Remembered int `json:"remembered"`
		}
		r.JSON(t, &lane)
		if r.Status != 200 || len(lane.Accounts) != 1 || lane.Accounts[0].DID != held || lane.Accounts[0].Status != "running" ||
			lane.Accounts[0].Trigger != "operator" || lane.Accounts[0].RequestedBy == nil ||
			*lane.Accounts[0].RequestedBy != w.su.Account.DID.String() || lane.Accounts[0].StartedAt == nil || lane.Remembered != 1 {
			t.Fatalf("lane: %d %s", r.Status, r.Raw)
		}
	})
}
