package backfill_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lexview/lexview/backfill"
	"github.com/lexview/lexview/internal/backfilltest"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

func TestNetworkBackfill(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		p, a, b, rl := backfilltest.NewPLC(t), backfilltest.NewPDS(t), backfilltest.NewPDS(t), backfilltest.NewRelay(t)
		b.LimitOnce() // a 429 with Retry-After: 1
		for i, host := range []*backfilltest.PDS{a, a, b, b} {
			p.Add(did(i), host.URL())
		}
		a.AddRepo(did(0), postNSID, 7, "3kaaaaaaaaa02") // three pages of three
		a.AddRepo(did(1), postNSID, 2, "3kaaaaaaaaa12")
		a.AddRepo(did(1), likeNSID, 1, "3kaaaaaaaaa12")
		b.AddRepo(did(2), postNSID, 5, "3kaaaaaaaaa22")
		b.AddRepo(did(3), likeNSID, 0, "3kaaaaaaaaa32")
		rl.Add(postNSID, did(0), did(1), did(2))
		rl.Add(likeNSID, did(1), did(3))

		h := newHarness(t, open(t), p, rl.URL())
		mgr := h.start()
		job, err := mgr.Create(t.Context(), backfill.Request{}) // every record collection
		if err != nil {
			t.Fatal(err)
		}
		if job.Scope != storage.ScopeNetwork || job.Status != storage.BackfillRunning || job.Stage != storage.StagePending || job.DID != "" {
			t.Fatalf("new job: %s", describe(job))
		}
		sub := mgr.Subscribe(job.ID)
		defer sub.Close()
		done := h.waitStatus(job.ID, storage.BackfillCompleted)
		if done.Stage != storage.StageCompleted || counters(done) != "4/4/4/15" || done.Error != "" ||
			done.StartedAt.IsZero() || done.CompletedAt.IsZero() {
			t.Fatalf("completed job: %s", describe(done))
		}
		if h.count(postNSID) != 14 || h.count(likeNSID) != 1 {
			t.Fatalf("indexed %d posts, %d likes", h.count(postNSID), h.count(likeNSID))
		}
		rec, err := h.store.GetRecord(t.Context(), "at://"+did(2)+"/"+postNSID+"/3k00000000000")
		if err != nil || rec.Rev != "3kaaaaaaaaa22" || rec.CID != backfilltest.CID || !strings.Contains(string(rec.Value), "record 0") {
			t.Fatalf("record: %+v %v", rec, err)
		}
		for d, r := range h.repos(job.ID) {
			if r.Status != storage.RepoFetched || r.PDSEndpoint == "" {
				t.Errorf("%s: %+v", d, r)
			}
		}
		if n := b.Limited(); n != 1 {
			t.Fatalf("rate limit answered %d times", n)
		}
		calls, cursors := rl.Calls()
		if calls < 3 || !slices.ContainsFunc(cursors, func(c string) bool { return c != "" }) {
			t.Fatalf("relay paging: %d calls, cursors %q", calls, cursors)
		}
		if fin := sub.Final(); fin.Type != backfill.EventJobCompleted || fin.Status != storage.BackfillCompleted {
			t.Fatalf("final event: %+v", fin)
		}
		if events := h.audit("backfill.completed"); events[0].Subject != job.ID {
			t.Fatalf("audit: %+v", events)
		}
	})
}

// A relay that lacks listReposByCollection, such as a single PDS: the
// worker lists every repository instead, skipping inactive ones.
func TestListReposFallback(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		p, a := backfilltest.NewPLC(t), backfilltest.NewPDS(t)
		for i := range 3 {
			p.Add(did(i), a.URL())
		}
		a.AddRepo(did(0), postNSID, 3, "3kaaaaaaaaa02")
		a.AddRepo(did(1), postNSID, 2, "3kaaaaaaaaa12")
		a.SetInactive(did(2))
		h := newHarness(t, open(t), p, a.URL())
		mgr := h.start()
		job, err := mgr.Create(t.Context(), backfill.Request{Collection: postNSID})
		if err != nil {
			t.Fatal(err)
		}
		done := h.waitJob(job.ID, "finished", storage.BackfillJob.Finished)
		if done.Status != storage.BackfillCompleted || counters(done) != "2/2/2/5" {
			t.Fatalf("job: %s", describe(done))
		}
		if _, ok := h.repos(job.ID)[did(2)]; ok {
			t.Fatal("an inactive repository was discovered")
		}
	})
}

