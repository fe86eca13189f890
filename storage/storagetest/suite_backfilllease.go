package storagetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/lexview/lexview/storage"
)

// claimT claims the next job for holder, failing the test when none can
// be claimed.
func claimT(t *testing.T, s storage.Store, holder string, ttl time.Duration) (storage.BackfillJob, storage.BackfillLease) {
	t.Helper()
	j, l, err := s.ClaimBackfillJob(context.Background(), holder, ttl)
	if err != nil {
		t.Fatalf("ClaimBackfillJob(%s): %v", holder, err)
	}
	return j, l
}

// noClaim checks that holder can claim nothing.
func noClaim(t *testing.T, s storage.Store, holder, why string) {
	t.Helper()
	if j, _, err := s.ClaimBackfillJob(context.Background(), holder, time.Minute); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("%s: claimed %s (%v), want ErrNotFound", why, j.ID, err)
	}
}

// testBackfillClaim: the oldest running job is claimed, with a lease the
// job shows; while a job has a live lease nothing else is claimed, not
// even another running job (one job at a time across instances); a
// released or run-out lease lets the job be claimed again, with a greater
// fencing token.
func testBackfillClaim(t *testing.T, s storage.Store) {
	ctx := context.Background()
	noClaim(t, s, "a", "no jobs")
	paused := newJob(storage.NewID(), base, storage.BackfillPaused)
	first := newJob(storage.NewID(), base.Add(time.Second), storage.BackfillRunning)
	second := newJob(storage.NewID(), base.Add(2*time.Second), storage.BackfillRunning)
	createJobT(t, s, second)
	createJobT(t, s, paused)
	createJobT(t, s, first)

	before := time.Now()
	j, l := claimT(t, s, "a", time.Minute)
	if j.ID != first.ID || l.JobID != first.ID || l.Holder != "a" || l.Token != 1 || j.LeaseToken != 1 || j.ClaimedBy != "a" {
		t.Fatalf("first claim: job %s claimed by %q token %d, lease %+v", j.ID, j.ClaimedBy, j.LeaseToken, l)
	}
	// By the database's clock, which is this host's here, give or take.
	if exp := j.LeaseExpiresAt; exp.Before(before.Add(50*time.Second)) || exp.After(time.Now().Add(70*time.Second)) {
		t.Fatalf("lease expires at %v, want about a minute from %v", exp, before)
	}
	if got := getJobT(t, s, first.ID); got.ClaimedBy != "a" || got.LeaseToken != 1 || !got.LeaseExpiresAt.Equal(j.LeaseExpiresAt) {
		t.Fatalf("stored lease: %q %d %v", got.ClaimedBy, got.LeaseToken, got.LeaseExpiresAt)
	}
	noClaim(t, s, "b", "another job holds a live lease")
	noClaim(t, s, "a", "the holder itself while its lease is live")

	// A pausing job with a live lease still holds the turn.
	if _, _, err := s.UpdateBackfillJob(ctx, first.ID, storage.BackfillJobUpdate{Status: storage.BackfillPausing}); err != nil {
		t.Fatal(err)
	}
	noClaim(t, s, "b", "a pausing job holds a live lease")
	if err := s.RenewBackfillLease(ctx, l, time.Minute); err != nil {
		t.Fatalf("renew: %v", err)
	}
	if err := s.ReleaseBackfillLease(ctx, l); err != nil {
		t.Fatalf("release: %v", err)
	}
	if got := getJobT(t, s, first.ID); got.ClaimedBy != "" || !got.LeaseExpiresAt.IsZero() || got.LeaseToken != 1 {
		t.Fatalf("released lease: %q %v %d", got.ClaimedBy, got.LeaseExpiresAt, got.LeaseToken)
	}
	if err := s.ReleaseBackfillLease(ctx, l); !errors.Is(err, storage.ErrLeaseLost) {
		t.Fatalf("second release: %v", err)
	}
	// The first job is pausing, not running: the second is next.
	j, l2 := claimT(t, s, "b", 50*time.Millisecond)
	if j.ID != second.ID || l2.Token != 1 {
		t.Fatalf("after release: %s token %d", j.ID, l2.Token)
	}
	time.Sleep(150 * time.Millisecond)
	// Run out: claimed again by anyone, with the next token.
	j, l3 := claimT(t, s, "c", time.Minute)
	if j.ID != second.ID || l3.Token != 2 || j.ClaimedBy != "c" {
		t.Fatalf("after the lease ran out: %s by %q token %d", j.ID, j.ClaimedBy, l3.Token)
	}
	if err := s.RenewBackfillLease(ctx, l2, time.Minute); !errors.Is(err, storage.ErrLeaseLost) {
		t.Fatalf("renewing a lease taken over: %v", err)
	}
	if err := s.ReleaseBackfillLease(ctx, l2); !errors.Is(err, storage.ErrLeaseLost) {
		t.Fatalf("releasing a lease taken over: %v", err)
	}
	if got := getJobT(t, s, second.ID); got.ClaimedBy != "c" {
		t.Fatalf("the stale release changed the lease: %q", got.ClaimedBy)
	}
}

// testBackfillClaimRace: many instances claiming at once, with two jobs
// running: exactly one claim wins.
func testBackfillClaimRace(t *testing.T, s storage.Store) {
	createJobT(t, s, newJob(storage.NewID(), base, storage.BackfillRunning))
	createJobT(t, s, newJob(storage.NewID(), base.Add(time.Second), storage.BackfillRunning))
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, err := s.ClaimBackfillJob(context.Background(), string(rune('a'+i)), time.Minute)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won++
			case !errors.Is(err, storage.ErrNotFound):
				t.Errorf("claim: %v", err)
			}
		}()
	}
	wg.Wait()
	if won != 1 {
		t.Fatalf("%d claims won, want 1", won)
	}
}

