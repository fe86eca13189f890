package backfill_test

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/bluesky-social/indigo/atproto/identity"

	"github.com/lexview/lexview/backfill"
	"github.com/lexview/lexview/internal/simnet"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// startNetwork draws and serves spec with the harness's collections.
func startNetwork(t testing.TB, spec simnet.Spec) *simnet.Network {
	t.Helper()
	spec.Collection, spec.Other = postNSID, likeNSID
	n, err := simnet.Start(simnet.Draw(spec))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	return n
}

// cachedDirectory resolves through the network's PLC with the cache an
// App puts in front of its directory.
func cachedDirectory(n *simnet.Network) identity.Directory {
	return identity.NewCacheDirectory(n.Directory(), 250_000, 24*time.Hour, 2*time.Minute, 5*time.Minute)
}

// heldByDID counts the stored records of collection per repository.
func (h *harness) heldByDID(collection string) map[string]int {
	h.t.Helper()
	held := map[string]int{}
	q := storage.ListQuery{Collection: collection, Limit: 1000}
	for {
		page, err := h.store.ListRecords(context.Background(), q)
		if err != nil {
			h.t.Fatal(err)
		}
		for _, r := range page.Records {
			held[r.DID]++
		}
		if page.Next == nil {
			return held
		}
		q.After = page.Next
	}
}