// One repository's failures do not fail the job; the relay's do.
func TestFailures(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		p, a, rl := backfilltest.NewPLC(t), backfilltest.NewPDS(t), backfilltest.NewRelay(t)
		p.Add(did(0), a.URL())
		p.Add(did(1), a.URL())
		a.AddRepo(did(0), postNSID, 4, "3kaaaaaaaaa02")
		a.AddRepo(did(1), postNSID, 4, "3kaaaaaaaaa12")
		a.SetFailing(did(1))
		rl.Add(postNSID, did(0), did(1), did(2)) // did(2) is not in the PLC
		h := newHarness(t, open(t), p, rl.URL())
		mgr := h.start()
		job, err := mgr.Create(t.Context(), backfill.Request{Collection: postNSID})
		if err != nil {
			t.Fatal(err)
		}
		done := h.waitJob(job.ID, "finished", storage.BackfillJob.Finished)
		if done.Status != storage.BackfillCompletedWithErrors || counters(done) != "3/2/1/4" || num(done.FailedRepos) != 2 {
			t.Fatalf("job: %s", describe(done))
		}
		repos := h.repos(job.ID)
		if r := repos[did(1)]; r.Status != storage.RepoFailed || !strings.Contains(r.Error, "500") || r.PDSEndpoint != a.URL() ||
			r.FailureReason != backfill.ReasonUnreachable {
			t.Fatalf("failing repo: %+v", r)
		}
		if r := repos[did(2)]; r.Status != storage.RepoFailed || !strings.Contains(r.Error, "resolve DID") || r.PDSEndpoint != "" ||
			r.FailureReason != backfill.ReasonUnresolvable {
			t.Fatalf("unresolvable repo: %+v", r)
		}
		if n := a.FirstPages(did(1), postNSID); n != 4 {
			t.Fatalf("failing repo asked %d times, want 1 + 3 retries", n)
		}

		// A relay that keeps failing fails the job.
		rl.SetFailing()
		job, err = mgr.Create(t.Context(), backfill.Request{Collection: postNSID})
		if err != nil {
			t.Fatal(err)
		}
		sub := mgr.Subscribe(job.ID)
		defer sub.Close()
		done = h.waitJob(job.ID, "finished", storage.BackfillJob.Finished)
		if done.Status != storage.BackfillFailed || done.Stage != storage.StageFailed || !strings.Contains(done.Error, "502") ||
			done.CompletedAt.IsZero() {
			t.Fatalf("job: %s", describe(done))
		}
		if fin := sub.Final(); fin.Status != storage.BackfillFailed || fin.Error == "" {
			t.Fatalf("final event: %+v", fin)
		}
		if events := h.audit("backfill.failed"); events[0].Severity != "error" || events[0].Subject != job.ID {
			t.Fatalf("audit: %+v", events)
		}
	})
}

// slowAccounts registers n accounts of two records each on a slow PDS.
func slowAccounts(p *backfilltest.PLC, a *backfilltest.PDS, from, n int) []string {
	a.SetDelay(15 * time.Millisecond)
	var dids []string
	for i := from; i < from+n; i++ {
		p.Add(did(i), a.URL())
		a.AddRepo(did(i), postNSID, 2, "3kaaaaaaaaaa2")
		dids = append(dids, did(i))
	}
	return dids
}

