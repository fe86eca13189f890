package storagetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/storage"
)

// RunBackfill runs the suite for backfill jobs and their repository rows
// (BackfillStore). Each subtest gets a fresh store.
func RunBackfill(t *testing.T, open func(t testing.TB) storage.Store) {
	tests := []storeCase{
		{"JobRoundTripAndOrder", testBackfillJobs},
		{"ClaimIsOldestRunningOneAtATime", testBackfillClaim},
		{"ConcurrentClaimsOneWinner", testBackfillClaimRace},
		{"StaleLeaseCannotWrite", testBackfillStaleLease},
		{"UnleasedUpdate", testBackfillUnleased},
		{"UpdateJobChecksStatus", testBackfillUpdate},
		{"ReposAndCounters", testBackfillRepos},
		{"RepoPagingAndFilters", testBackfillRepoPaging},
		{"PDSSummary", testBackfillPDSSummary},
		{"DeleteDetails", testBackfillDeleteDetails},
		{"RecordVersions", testRecordVersions},
	}
	runCases(t, open, tests)
}

// unclaimed is the lease of a job never claimed (token 0), with which the
// fenced writes of a job no worker claimed are made.
func unclaimed(jobID string) storage.BackfillLease { return storage.BackfillLease{JobID: jobID} }

func newJob(id string, created time.Time, status string) storage.BackfillJob {
	return storage.BackfillJob{
		ID: id, Collection: "app.test.post", Scope: storage.ScopeNetwork, Status: status,
		Stage: storage.StagePending, CreatedAt: created,
	}
}

func createJobT(t *testing.T, s storage.Store, j storage.BackfillJob) {
	t.Helper()
	if err := s.CreateBackfillJob(context.Background(), j); err != nil {
		t.Fatalf("CreateBackfillJob: %v", err)
	}
}

func getJobT(t *testing.T, s storage.Store, id string) storage.BackfillJob {
	t.Helper()
	j, err := s.GetBackfillJob(context.Background(), id)
	if err != nil {
		t.Fatalf("GetBackfillJob(%s): %v", id, err)
	}
	return j
}

func counters(j storage.BackfillJob) string {
	f := func(p *int64) string {
		if p == nil {
			return "nil"
		}
		return fmt.Sprint(*p)
	}
	return f(j.TotalRepos) + "/" + f(j.ResolvedRepos) + "/" + f(j.ProcessedRepos) + "/" + f(j.TotalRecords)
}

func testBackfillJobs(t *testing.T, s storage.Store) {
	ctx := context.Background()
	older := newJob(storage.NewID(), base, storage.BackfillRunning)
	newer := storage.BackfillJob{
		ID: storage.NewID(), DID: "did:plc:one", Scope: storage.ScopeDIDs, DIDs: []string{"did:plc:one"},
		Status: storage.BackfillRunning, Stage: storage.StagePending, CreatedAt: base.Add(time.Second),
	}
	createJobT(t, s, older)
	createJobT(t, s, newer)
	if err := s.CreateBackfillJob(ctx, older); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("duplicate id: %v", err)
	}
	got := getJobT(t, s, newer.ID)
	if got.DID != "did:plc:one" || got.Collection != "" || got.Scope != storage.ScopeDIDs ||
		!slices.Equal(got.DIDs, []string{"did:plc:one"}) || got.Status != storage.BackfillRunning ||
		got.Stage != storage.StagePending || counters(got) != "nil/nil/nil/nil" || got.Error != "" ||
		!got.StartedAt.IsZero() || !got.CompletedAt.IsZero() || !got.CreatedAt.Equal(newer.CreatedAt) {
		t.Fatalf("round trip: %+v", got)
	}
	if j := getJobT(t, s, older.ID); j.DIDs == nil || len(j.DIDs) != 0 || j.Collection != "app.test.post" {
		t.Fatalf("network job: %+v", j)
	}
	if _, err := s.GetBackfillJob(ctx, storage.NewID()); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("unknown job: %v", err)
	}
	all, err := s.ListBackfillJobs(ctx)
	if err != nil || len(all) != 2 || all[0].ID != newer.ID || all[1].ID != older.ID {
		t.Fatalf("list newest first: %v %v", all, err)
	}
}

