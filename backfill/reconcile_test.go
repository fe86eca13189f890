package backfill_test

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lexview/lexview/backfill"
	"github.com/lexview/lexview/internal/backfilltest"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

func postURI(did, rkey string) string { return "at://" + did + "/" + postNSID + "/" + rkey }

// put stores a post as if it had been indexed at indexedAt with rev.
func (h *harness) put(did, rkey, rev string, indexedAt time.Time) {
	h.t.Helper()
	err := h.store.ApplyBatch(h.t.Context(), storage.Batch{Ops: []storage.RecordOp{{Record: storage.Record{
		URI: postURI(did, rkey), DID: did, Collection: postNSID, RKey: rkey, CID: backfilltest.CID, Rev: rev,
		Value: []byte(`{"$type":"app.test.post","text":"held by Lexview"}`), IndexedAt: indexedAt,
	}}}})
	if err != nil {
		h.t.Fatal(err)
	}
}

// has reports whether the store holds the post.
func (h *harness) has(did, rkey string) bool {
	h.t.Helper()
	_, err := h.store.GetRecord(h.t.Context(), postURI(did, rkey))
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		h.t.Fatal(err)
	}
	return err == nil
}

// runJob creates a job on a Manager that is not running yet, subscribes to
// it, runs the Manager and waits for the job's end. It returns the finished
// job and its repo_fetched events by DID.
func (h *harness) runJob(req backfill.Request) (storage.BackfillJob, map[string]backfill.Event) {
	h.t.Helper()
	h.stop()
	mgr := h.build()
	job, err := mgr.Create(h.t.Context(), req)
	if err != nil {
		h.t.Fatal(err)
	}
	sub := mgr.Subscribe(job.ID)
	defer sub.Close()
	h.run(mgr)
	fetched := map[string]backfill.Event{}
	for {
		select {
		case ev := <-sub.Events():
			if ev.Type == backfill.EventRepoFetched {
				fetched[ev.DID] = ev
			}
			continue
		case <-sub.Done():
		}
		break
	}
	for drained := false; !drained; { // events published before job_completed
		select {
		case ev := <-sub.Events():
			if ev.Type == backfill.EventRepoFetched {
				fetched[ev.DID] = ev
			}
		default:
			drained = true
		}
	}
	return h.waitJob(job.ID, "finished", storage.BackfillJob.Finished), fetched
}

// deletedInAudit reads records_deleted from the job's backfill.completed
// entry, waiting for it (the worker records it just after finishing).
func (h *harness) deletedInAudit(jobID string) int64 {
	h.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		events, _, err := h.store.ListEvents(h.t.Context(), storage.EventFilter{Type: "backfill.completed", Subject: jobID, Limit: 1})
		if err != nil {
			h.t.Fatal(err)
		}
		if len(events) == 1 {
			var detail struct {
				RecordsDeleted *int64 `json:"records_deleted"`
			}
			if err := json.Unmarshal(events[0].Detail, &detail); err != nil || detail.RecordsDeleted == nil {
				h.t.Fatalf("backfill.completed detail: %s %v", events[0].Detail, err)
			}
			return *detail.RecordsDeleted
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("no backfill.completed entry for job %s", jobID)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A record deleted from its repository disappears at the next backfill of
// that account, and at the next network backfill; the deletions are counted
// in the repo_fetched events and the job's completion entry.
func TestReconcileDeletions(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		p, a, rl := backfilltest.NewPLC(t), backfilltest.NewPDS(t), backfilltest.NewRelay(t)
		p.Add(did(0), a.URL())
		p.Add(did(1), a.URL())
		a.AddRepo(did(0), postNSID, 5, "3kaaaaaaaaab2") // two pages of three
		a.AddRepo(did(1), postNSID, 4, "3kaaaaaaaaab3")
		rl.Add(postNSID, did(0), did(1))
		h := newHarness(t, open(t), p, rl.URL())
		first, _ := h.runJob(backfill.Request{Collection: postNSID})
		if first.Status != storage.BackfillCompleted || h.count(postNSID) != 9 {
			t.Fatalf("first job: %s, %d records", describe(first), h.count(postNSID))
		}

		// deleteRecord on the PDS, then a backfill of that one account.
		a.DeleteRecord(did(0), postNSID, "3k00000000001", "3kaaaaaaaaac2")
		job, fetched := h.runJob(backfill.Request{Collection: postNSID, Accounts: []string{did(0)}})
		if job.Status != storage.BackfillCompleted || counters(job) != "1/1/1/4" {
			t.Fatalf("account job: %s", describe(job))
		}
		if h.has(did(0), "3k00000000001") || !h.has(did(0), "3k00000000000") || h.count(postNSID) != 8 {
			t.Fatalf("after the account backfill: deleted record held %v, %d records", h.has(did(0), "3k00000000001"), h.count(postNSID))
		}
		if ev := fetched[did(0)]; ev.Deleted != 1 || ev.Records != 4 || ev.Status != storage.RepoFetched {
			t.Fatalf("repo_fetched: %+v", ev)
		}
		if raw, _ := json.Marshal(fetched[did(0)]); !strings.Contains(string(raw), `"records_deleted":1`) {
			t.Fatalf("repo_fetched JSON: %s", raw)
		}
		if n := h.deletedInAudit(job.ID); n != 1 {
			t.Fatalf("audit records_deleted %d", n)
		}
		if rec, err := h.store.GetRecord(t.Context(), postURI(did(0), "3k00000000000")); err != nil || rec.Rev != "3kaaaaaaaaac2" {
			t.Fatalf("kept record: %+v %v", rec, err)
		}

		// Deletions in both repositories, then a network backfill.
		a.DeleteRecord(did(0), postNSID, "3k00000000004", "3kaaaaaaaaad2")
		a.DeleteRecord(did(1), postNSID, "3k00000000000", "3kaaaaaaaaac3")
		a.DeleteRecord(did(1), postNSID, "3k00000000003", "3kaaaaaaaaad3")
		job, fetched = h.runJob(backfill.Request{Collection: postNSID})
		if job.Status != storage.BackfillCompleted || counters(job) != "2/2/2/5" {
			t.Fatalf("network job: %s", describe(job))
		}
		if h.has(did(0), "3k00000000004") || h.has(did(1), "3k00000000000") || h.has(did(1), "3k00000000003") || h.count(postNSID) != 5 {
			t.Fatalf("after the network backfill: %d records", h.count(postNSID))
		}
		if fetched[did(0)].Deleted != 1 || fetched[did(1)].Deleted != 2 || h.deletedInAudit(job.ID) != 3 {
			t.Fatalf("deletions counted: %+v", fetched)
		}

		// Nothing more to remove: a backfill deletes nothing.
		if job, fetched = h.runJob(backfill.Request{Collection: postNSID}); h.deletedInAudit(job.ID) != 0 || h.count(postNSID) != 5 {
			t.Fatalf("third job: %s %+v", describe(job), fetched)
		}
	})
}