func TestPauseResumeCancel(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		p, a := backfilltest.NewPLC(t), backfilltest.NewPDS(t)
		dids := slowAccounts(p, a, 0, 10)
		h := newHarness(t, open(t), p, "")
		h.setting(backfill.SettingConcurrency, "1")
		mgr := h.start()
		ctx := t.Context()
		job, err := mgr.Create(ctx, backfill.Request{Accounts: dids})
		if err != nil {
			t.Fatal(err)
		}
		if job.Scope != storage.ScopeDIDs || len(job.DIDs) != 10 || job.DID != "" {
			t.Fatalf("job: %+v", job)
		}
		if _, err := mgr.Resume(ctx, job.ID); !errors.Is(err, backfill.ErrWrongState) {
			t.Fatalf("resume a running job: %v", err)
		}
		h.waitJob(job.ID, "3 repos", func(j storage.BackfillJob) bool { return num(j.ProcessedRepos) >= 3 })
		paused, err := mgr.Pause(ctx, job.ID)
		if err != nil || paused.Status != storage.BackfillPausing {
			t.Fatalf("pause: %+v %v", paused.Status, err)
		}
		if _, err := mgr.Pause(ctx, job.ID); !errors.Is(err, backfill.ErrWrongState) {
			t.Fatalf("pause twice: %v", err)
		}
		at := h.waitStatus(job.ID, storage.BackfillPaused)
		if at.Stage != storage.StageFetching || num(at.ProcessedRepos) >= 10 {
			t.Fatalf("paused job: %s", describe(at))
		}
		calls := a.ListCalls()
		time.Sleep(100 * time.Millisecond)
		if n := a.ListCalls(); n != calls {
			t.Fatalf("fetching went on while paused: %d → %d requests", calls, n)
		}
		if _, err := mgr.Cancel(ctx, job.ID); !errors.Is(err, backfill.ErrWrongState) {
			t.Fatalf("cancel a paused job: %v", err)
		}
		if j, err := mgr.Resume(ctx, job.ID); err != nil || j.Status != storage.BackfillRunning {
			t.Fatalf("resume: %v %v", j.Status, err)
		}
		done := h.waitStatus(job.ID, storage.BackfillCompleted)
		if counters(done) != "10/10/10/20" {
			t.Fatalf("job: %s", describe(done))
		}
		for _, d := range dids {
			if n := a.FirstPages(d, postNSID); n != 1 {
				t.Errorf("%s fetched %d times", d, n)
			}
		}
		if _, err := mgr.Pause(ctx, job.ID); !errors.Is(err, backfill.ErrWrongState) {
			t.Fatalf("pause a completed job: %v", err)
		}
		if _, err := mgr.Pause(ctx, storage.NewID()); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("unknown job: %v", err)
		}

		// Cancel.
		job, err = mgr.Create(ctx, backfill.Request{Accounts: slowAccounts(p, a, 10, 10)})
		if err != nil {
			t.Fatal(err)
		}
		sub := mgr.Subscribe(job.ID)
		defer sub.Close()
		h.waitJob(job.ID, "2 repos", func(j storage.BackfillJob) bool { return num(j.ProcessedRepos) >= 2 })
		if j, err := mgr.Cancel(ctx, job.ID); err != nil || j.Status != storage.BackfillCancelling {
			t.Fatalf("cancel: %v %v", j.Status, err)
		}
		done = h.waitStatus(job.ID, storage.BackfillCancelled)
		if done.Stage != storage.StageCancelled || done.CompletedAt.IsZero() || num(done.ProcessedRepos) >= 10 {
			t.Fatalf("cancelled job: %s", describe(done))
		}
		if fin := sub.Final(); fin.Status != storage.BackfillCancelled {
			t.Fatalf("final event: %+v", fin)
		}
		if _, err := mgr.Resume(ctx, job.ID); !errors.Is(err, backfill.ErrWrongState) {
			t.Fatalf("resume a cancelled job: %v", err)
		}
	})
}