func testBackfillUpdate(t *testing.T, s storage.Store) {
	ctx := context.Background()
	j := newJob(storage.NewID(), base, storage.BackfillRunning)
	createJobT(t, s, j)
	running := []string{storage.BackfillRunning}

	got, changed, err := s.UpdateBackfillJob(ctx, j.ID, storage.BackfillJobUpdate{
		From: running, Stage: storage.StageDiscovering, StartedAt: base.Add(time.Minute), StartCounters: true,
	})
	if err != nil || !changed || got.Stage != storage.StageDiscovering || counters(got) != "0/0/0/0" ||
		!got.StartedAt.Equal(base.Add(time.Minute)) {
		t.Fatalf("start: %+v %v %v", got, changed, err)
	}
	// started_at is kept from the first start.
	got, _, _ = s.UpdateBackfillJob(ctx, j.ID, storage.BackfillJobUpdate{StartedAt: base.Add(time.Hour)})
	if !got.StartedAt.Equal(base.Add(time.Minute)) {
		t.Fatalf("started_at overwritten: %v", got.StartedAt)
	}
	got, changed, err = s.UpdateBackfillJob(ctx, j.ID, storage.BackfillJobUpdate{From: running, Status: storage.BackfillPausing})
	if err != nil || !changed || got.Status != storage.BackfillPausing {
		t.Fatalf("pause: %+v %v %v", got, changed, err)
	}
	// A compare-and-set on the wrong status changes nothing.
	got, changed, err = s.UpdateBackfillJob(ctx, j.ID, storage.BackfillJobUpdate{From: running, Status: storage.BackfillCancelling})
	if err != nil || changed || got.Status != storage.BackfillPausing {
		t.Fatalf("cancel while pausing: %+v %v %v", got, changed, err)
	}
	msg := "relay unreachable"
	got, changed, err = s.UpdateBackfillJob(ctx, j.ID, storage.BackfillJobUpdate{
		From: []string{storage.BackfillPausing, storage.BackfillRunning}, Status: storage.BackfillFailed,
		Stage: storage.StageFailed, Error: &msg, CompletedAt: base.Add(2 * time.Hour),
	})
	if err != nil || !changed || got.Status != storage.BackfillFailed || got.Stage != storage.StageFailed ||
		got.Error != msg || !got.CompletedAt.Equal(base.Add(2*time.Hour)) || !got.Finished() {
		t.Fatalf("fail: %+v %v %v", got, changed, err)
	}
	empty := ""
	if got, _, _ = s.UpdateBackfillJob(ctx, j.ID, storage.BackfillJobUpdate{Error: &empty}); got.Error != "" {
		t.Fatalf("error not cleared: %q", got.Error)
	}
	if _, _, err := s.UpdateBackfillJob(ctx, storage.NewID(), storage.BackfillJobUpdate{Status: storage.BackfillPaused}); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("unknown job: %v", err)
	}
}

