package backfill_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lexview/lexview/backfill"
	"github.com/lexview/lexview/internal/backfilltest"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/postgres"
	"github.com/lexview/lexview/storage/storagetest"
)

// Several instances sharing one database: each runs its own Manager, as
// several Lexview processes behind a load balancer do.

// instance is one Manager running until stopped (or the test ends).
type instance struct {
	name   string
	mgr    *backfill.Manager
	log    *logRecorder
	cancel context.CancelFunc
	done   chan struct{}
}

// leaseTune is the tuning of the instances of these tests: short leases,
// so that a takeover happens within the test's patience.
func leaseTune(name string, lease time.Duration, log *logRecorder) func(*backfill.Options) {
	return func(c *backfill.Options) {
		c.Instance, c.LeaseDuration = name, lease
		c.Logger = slog.New(log)
	}
}

// startInstance runs a Manager named name on jobs (its job store) and db
// (its writer and event log), tuned by more.
func startInstance(h *harness, name string, jobs backfill.Store, db storage.Store, lease time.Duration,
	more ...func(*backfill.Options)) *instance {
	h.t.Helper()
	log := &logRecorder{}
	tune := func(c *backfill.Options) {
		leaseTune(name, lease, log)(c)
		for _, f := range more {
			f(c)
		}
	}
	in := &instance{name: name, log: log, mgr: h.buildOn(jobs, db, tune), done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	in.cancel = cancel
	go func() { defer close(in.done); in.mgr.Run(ctx) }()
	h.t.Cleanup(in.stop)
	return in
}

// stop ends the instance's Run (a clean shutdown, unless its database was
// closed first).
func (in *instance) stop() {
	in.cancel()
	<-in.done
}

// logRecorder is a slog handler keeping the messages logged.
type logRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, r.Message)
	return nil
}
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecorder) WithGroup(string) slog.Handler      { return l }

// logged reports whether a message containing s was logged.
func (l *logRecorder) logged(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.ContainsFunc(l.msgs, func(m string) bool { return strings.Contains(m, s) })
}

// slowPDS serves n repositories of records posts each, answering every
// request after delay, so that a job lasts a while.
func slowPDS(t *testing.T, p *backfilltest.PLC, first, n, records int, delay time.Duration) *backfilltest.PDS {
	pds := backfilltest.NewPDS(t)
	for i := first; i < first+n; i++ {
		p.Add(did(i), pds.URL())
		pds.AddRepo(did(i), postNSID, records, "3kaaaaaaaaaa2")
	}
	pds.SetDelay(delay)
	return pds
}

func dids(first, n int) []string {
	var out []string
	for i := first; i < first+n; i++ {
		out = append(out, did(i))
	}
	return out
}

// TestBackfillOneJobAcrossInstances: two instances on one store, three
// jobs created on either: every job completes, worked by one instance at a
// time: no two jobs' runs overlap, and no two jobs ever hold a live lease
// at once.
func TestBackfillOneJobAcrossInstances(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		p := backfilltest.NewPLC(t)
		slowPDS(t, p, 0, 6, 4, 15*time.Millisecond)
		store := open(t)
		h := newHarness(t, store, p, "")
		h.setting(backfill.SettingConcurrency, "1")
		a := startInstance(h, "a", store, store, time.Second)
		b := startInstance(h, "b", store, store, time.Second)

		stopWatch := make(chan struct{})
		watched := make(chan int)
		go func() { // the most jobs seen holding a live lease at once
			most := 0
			for {
				select {
				case <-stopWatch:
					watched <- most
					return
				case <-time.After(2 * time.Millisecond):
				}
				jobs, err := store.ListBackfillJobs(context.Background())
				if err != nil {
					continue
				}
				n := 0
				for _, j := range jobs {
					if !j.Finished() && j.ClaimedBy != "" && j.LeaseExpiresAt.After(time.Now()) {
						n++
					}
				}
				most = max(most, n)
			}
		}()
		var ids []string
		for i, in := range []*instance{a, b, a} {
			job, err := in.mgr.Create(t.Context(), backfill.Request{Collection: postNSID, Accounts: dids(2*i, 2)})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, job.ID)
		}
		var done []storage.BackfillJob
		for _, id := range ids {
			j := h.waitStatus(id, storage.BackfillCompleted)
			if counters(j) != "2/2/2/8" {
				t.Errorf("job %s: %s", id, describe(j))
			}
			done = append(done, j)
		}
		close(stopWatch)
		if most := <-watched; most != 1 {
			t.Errorf("%d jobs held live leases at once, want 1", most)
		}
		slices.SortFunc(done, func(x, y storage.BackfillJob) int { return x.StartedAt.Compare(y.StartedAt) })
		for i := 1; i < len(done); i++ {
			if done[i].StartedAt.Before(done[i-1].CompletedAt) {
				t.Errorf("job %s started at %v, before job %s completed at %v", done[i].ID,
					done[i].StartedAt, done[i-1].ID, done[i-1].CompletedAt)
			}
		}
		if n := h.count(postNSID); n != 24 {
			t.Errorf("%d posts indexed, want 24", n)
		}
	})
}