func TestRestart(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		p, a := backfilltest.NewPLC(t), backfilltest.NewPDS(t)
		dids := slowAccounts(p, a, 0, 10)
		store := open(t)
		h := newHarness(t, store, p, "")
		h.setting(backfill.SettingConcurrency, "1")
		mgr := h.start()
		ctx := t.Context()
		job, err := mgr.Create(ctx, backfill.Request{Accounts: dids})
		if err != nil {
			t.Fatal(err)
		}
		// Two jobs caught mid-transition by the shutdown.
		pausing, _ := mgr.Create(ctx, backfill.Request{Collection: postNSID})
		cancelling, _ := mgr.Create(ctx, backfill.Request{Collection: postNSID})
		h.waitJob(job.ID, "3 repos", func(j storage.BackfillJob) bool { return num(j.ProcessedRepos) >= 3 })
		h.stop()
		for id, status := range map[string]string{pausing.ID: storage.BackfillPausing, cancelling.ID: storage.BackfillCancelling} {
			if _, _, err := store.UpdateBackfillJob(ctx, id, storage.BackfillJobUpdate{Status: status}); err != nil {
				t.Fatal(err)
			}
		}
		stopped := h.job(job.ID)
		if stopped.Status != storage.BackfillRunning || stopped.Stage != storage.StageFetching || num(stopped.ProcessedRepos) == 10 {
			t.Fatalf("after shutdown: %s", describe(stopped))
		}
		var fetchedBefore []string
		for d, r := range h.repos(job.ID) {
			if r.Status == storage.RepoFetched {
				fetchedBefore = append(fetchedBefore, d)
			}
		}

		h.start() // a new process on the same store
		done := h.waitStatus(job.ID, storage.BackfillCompleted)
		if counters(done) != "10/10/10/20" {
			t.Fatalf("resumed job: %s", describe(done))
		}
		for _, d := range fetchedBefore {
			if n := a.FirstPages(d, postNSID); n != 1 {
				t.Errorf("%s was fetched before the restart and again after (%d)", d, n)
			}
		}
		if j := h.waitStatus(pausing.ID, storage.BackfillPaused); j.Stage != storage.StagePending {
			t.Fatalf("pausing job after restart: %s", describe(j))
		}
		if j := h.waitStatus(cancelling.ID, storage.BackfillCancelled); j.Stage != storage.StageCancelled || j.CompletedAt.IsZero() {
			t.Fatalf("cancelling job after restart: %s", describe(j))
		}
	})
}

func TestOneJobAtATime(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		p, a := backfilltest.NewPLC(t), backfilltest.NewPDS(t)
		h := newHarness(t, open(t), p, "")
		h.setting(backfill.SettingConcurrency, "2")
		mgr := h.start()
		// The first job's last accounts wait at their listing until the
		// summary has been checked, so it cannot finish before (on a slow
		// machine it otherwise might).
		gate := make(chan struct{})
		var once sync.Once
		release := func() { once.Do(func() { close(gate) }) }
		defer release()
		held := map[string]bool{did(6): true, did(7): true}
		a.OnListRecords(func(d, _, _ string) {
			if held[d] {
				<-gate
			}
		})
		first, err := mgr.Create(t.Context(), backfill.Request{Accounts: slowAccounts(p, a, 0, 8)})
		if err != nil {
			t.Fatal(err)
		}
		second, err := mgr.Create(t.Context(), backfill.Request{Accounts: slowAccounts(p, a, 8, 2)})
		if err != nil {
			t.Fatal(err)
		}
		h.waitJob(first.ID, "first repo", func(j storage.BackfillJob) bool { return num(j.ProcessedRepos) >= 1 })
		if sum, err := mgr.Summary(t.Context()); err != nil || sum.Current == nil || sum.Current.ID != first.ID ||
			sum.Waiting != 1 || sum.Jobs[storage.BackfillRunning] != 2 {
			t.Fatalf("summary: %+v %v", sum, err)
		} else if raw, _ := json.Marshal(sum); !strings.Contains(string(raw), `"current":{`) || !strings.Contains(string(raw), `"waiting":1`) {
			t.Fatalf("summary JSON: %s", raw)
		}
		release()
		for {
			j2 := h.job(second.ID) // read first: if it started, the first job must have finished before
			j1 := h.job(first.ID)
			if j2.Stage != storage.StagePending && !j1.Finished() {
				t.Fatalf("the second job started while the first ran: %s / %s", describe(j1), describe(j2))
			}
			if j1.Finished() {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		j1 := h.job(first.ID)
		j2 := h.waitStatus(second.ID, storage.BackfillCompleted)
		if j1.Status != storage.BackfillCompleted || j2.StartedAt.Before(j1.CompletedAt) || counters(j2) != "2/2/2/4" {
			t.Fatalf("jobs: %s / %s", describe(j1), describe(j2))
		}
		// The summary names the job that finished last.
		if sum, err := mgr.Summary(t.Context()); err != nil || sum.Current != nil || sum.LastFinished == nil || sum.LastFinished.ID != second.ID {
			t.Errorf("summary once both finished: %+v %v", sum, err)
		}
	})
}