func testBackfillRepos(t *testing.T, s storage.Store) {
	ctx := context.Background()
	j := newJob(storage.NewID(), base, storage.BackfillRunning)
	createJobT(t, s, j)
	n, err := s.AddBackfillRepos(ctx, unclaimed(j.ID), []string{"did:plc:b", "did:plc:a", "did:plc:b"}, "cursor-1")
	if err != nil || n != 2 {
		t.Fatalf("add: %d %v", n, err)
	}
	n, err = s.AddBackfillRepos(ctx, unclaimed(j.ID), []string{"did:plc:a", "did:plc:c"}, "cursor-2")
	if err != nil || n != 1 {
		t.Fatalf("add again: %d %v", n, err)
	}
	got := getJobT(t, s, j.ID)
	if counters(got) != "3/nil/nil/nil" || got.RelayCursor != "cursor-2" {
		t.Fatalf("after discovery: %s cursor %q", counters(got), got.RelayCursor)
	}
	if _, err := s.AddBackfillRepos(ctx, unclaimed(storage.NewID()), []string{"did:plc:x"}, ""); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("unknown job: %v", err)
	}

	update := func(r storage.BackfillRepo) {
		t.Helper()
		if err := s.UpdateBackfillRepo(ctx, unclaimed(j.ID), r); err != nil {
			t.Fatalf("UpdateBackfillRepo(%+v): %v", r, err)
		}
	}
	update(storage.BackfillRepo{DID: "did:plc:a", PDSEndpoint: "https://pds.one", Status: storage.RepoResolved})
	update(storage.BackfillRepo{DID: "did:plc:a", Status: storage.RepoFetched, RecordsFetched: 7}) // keeps the PDS
	update(storage.BackfillRepo{DID: "did:plc:b", PDSEndpoint: "https://pds.two", Status: storage.RepoResolved, Attempts: 2})
	update(storage.BackfillRepo{DID: "did:plc:b", Status: storage.RepoFailed, RecordsFetched: 2, Error: "HTTP 500",
		FailureReason: "unreachable_host", Attempts: 3, FetchMethod: storage.FetchListRecords})
	update(storage.BackfillRepo{DID: "did:plc:c", Status: storage.RepoFailed, Error: "DID not found", FailureReason: "unresolvable_did"})
	if got := counters(getJobT(t, s, j.ID)); got != "3/2/1/9" {
		t.Fatalf("counters: %s", got)
	}
	if f := getJobT(t, s, j.ID).FailedRepos; f == nil || *f != 2 {
		t.Fatalf("failed repos: %v", f)
	}
	if got, err := s.BackfillFailures(ctx, j.ID); err != nil || len(got) != 2 || got["unreachable_host"] != 1 || got["unresolvable_did"] != 1 {
		t.Fatalf("failures by reason: %v %v", got, err)
	}
	// Refetching a fetched repo corrects the counters instead of adding.
	update(storage.BackfillRepo{DID: "did:plc:a", Status: storage.RepoFetched, RecordsFetched: 5, FetchMethod: storage.FetchCAR})
	if got := counters(getJobT(t, s, j.ID)); got != "3/2/1/7" {
		t.Fatalf("counters after refetch: %s", got)
	}
	if err := s.UpdateBackfillRepo(ctx, unclaimed(j.ID), storage.BackfillRepo{DID: "did:plc:zzz", Status: storage.RepoFetched}); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("unknown repo: %v", err)
	}
	repos, err := s.ListBackfillRepos(ctx, j.ID, storage.BackfillRepoFilter{Limit: 10})
	if err != nil || len(repos) != 3 {
		t.Fatalf("list: %v %v", repos, err)
	}
	want := []storage.BackfillRepo{
		{DID: "did:plc:a", PDSEndpoint: "https://pds.one", Status: storage.RepoFetched, RecordsFetched: 5, FetchMethod: storage.FetchCAR},
		{DID: "did:plc:b", PDSEndpoint: "https://pds.two", Status: storage.RepoFailed, RecordsFetched: 2, Error: "HTTP 500",
			FailureReason: "unreachable_host", Attempts: 3, FetchMethod: storage.FetchListRecords},
		{DID: "did:plc:c", Status: storage.RepoFailed, Error: "DID not found", FailureReason: "unresolvable_did"},
	}
	if !slices.Equal(repos, want) {
		t.Fatalf("rows:\n got %+v\nwant %+v", repos, want)
	}

	// A retry is refused unless the job's status allows it, then makes
	// the failed repositories pending again: resolved where the PDS is
	// known.
	if n, err := s.RetryBackfillRepos(ctx, j.ID, []string{storage.BackfillCompletedWithErrors}); err != nil || n != 0 {
		t.Fatalf("retry of a running job: %d %v", n, err)
	}
	if _, _, err := s.UpdateBackfillJob(ctx, j.ID, storage.BackfillJobUpdate{Status: storage.BackfillCompletedWithErrors,
		Stage: storage.StageCompleted, CompletedAt: base}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RetryBackfillRepos(ctx, storage.NewID(), []string{storage.BackfillCompletedWithErrors}); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("retry of an unknown job: %v", err)
	}
	if n, err := s.RetryBackfillRepos(ctx, j.ID, []string{storage.BackfillCompletedWithErrors}); err != nil || n != 2 {
		t.Fatalf("retry: %d %v", n, err)
	}
	retried := getJobT(t, s, j.ID)
	if retried.Status != storage.BackfillRunning || retried.Stage != storage.StageFetching || *retried.FailedRepos != 0 ||
		!retried.CompletedAt.IsZero() || counters(retried) != "3/2/1/7" {
		t.Fatalf("the retried job: %+v %s", retried, counters(retried))
	}
	pending, err := s.ListBackfillRepos(ctx, j.ID, storage.BackfillRepoFilter{Statuses: []string{storage.RepoDiscovered, storage.RepoResolved}, Limit: 10})
	if err != nil || len(pending) != 2 || pending[0].Status != storage.RepoResolved || pending[1].Status != storage.RepoDiscovered ||
		pending[0].Error != "" || pending[0].FailureReason != "" || pending[0].Attempts != 0 {
		t.Fatalf("the retried repositories: %+v %v", pending, err)
	}
}