// TestBackfillTakeoverAfterCrash: an instance working a job dies (its
// database connections close, its context ends, nothing is released);
// another instance on its own connections, idle until then because the
// job was leased, claims the job once the lease runs out, continues from
// the stored progress (repositories already fetched are not fetched
// again), and completes it with exactly the repositories' records and
// counters.
func TestBackfillTakeoverAfterCrash(t *testing.T) {
	t.Parallel()
	dbURL := storagetest.PostgresURL(t)
	openPG := func() *postgres.Store {
		s, err := postgres.Open(context.Background(), dbURL, postgres.Options{MaxConns: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	storeA, storeB := openPG(), openPG()
	if err := storeA.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	const repos, records = 8, 6
	p := backfilltest.NewPLC(t)
	pds := slowPDS(t, p, 0, repos, records, 30*time.Millisecond)
	h := newHarness(t, storeB, p, "")
	h.setting(backfill.SettingConcurrency, "1")
	const lease = 600 * time.Millisecond
	a := startInstance(h, "a", storeA, storeA, lease)
	job, err := a.mgr.Create(t.Context(), backfill.Request{Collection: postNSID, Accounts: dids(0, repos)})
	if err != nil {
		t.Fatal(err)
	}
	h.waitJob(job.ID, "instance a to claim the job", func(j storage.BackfillJob) bool { return j.ClaimedBy == "a" })
	b := startInstance(h, "b", storeB, storeB, lease)
	h.waitJob(job.ID, "3 repositories fetched", func(j storage.BackfillJob) bool { return num(j.ProcessedRepos) >= 3 })
	if j := h.job(job.ID); j.ClaimedBy != "a" || j.LeaseToken != 1 {
		t.Fatalf("b took the job while a held it: %q token %d", j.ClaimedBy, j.LeaseToken)
	}

	crashed := time.Now()
	storeA.Close() // the process dies: its connections go, the lease stays
	a.stop()
	j := h.waitJob(job.ID, "instance b to take the job over", func(j storage.BackfillJob) bool { return j.ClaimedBy == "b" })
	took := time.Since(crashed)
	if j.LeaseToken != 2 {
		t.Errorf("b's lease token %d, want 2", j.LeaseToken)
	}
	// The lease, plus b's idle wait (10 PollIntervals of 20ms) and slack
	// for a busy machine.
	if took > lease+200*time.Millisecond+2*time.Second {
		t.Errorf("b took the job over %v after the crash (lease %v)", took, lease)
	}
	done := h.waitStatus(job.ID, storage.BackfillCompleted)
	if want := "8/8/8/48"; counters(done) != want {
		t.Errorf("job: %s, want counters %s", describe(done), want)
	}
	if n := h.count(postNSID); n != repos*records {
		t.Errorf("%d posts indexed, want %d", n, repos*records)
	}
	// One repository at a time: at most the one a was fetching when it
	// died is fetched twice.
	starts := 0
	for i := range repos {
		n := pds.FirstPages(did(i), postNSID)
		if n < 1 || n > 2 {
			t.Errorf("%s listed %d times", did(i), n)
		}
		starts += n
	}
	if starts > repos+1 {
		t.Errorf("%d listings for %d repositories: b did not continue from the stored progress", starts, repos)
	}
	if !b.log.logged("backfill job completed") {
		t.Errorf("b did not complete the job: %q", b.log.msgs)
	}
	t.Logf("takeover %v after the crash with a %v lease", took.Round(time.Millisecond), lease)
}

// renewalDropper is a job store whose lease renewals can be made to fail,
// as for an instance cut off from the database long enough for its lease
// to run out, while it goes on working.
type renewalDropper struct {
	backfill.Store
	drop atomic.Bool
}

func (s *renewalDropper) RenewBackfillLease(ctx context.Context, l storage.BackfillLease, ttl time.Duration) error {
	if s.drop.Load() {
		return errors.New("renewal dropped by the test")
	}
	return s.Store.RenewBackfillLease(ctx, l, ttl)
}

// TestBackfillStaleWorkerStops: an instance whose lease ran out while it
// went on working (its renewals failing) finds the job claimed by another
// instance and stops, writing no more progress: the job completes once,
// under the new lease, with exact counters. The stale instance reads the
// job's status too rarely (PollInterval a minute) to notice the new claim
// that way: its fenced progress writes stop it.
func TestBackfillStaleWorkerStops(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		const repos, records = 20, 6
		p := backfilltest.NewPLC(t)
		slowPDS(t, p, 0, repos, records, 30*time.Millisecond)
		store := open(t)
		h := newHarness(t, store, p, "")
		h.setting(backfill.SettingConcurrency, "1")
		const lease = 400 * time.Millisecond
		dropper := &renewalDropper{Store: store}
		a := startInstance(h, "a", dropper, store, lease, func(c *backfill.Options) { c.PollInterval = time.Minute })
		job, err := a.mgr.Create(t.Context(), backfill.Request{Collection: postNSID, Accounts: dids(0, repos)})
		if err != nil {
			t.Fatal(err)
		}
		h.waitJob(job.ID, "instance a to claim the job", func(j storage.BackfillJob) bool { return j.ClaimedBy == "a" })
		b := startInstance(h, "b", store, store, lease)
		h.waitJob(job.ID, "2 repositories fetched", func(j storage.BackfillJob) bool { return num(j.ProcessedRepos) >= 2 })
		dropper.drop.Store(true)
		h.waitJob(job.ID, "instance b to claim the job", func(j storage.BackfillJob) bool { return j.ClaimedBy == "b" })
		done := h.waitStatus(job.ID, storage.BackfillCompleted)
		if want := "20/20/20/120"; counters(done) != want || done.LeaseToken != 2 {
			t.Errorf("job: %s token %d, want counters %s token 2", describe(done), done.LeaseToken, want)
		}
		if n := h.count(postNSID); n != repos*records {
			t.Errorf("%d posts indexed, want %d", n, repos*records)
		}
		if !a.log.logged("lease was lost") {
			t.Errorf("a did not stop for a lost lease: %q", a.log.msgs)
		}
		if a.log.logged("backfill job completed") || !b.log.logged("backfill job completed") {
			t.Errorf("the job was not completed by b alone: a %q, b %q", a.log.msgs, b.log.msgs)
		}
		if n := len(h.audit("backfill.completed")); n != 1 {
			t.Errorf("%d backfill.completed entries, want 1", n)
		}
	})
}

// TestBackfillPauseCancelAcrossInstances: pause, resume and cancel asked
// of one instance reach the job another instance works: it stops at its
// next checkpoint and settles the job (paused, then cancelled), giving
// its lease up.
func TestBackfillPauseCancelAcrossInstances(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		const repos, records = 8, 3
		p := backfilltest.NewPLC(t)
		slowPDS(t, p, 0, repos, records, 30*time.Millisecond)
		store := open(t)
		h := newHarness(t, store, p, "")
		h.setting(backfill.SettingConcurrency, "1")
		const lease = 2 * time.Second
		in := map[string]*instance{"a": startInstance(h, "a", store, store, lease), "b": startInstance(h, "b", store, store, lease)}
		other := func(name string) *instance {
			if name == "a" {
				return in["b"]
			}
			return in["a"]
		}
		job, err := in["a"].mgr.Create(t.Context(), backfill.Request{Collection: postNSID, Accounts: dids(0, repos)})
		if err != nil {
			t.Fatal(err)
		}
		j := h.waitJob(job.ID, "a repository fetched", func(j storage.BackfillJob) bool { return num(j.ProcessedRepos) >= 1 })
		worker := j.ClaimedBy
		if worker == "" {
			t.Fatalf("no lease on the running job: %s", describe(j))
		}
		if got, err := other(worker).mgr.Pause(t.Context(), job.ID); err != nil || got.Status != storage.BackfillPausing {
			t.Fatalf("pause on the other instance: %s %v", got.Status, err)
		}
		paused := h.waitStatus(job.ID, storage.BackfillPaused)
		if num(paused.ProcessedRepos) >= repos || paused.ClaimedBy != "" {
			t.Fatalf("paused job: %s, claimed by %q", describe(paused), paused.ClaimedBy)
		}
		if _, err := other(worker).mgr.Resume(t.Context(), job.ID); err != nil {
			t.Fatal(err)
		}
		j = h.waitJob(job.ID, "a repository fetched after resuming", func(j storage.BackfillJob) bool {
			return j.Status == storage.BackfillRunning && j.ClaimedBy != "" && num(j.ProcessedRepos) > num(paused.ProcessedRepos)
		})
		if _, err := other(j.ClaimedBy).mgr.Cancel(t.Context(), job.ID); err != nil {
			t.Fatal(err)
		}
		cancelled := h.waitStatus(job.ID, storage.BackfillCancelled)
		if num(cancelled.ProcessedRepos) >= repos || cancelled.Stage != storage.StageCancelled {
			t.Fatalf("cancelled job: %s", describe(cancelled))
		}
		// The lease is given up: the next job is claimed at once.
		next, err := in["b"].mgr.Create(t.Context(), backfill.Request{Collection: postNSID, Accounts: dids(0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		h.waitStatus(next.ID, storage.BackfillCompleted)
	})
}

// TestBackfillProgressOnAnotherInstance: a subscriber of the progress
// stream on an instance that does not work the job (a load balancer sent
// it there) gets job_counters as the job moves, and its job_completed.
func TestBackfillProgressOnAnotherInstance(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		const repos, records = 6, 3
		p := backfilltest.NewPLC(t)
		slowPDS(t, p, 0, repos, records, 20*time.Millisecond)
		store := open(t)
		h := newHarness(t, store, p, "")
		h.setting(backfill.SettingConcurrency, "1")
		a := startInstance(h, "a", store, store, 2*time.Second)
		job, err := a.mgr.Create(t.Context(), backfill.Request{Collection: postNSID, Accounts: dids(0, repos)})
		if err != nil {
			t.Fatal(err)
		}
		h.waitJob(job.ID, "instance a to claim the job", func(j storage.BackfillJob) bool { return j.ClaimedBy == "a" })
		b := startInstance(h, "b", store, store, 2*time.Second)
		sub := b.mgr.Subscribe(job.ID)
		defer sub.Close()
		var processed []int64
		timeout := time.After(10 * time.Second)
	read:
		for {
			select {
			case ev := <-sub.Events():
				if ev.Type == backfill.EventJobCounters {
					processed = append(processed, num(ev.Job.ProcessedRepos))
				}
			case <-sub.Done():
				break read
			case <-timeout:
				t.Fatalf("no job_completed on b; counters seen %v", processed)
			}
		}
		final := sub.Final()
		if final.Type != backfill.EventJobCompleted || final.Status != storage.BackfillCompleted || num(final.Job.ProcessedRepos) != repos {
			t.Fatalf("final event: %+v", final)
		}
		if len(processed) < 2 || !slices.IsSorted(processed) || processed[len(processed)-1] != repos {
			t.Errorf("processed_repos in b's job_counters: %v", processed)
		}
	})
}