// A record indexed live while the repository is being listed survives its
// backfill, with a revision newer than the one the backfill read, or
// without a revision; records the repository lost before stay removed.
func TestReconcileSparesLiveRecords(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		p, a := backfilltest.NewPLC(t), backfilltest.NewPDS(t)
		p.Add(did(0), a.URL())
		a.AddRepo(did(0), postNSID, 4, "3kaaaaaaaaae2")
		h := newHarness(t, open(t), p, "")
		old := time.Now().Add(-time.Hour)
		h.put(did(0), "3jold00000001", "3kaaaaaaaaaa2", old) // deleted from the repository since
		h.put(did(0), "3jold00000002", "3kaaaaaaaaae2", old) // written at the rev read, deleted since
		h.put(did(0), "3jimported001", "", old)              // imported long ago, no rev
		var once sync.Once
		a.OnListRecords(func(string, string, string) {
			once.Do(func() { // the live stream indexes two records mid-listing
				h.put(did(0), "3llive0000001", "3kaaaaaaaaaf2", time.Now())
				h.put(did(0), "3llive0000002", "", time.Now())
			})
		})
		job, fetched := h.runJob(backfill.Request{Accounts: []string{did(0)}})
		if job.Status != storage.BackfillCompleted || counters(job) != "1/1/1/4" {
			t.Fatalf("job: %s", describe(job))
		}
		for rkey, want := range map[string]bool{
			"3jold00000001": false, "3jold00000002": false, "3jimported001": false,
			"3llive0000001": true, "3llive0000002": true, "3k00000000000": true, "3k00000000003": true,
		} {
			if got := h.has(did(0), rkey); got != want {
				t.Errorf("%s held %v, want %v", rkey, got, want)
			}
		}
		if fetched[did(0)].Deleted != 3 || h.deletedInAudit(job.ID) != 3 {
			t.Fatalf("deletions counted: %+v", fetched[did(0)])
		}
		// The deletes left tombstones at the rev read: a replay of the old
		// version does not bring a removed record back.
		h.put(did(0), "3jold00000001", "3kaaaaaaaaaa2", old)
		if h.has(did(0), "3jold00000001") {
			t.Fatal("an older write brought a reconciled record back")
		}
	})
}

// A listing that breaks off part-way removes nothing, nor does one whose
// repository revision could not be read.
func TestReconcileIncompleteListing(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		p, a := backfilltest.NewPLC(t), backfilltest.NewPDS(t)
		p.Add(did(0), a.URL())
		p.Add(did(1), a.URL())
		a.AddRepo(did(0), postNSID, 7, "3kaaaaaaaaab2") // three pages of three
		a.AddRepo(did(1), postNSID, 2, "3kaaaaaaaaab3")
		a.SetFailingAfterFirstPage(did(0))
		a.SetNoLatestCommit(did(1))
		h := newHarness(t, open(t), p, "")
		old := time.Now().Add(-time.Hour)
		for _, d := range []string{did(0), did(1)} {
			h.put(d, "3jgone0000001", "3kaaaaaaaaaa2", old)
			h.put(d, "3jgone0000002", "", old)
		}
		job, fetched := h.runJob(backfill.Request{Accounts: []string{did(0), did(1)}})
		if job.Status != storage.BackfillCompletedWithErrors || counters(job) != "2/2/1/5" {
			t.Fatalf("job: %s", describe(job))
		}
		if r := h.repos(job.ID)[did(0)]; r.Status != storage.RepoFailed {
			t.Fatalf("broken listing: %+v", r)
		}
		for _, d := range []string{did(0), did(1)} {
			if !h.has(d, "3jgone0000001") || !h.has(d, "3jgone0000002") {
				t.Errorf("%s: a record was removed after an incomplete listing", d)
			}
			if fetched[d].Deleted != 0 {
				t.Errorf("%s: repo_fetched counts %d deletions", d, fetched[d].Deleted)
			}
		}
		if n := h.deletedInAudit(job.ID); n != 0 {
			t.Fatalf("audit records_deleted %d", n)
		}
	})
}