func testBackfillRepoPaging(t *testing.T, s storage.Store) {
	ctx := context.Background()
	j := newJob(storage.NewID(), base, storage.BackfillRunning)
	createJobT(t, s, j)
	var dids []string
	for i := range 25 {
		dids = append(dids, fmt.Sprintf("did:plc:repo%02d", i))
	}
	if _, err := s.AddBackfillRepos(ctx, unclaimed(j.ID), dids, ""); err != nil {
		t.Fatal(err)
	}
	for i, did := range dids {
		switch i % 3 {
		case 1:
			_ = s.UpdateBackfillRepo(ctx, unclaimed(j.ID), storage.BackfillRepo{DID: did, PDSEndpoint: "https://pds", Status: storage.RepoResolved})
		case 2:
			_ = s.UpdateBackfillRepo(ctx, unclaimed(j.ID), storage.BackfillRepo{DID: did, PDSEndpoint: "https://pds", Status: storage.RepoFetched})
		}
	}
	page := func(f storage.BackfillRepoFilter) []string {
		t.Helper()
		var out []string
		for {
			repos, err := s.ListBackfillRepos(ctx, j.ID, f)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range repos {
				out = append(out, r.DID)
			}
			if len(repos) < f.Limit {
				return out
			}
			f.After = repos[len(repos)-1].DID
		}
	}
	if got := page(storage.BackfillRepoFilter{Limit: 4}); !slices.Equal(got, dids) {
		t.Fatalf("all: %v", got)
	}
	if got := page(storage.BackfillRepoFilter{Limit: 4, Resolved: true}); len(got) != 16 || slices.Contains(got, dids[0]) {
		t.Fatalf("resolved: %v", got)
	}
	fetched := page(storage.BackfillRepoFilter{Limit: 3, Statuses: []string{storage.RepoFetched}})
	if len(fetched) != 8 || fetched[0] != dids[2] {
		t.Fatalf("fetched: %v", fetched)
	}
	pending := page(storage.BackfillRepoFilter{Limit: 5, Statuses: []string{storage.RepoDiscovered, storage.RepoResolved}})
	if len(pending) != 17 {
		t.Fatalf("pending: %v", pending)
	}
	other := newJob(storage.NewID(), base, storage.BackfillRunning)
	createJobT(t, s, other)
	if repos, err := s.ListBackfillRepos(ctx, other.ID, storage.BackfillRepoFilter{Limit: 10}); err != nil || len(repos) != 0 {
		t.Fatalf("other job: %v %v", repos, err)
	}
}

func testBackfillPDSSummary(t *testing.T, s storage.Store) {
	ctx := context.Background()
	j := newJob(storage.NewID(), base, storage.BackfillRunning)
	createJobT(t, s, j)
	if _, err := s.AddBackfillRepos(ctx, unclaimed(j.ID), []string{"did:plc:1", "did:plc:2", "did:plc:3", "did:plc:4"}, ""); err != nil {
		t.Fatal(err)
	}
	rows := []storage.BackfillRepo{
		{DID: "did:plc:1", PDSEndpoint: "https://small", Status: storage.RepoFetched, RecordsFetched: 4},
		{DID: "did:plc:2", PDSEndpoint: "https://big", Status: storage.RepoFetched, RecordsFetched: 10},
		{DID: "did:plc:3", PDSEndpoint: "https://big", Status: storage.RepoResolved},
	}
	for _, r := range rows {
		if err := s.UpdateBackfillRepo(ctx, unclaimed(j.ID), r); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.BackfillPDSSummary(ctx, j.ID)
	want := []storage.PDSSummary{
		{PDSEndpoint: "https://big", TotalRepos: 2, CompletedRepos: 1, TotalRecords: 10},
		{PDSEndpoint: "https://small", TotalRepos: 1, CompletedRepos: 1, TotalRecords: 4},
	}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("summary: %+v %v", got, err)
	}
}