// TestBackfillSimulatedNetwork backfills a small simulated network (every
// kind of host fault and account state) through its relay, and checks
// the end state account by account: every repository the job says it
// fetched holds exactly the network's records, every reachable account
// on a healthy host was fetched, and nothing of an unreachable account
// is stored. The rate against the latency-bound limit is logged.
func TestBackfillSimulatedNetwork(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		spec := simnet.Small(42)
		n := startNetwork(t, spec)
		h := newHarness(t, open(t), nil, n.RelayURL())
		h.dir = cachedDirectory(n)
		h.tune = func(o *backfill.Options) {
			o.PageSize, o.DiscoveryPageSize = 100, 100
			o.RequestTimeout, o.MaxRateLimitWait = 2*time.Second, 2*time.Second
		}
		// Records stored earlier that the network no longer holds: one of
		// an active account (reconciliation deletes it), and one of each
		// deleted, taken-down and deactivated account (the first two go;
		// a deactivated account's records stay, as it may come back).
		stored := map[string]string{} // URI -> the account's status
		for _, a := range n.Plan.Accounts {
			if n.Plan.Hosts[a.Host].Fault != simnet.Healthy || a.Former >= 0 {
				continue
			}
			if _, seen := stored[a.Status]; seen || a.Status == simnet.Active && !n.Plan.Reachable(a) {
				continue
			}
			uri := "at://" + a.DID + "/" + postNSID + "/2zzzzzzzzzzzz"
			stored[a.Status] = uri
			if err := h.store.ApplyBatch(context.Background(), storage.Batch{Ops: []storage.RecordOp{{Record: storage.Record{
				URI: uri, DID: a.DID, Collection: postNSID, RKey: "2zzzzzzzzzzzz", CID: "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm",
				Rev: "3kaaaaaaaaaa2", Value: []byte(`{"$type":"app.test.post","text":"gone"}`), IndexedAt: time.Now().Add(-time.Hour),
			}}}}); err != nil {
				t.Fatal(err)
			}
		}
		if len(stored) != 4 {
			t.Fatalf("seeded %v", stored)
		}
		mgr := h.start()
		began := time.Now()
		job, err := mgr.Create(t.Context(), backfill.Request{Collection: postNSID})
		if err != nil {
			t.Fatal(err)
		}
		done := h.waitJob(job.ID, "the end of the job", storage.BackfillJob.Finished)
		took := time.Since(began)
		// Some repositories cannot be fetched: the job says so.
		if done.Status != storage.BackfillCompletedWithErrors || done.Stage != storage.StageCompleted {
			t.Fatalf("job: %s", describe(done))
		}
		held := h.heldByDID(postNSID)
		rows := h.repos(job.ID)
		if len(rows) != len(n.Plan.Accounts) {
			t.Errorf("the job discovered %d of %d accounts", len(rows), len(n.Plan.Accounts))
		}
		fetched, records := 0, 0
		wantFailures := map[string]int64{}
		for _, a := range n.Plan.Accounts {
			row, host := rows[a.DID], n.Plan.Hosts[a.Host]
			if row.Status == storage.RepoFailed {
				wantFailures[row.FailureReason]++
				if want := expectedReason(a, host); want != "" && row.FailureReason != want {
					t.Errorf("%s (%q on a %s host) failed as %s, want %s: %s", a.DID, a.Status, host.Fault, row.FailureReason, want, row.Error)
				}
			}
			switch {
			case row.Status == storage.RepoFetched:
				fetched++
				records += held[a.DID]
				if !n.Plan.Reachable(a) {
					t.Errorf("%s (%q on a %s host) was fetched", a.DID, a.Status, host.Fault)
				}
				if held[a.DID] != a.Records {
					t.Errorf("%s: %d records stored, the network holds %d", a.DID, held[a.DID], a.Records)
				}
			case n.Plan.Reachable(a) && host.Fault == simnet.Healthy:
				t.Errorf("%s on a healthy host: %s (%s)", a.DID, row.Status, row.Error)
			case a.Status == simnet.Deactivated && stored[a.Status] == "at://"+a.DID+"/"+postNSID+"/2zzzzzzzzzzzz":
				if held[a.DID] != 1 {
					t.Errorf("%s (deactivated) holds %d records, want its 1", a.DID, held[a.DID])
				}
			case held[a.DID] != 0:
				t.Errorf("%s (%q, %s host, %s) has %d records stored", a.DID, a.Status, host.Fault, row.Status, held[a.DID])
			}
		}
		for status, uri := range stored {
			if _, err := h.store.GetRecord(t.Context(), uri); (err == nil) != (status == simnet.Deactivated) {
				t.Errorf("the stored record of an account %q: %v", status, err)
			}
		}
		if num(done.ProcessedRepos) != int64(fetched) || num(done.TotalRecords) != int64(records) ||
			num(done.FailedRepos) != int64(len(n.Plan.Accounts)-fetched) {
			t.Errorf("job counters %s, %d failed; %d repositories fetched holding %d records", counters(done), num(done.FailedRepos), fetched, records)
		}
		if got, err := mgr.Failures(t.Context(), done); err != nil || !maps.Equal(got, wantFailures) {
			t.Errorf("failures by reason: %v (%v), the rows say %v", got, err, wantFailures)
		}

		// A down host is given up on after a few connections, not asked
		// again for each of its repositories.
		if refused := n.Stats().Refused; refused > 2*6 {
			t.Errorf("a down host was asked %d times", refused)
		}

		// A retry fetches only the failed repositories: the unreachable
		// ones fail again, and nothing fetched is fetched twice.
		before := n.Stats().Requests
		retried, pending, err := mgr.Retry(t.Context(), job.ID)
		if err != nil || pending != num(done.FailedRepos) || retried.Status != storage.BackfillRunning {
			t.Fatalf("retry: %d pending, %v; %s", pending, err, describe(retried))
		}
		again := h.waitJob(job.ID, "the end of the retry", storage.BackfillJob.Finished)
		if again.Status != storage.BackfillCompletedWithErrors || num(again.FailedRepos) > num(done.FailedRepos) ||
			num(again.ProcessedRepos) < num(done.ProcessedRepos) {
			t.Errorf("after the retry: %s, %d failed", describe(again), num(again.FailedRepos))
		}
		if asked := n.Stats().Requests - before; asked > 4*num(done.FailedRepos) {
			t.Errorf("the retry made %d requests for %d failed repositories", asked, num(done.FailedRepos))
		}
		if _, _, err := mgr.Retry(t.Context(), job.ID); err != nil {
			t.Errorf("a second retry: %v", err)
		}
		h.waitJob(job.ID, "the end of the second retry", storage.BackfillJob.Finished)
		bound, err := n.Plan.Bound(backfill.DefaultConcurrency, backfill.DefaultPerHostConcurrency)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s\n%d of %d records in %s = %.0f records/s; the latency-bound limit: %s\nnetwork: %+v",
			n.Plan.Summary(), records, n.Plan.Records(), took.Round(time.Millisecond), float64(records)/took.Seconds(), bound, n.Stats())
	})
}

// expectedReason is the failure reason an account's repository must fail
// with ("" when it may fail for several reasons, or must not fail).
func expectedReason(a simnet.Account, host simnet.Host) string {
	switch {
	case host.Fault == simnet.Down:
		return backfill.ReasonUnreachable
	case a.Status == simnet.Deactivated:
		return backfill.ReasonDeactivated
	case a.Status == simnet.TakenDown:
		return backfill.ReasonTakenDown
	case a.Status == simnet.Deleted:
		return backfill.ReasonDeleted
	}
	return ""
}