// Records deleted (or rewritten) live at a newer rev than the backfill's
// stay deleted (or keep the newer version).
func TestBackfillYieldsToNewerRevs(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		p, a := backfilltest.NewPLC(t), backfilltest.NewPDS(t)
		p.Add(did(0), a.URL())
		a.AddRepo(did(0), postNSID, 3, "3kaaaaaaaaaa2")
		h := newHarness(t, open(t), p, "")
		uri := func(rkey string) string { return "at://" + did(0) + "/" + postNSID + "/" + rkey }
		err := h.store.ApplyBatch(context.Background(), storage.Batch{Ops: []storage.RecordOp{
			{Delete: true, Record: storage.Record{URI: uri("3k00000000000"), Rev: "3kzzzzzzzzzz2"}},
			{Record: storage.Record{URI: uri("3k00000000001"), DID: did(0), Collection: postNSID, RKey: "3k00000000001",
				CID: backfilltest.CID, Rev: "3kzzzzzzzzzz2", Value: []byte(`{"$type":"app.test.post","text":"newer"}`)}},
		}})
		if err != nil {
			t.Fatal(err)
		}
		mgr := h.start()
		job, err := mgr.Create(t.Context(), backfill.Request{Accounts: []string{did(0), did(0)}})
		if err != nil || job.DID != did(0) || len(job.DIDs) != 1 {
			t.Fatalf("create: %+v %v", job, err)
		}
		h.waitStatus(job.ID, storage.BackfillCompleted)
		if _, err := h.store.GetRecord(t.Context(), uri("3k00000000000")); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("deleted record came back: %v", err)
		}
		if rec, _ := h.store.GetRecord(t.Context(), uri("3k00000000001")); !strings.Contains(string(rec.Value), "newer") {
			t.Fatalf("newer version overwritten: %s", rec.Value)
		}
		if rec, _ := h.store.GetRecord(t.Context(), uri("3k00000000002")); rec.Rev != "3kaaaaaaaaaa2" {
			t.Fatalf("new record: %+v", rec)
		}
	})
}

func TestCreateValidation(t *testing.T) {
	t.Parallel()
	p := backfilltest.NewPLC(t)
	p.Add(did(0), "https://pds.example")
	p.Add(did(1), "") // a DID document without a PDS
	h := newHarness(t, storagetest.SQLite(t), p, "")
	mgr := h.start()
	ctx := t.Context()
	var re *backfill.RequestError

	many := make([]string, backfill.MaxAccounts+1)
	for i := range many {
		many[i] = did(1000 + i)
	}
	if _, err := mgr.Create(ctx, backfill.Request{Accounts: many}); !errors.As(err, &re) || !strings.Contains(re.Message, "at most 500") {
		t.Fatalf("501 accounts: %v", err)
	}
	_, err := mgr.Create(ctx, backfill.Request{Accounts: []string{did(0), "did:plc:nope", "not a handle!", did(1), "did:plc:nope"}})
	if !errors.As(err, &re) || re.Message != "unresolvable accounts: did:plc:nope, not a handle!, "+did(1) {
		t.Fatalf("unresolvable: %v", err)
	}
	if _, err := mgr.Create(ctx, backfill.Request{Collection: "not an nsid"}); !errors.As(err, &re) {
		t.Fatalf("bad collection: %v", err)
	}
	if jobs, _ := mgr.List(ctx); len(jobs) != 0 {
		t.Fatalf("refused requests created jobs: %d", len(jobs))
	}
}