func testBackfillDeleteDetails(t *testing.T, s storage.Store) {
	ctx := context.Background()
	done := newJob(storage.NewID(), base, storage.BackfillCompleted)
	failed := newJob(storage.NewID(), base, storage.BackfillFailed)
	active := newJob(storage.NewID(), base, storage.BackfillRunning)
	for _, j := range []storage.BackfillJob{done, failed, active} {
		createJobT(t, s, j)
		if _, err := s.AddBackfillRepos(ctx, unclaimed(j.ID), []string{"did:plc:x", "did:plc:y"}, ""); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := s.DeleteFinishedBackfillRepos(ctx); err != nil || n != 4 {
		t.Fatalf("delete finished: %d %v", n, err)
	}
	if repos, _ := s.ListBackfillRepos(ctx, active.ID, storage.BackfillRepoFilter{Limit: 10}); len(repos) != 2 {
		t.Fatalf("active job's rows deleted: %v", repos)
	}
	if n, err := s.DeleteBackfillRepos(ctx, active.ID); err != nil || n != 2 {
		t.Fatalf("delete one job's rows: %d %v", n, err)
	}
	if got := counters(getJobT(t, s, active.ID)); got != "2/nil/nil/nil" {
		t.Fatalf("deleting rows changed the job: %s", got)
	}
}

func testRecordVersions(t *testing.T, s storage.Store) {
	ctx := context.Background()
	const did, coll = "did:plc:a", "app.test.post"
	var want []storage.RecordVersion
	var ops []storage.RecordOp
	for i, k := range []string{"3kb", "3ka", "3kd", "3kc", "self"} {
		r := Rec(did, coll, k, base.Add(time.Duration(i)*time.Second), nil)
		if k != "self" {
			r.Rev = "3kz" + k
		}
		ops = append(ops, put(r))
		want = append(want, storage.RecordVersion{RKey: k, Rev: r.Rev, IndexedAt: r.IndexedAt})
	}
	slices.SortFunc(want, func(a, b storage.RecordVersion) int { return strings.Compare(a.RKey, b.RKey) })
	// Neighbours that share a prefix of the range: another collection, a
	// collection whose name extends it, a DID that extends this one.
	ops = append(ops, put(Rec(did, "app.test.postx", "3ka", base, nil)), put(Rec(did, "app.test.pos", "3ka", base, nil)),
		put(Rec("did:plc:ab", coll, "3ka", base, nil)), put(Rec(did, "app.test.other", "3ka", base, nil)))
	apply(t, s, ops...)

	var got []storage.RecordVersion
	after := ""
	for {
		page, err := s.ListRecordVersions(ctx, did, coll, after, 2)
		if err != nil {
			t.Fatalf("ListRecordVersions: %v", err)
		}
		if len(page) > 2 {
			t.Fatalf("page of %d versions, limit 2", len(page))
		}
		if len(page) == 0 {
			break
		}
		got = append(got, page...)
		after = page[len(page)-1].RKey
	}
	if len(got) != len(want) {
		t.Fatalf("versions %v, want %v", got, want)
	}
	for i := range want {
		if got[i].RKey != want[i].RKey || got[i].Rev != want[i].Rev || !got[i].IndexedAt.Equal(want[i].IndexedAt) {
			t.Fatalf("version %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if none, err := s.ListRecordVersions(ctx, "did:plc:none", coll, "", 10); err != nil || len(none) != 0 {
		t.Fatalf("unknown repository: %v, %v", none, err)
	}
	if _, err := s.ListRecordVersions(ctx, did, coll, "", 0); err == nil {
		t.Fatal("limit 0 accepted")
	}
}