// testBackfillStaleLease: once a job is claimed again, the writes fenced
// by the earlier lease are refused with ErrLeaseLost and change nothing,
// while the new lease's go through.
func testBackfillStaleLease(t *testing.T, s storage.Store) {
	ctx := context.Background()
	j := newJob(storage.NewID(), base, storage.BackfillRunning)
	createJobT(t, s, j)
	_, stale := claimT(t, s, "a", 50*time.Millisecond)
	if _, err := s.AddBackfillRepos(ctx, stale, []string{"did:plc:a", "did:plc:b"}, "c1"); err != nil {
		t.Fatalf("add with the live lease: %v", err)
	}
	if _, err := s.AddBackfillRepos(ctx, unclaimed(j.ID), []string{"did:plc:x"}, "c0"); !errors.Is(err, storage.ErrLeaseLost) {
		t.Fatalf("add with no lease on a claimed job: %v", err)
	}
	time.Sleep(150 * time.Millisecond)
	_, fresh := claimT(t, s, "b", time.Minute)
	if fresh.Token != stale.Token+1 {
		t.Fatalf("tokens %d then %d", stale.Token, fresh.Token)
	}

	if _, err := s.AddBackfillRepos(ctx, stale, []string{"did:plc:c"}, "c2"); !errors.Is(err, storage.ErrLeaseLost) {
		t.Fatalf("stale add: %v", err)
	}
	err := s.UpdateBackfillRepo(ctx, stale, storage.BackfillRepo{DID: "did:plc:a", PDSEndpoint: "https://pds", Status: storage.RepoFetched, RecordsFetched: 9})
	if !errors.Is(err, storage.ErrLeaseLost) {
		t.Fatalf("stale repo update: %v", err)
	}
	got, changed, err := s.UpdateBackfillJob(ctx, j.ID, storage.BackfillJobUpdate{
		Lease: &stale, Status: storage.BackfillCompleted, Stage: storage.StageCompleted,
	})
	if !errors.Is(err, storage.ErrLeaseLost) || changed {
		t.Fatalf("stale job update: changed %v, %v", changed, err)
	}
	if got := getJobT(t, s, j.ID); got.Status != storage.BackfillRunning || got.RelayCursor != "c1" || counters(got) != "2/nil/nil/nil" {
		t.Fatalf("stale writes changed the job: %s %s cursor %q", got.Status, counters(got), got.RelayCursor)
	}
	if repos, _ := s.ListBackfillRepos(ctx, j.ID, storage.BackfillRepoFilter{Limit: 10}); len(repos) != 2 || repos[0].Status != storage.RepoDiscovered {
		t.Fatalf("stale writes changed the repositories: %+v", repos)
	}

	// The new lease writes.
	if err := s.UpdateBackfillRepo(ctx, fresh, storage.BackfillRepo{DID: "did:plc:a", PDSEndpoint: "https://pds", Status: storage.RepoFetched, RecordsFetched: 9}); err != nil {
		t.Fatalf("fresh repo update: %v", err)
	}
	got, changed, err = s.UpdateBackfillJob(ctx, j.ID, storage.BackfillJobUpdate{
		Lease: &fresh, From: []string{storage.BackfillRunning}, Stage: storage.StageFetching,
	})
	if err != nil || !changed || got.Stage != storage.StageFetching || counters(got) != "2/1/1/9" || got.ClaimedBy != "b" {
		t.Fatalf("fresh job update: %s %s by %q changed %v, %v", got.Stage, counters(got), got.ClaimedBy, changed, err)
	}
	// Settling the job gives the lease up in the same update.
	got, changed, err = s.UpdateBackfillJob(ctx, j.ID, storage.BackfillJobUpdate{
		Lease: &fresh, From: []string{storage.BackfillRunning}, Status: storage.BackfillPaused, Release: true,
	})
	if err != nil || !changed || got.Status != storage.BackfillPaused || got.ClaimedBy != "" || !got.LeaseExpiresAt.IsZero() ||
		got.LeaseToken != fresh.Token {
		t.Fatalf("settle and release: %s by %q until %v token %d, changed %v, %v", got.Status, got.ClaimedBy,
			got.LeaseExpiresAt, got.LeaseToken, changed, err)
	}
	// A fenced update whose status condition fails is not a lost lease.
	if _, changed, err := s.UpdateBackfillJob(ctx, j.ID, storage.BackfillJobUpdate{
		Lease: &fresh, From: []string{storage.BackfillCancelling}, Status: storage.BackfillCancelled,
	}); err != nil || changed {
		t.Fatalf("fenced update from another status: changed %v, %v", changed, err)
	}
}

// testBackfillUnleased: an update marked Unleased is applied only while
// no live lease holds the job.
func testBackfillUnleased(t *testing.T, s storage.Store) {
	ctx := context.Background()
	j := newJob(storage.NewID(), base, storage.BackfillRunning)
	createJobT(t, s, j)
	pause := storage.BackfillJobUpdate{Unleased: true, From: []string{storage.BackfillRunning}, Status: storage.BackfillPaused}
	_, l := claimT(t, s, "a", time.Minute)
	if got, changed, err := s.UpdateBackfillJob(ctx, j.ID, pause); err != nil || changed || got.Status != storage.BackfillRunning {
		t.Fatalf("under a live lease: %s changed %v, %v", got.Status, changed, err)
	}
	if err := s.ReleaseBackfillLease(ctx, l); err != nil {
		t.Fatal(err)
	}
	if got, changed, err := s.UpdateBackfillJob(ctx, j.ID, pause); err != nil || !changed || got.Status != storage.BackfillPaused {
		t.Fatalf("released: %s changed %v, %v", got.Status, changed, err)
	}
}
