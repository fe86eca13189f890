package backfill

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"sync"
	"time"

	"github.com/lexview/lexview/storage"
)

// The fetching stage is run by a dispatcher: one goroutine owns the state
// of every host and hands repositories to short-lived goroutines, at most
// the job's concurrency fetching at once and at most each host's current
// limit on one host. Nothing waits inside a slot: a repository whose
// fetch failed in a way that may mend (the network, a 5xx, a 429) goes
// back to its host's queue with a time before which it is not tried, and
// its slot serves another host meanwhile. So a slow, failing or
// rate-limiting host never holds up the others:
//
//   - each host's limit adapts to its answers: it starts at
//     startHostLimit, grows by one with each fetch that succeeds, up to
//     the per-host setting, and halves at each 429, 5xx or network error;
//   - a 429 pauses the host until its Retry-After / RateLimit-Reset (at
//     most MaxRateLimitWait), and a success whose RateLimit-Remaining is
//     no more than the fetches in flight pauses it until its reset;
//   - a failure pauses the repository (Options.RetryBackoff, doubled per
//     attempt, jittered) and, after several in a row, the host; after
//     hostDownAfter failures in a row with no success, the host is taken
//     as down and every repository of it still waiting fails at once
//     (reason unreachable_host; a retry of the job asks again);
//   - attempts are stored with the repository, so a restart does not
//     grant more;
//   - DIDs are resolved ahead of fetching, by up to resolveAhead
//     goroutines, so resolution overlaps the fetches;
//   - the next repository comes from the host with the most repositories
//     left (longest processing first: the hosts with the most work start
//     first and are not left for the end).
//
// The repositories are read from the store in DID order, at most
// maxInMemory at a time.

const (
	startHostLimit = 2
	hostDownAfter  = 6
	resolveAhead   = 16
	maxInMemory    = 50_000
	// maxRateLimited is how many 429 answers one repository meets before
	// it fails as rate_limited.
	maxRateLimited = 8
)

// item is one repository the dispatcher holds.
type item struct {
	repo      storage.BackfillRepo
	host      string
	notBefore time.Time
	limited   int    // 429 answers met
	last      counts // what the last attempt fetched and wrote before it failed
	freed     bool   // the fetch gave its slot back once its download was done
}

// hostState is the dispatcher's view of one PDS host.
type hostState struct {
	name      string
	queue     []*item
	inflight  int
	limit     int
	notBefore time.Time
	streak    int // failures in a row
	succeeded bool
	down      error // set once the host is taken as down
}

// outcome is what a goroutine reports back to the dispatcher.
type outcome struct {
	it       *item
	resolved bool  // a resolution ended (it.repo.PDSEndpoint set when it succeeded)
	freed    bool  // the fetch's download is done: its slot is free while it writes
	done     bool  // the repository is finished (fetched or failed for good)
	retry    error // the fetch failed in a way that may mend
	wait     time.Duration
	systemic error
	quota    *quota // RateLimit-* of a successful answer
}

// quota is a host's rate-limit state from the headers of an answer.
type quota struct {
	remaining int
	reset     time.Time
}

type dispatcher struct {
	r         *run
	perHost   int
	hosts     map[string]*hostState
	results   chan outcome
	fetching  int // fetches holding a slot
	live      int // fetch goroutines running, holding a slot or writing
	resolving int
	toResolve []*item
	held      int // repositories in memory
	after     string
	exhausted bool
	systemic  error
	wg        sync.WaitGroup
}

// dispatch runs the fetching stage (see above).
func (r *run) dispatch(ctx context.Context) error {
	d := &dispatcher{r: r, perHost: r.perHost, hosts: map[string]*hostState{}, results: make(chan outcome, 2*(2*r.concurrency+resolveAhead))}
	// A fetch whose download is done gives its slot back while it writes
	// (at most concurrency of them at once), so the database's time is
	// not taken from the network's.
	r.writeSlots = make(chan struct{}, r.concurrency)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	stopping := false
	for {
		if !stopping && (r.checkpoint(ctx) != nil || d.systemic != nil) {
			stopping = true
		}
		if !stopping {
			if err := d.load(ctx); err != nil {
				d.systemic = err
				stopping = true
			}
		}
		if !stopping {
			d.start(ctx)
		}
		if d.live == 0 && d.resolving == 0 && (stopping || d.exhausted && d.held == 0) {
			break
		}
		timer.Reset(d.nextWake())
		select {
		case o := <-d.results:
			d.settle(ctx, o)
		case <-timer.C:
		case <-ctx.Done():
			stopping = true
		case <-r.act.stop:
			stopping = true
		}
	}
	d.wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	if d.systemic != nil {
		return d.systemic
	}
	return r.checkpoint(ctx)
}

// load reads pending repositories from the store while there is room.
func (d *dispatcher) load(ctx context.Context) error {
	for !d.exhausted && d.held+repoBatch <= maxInMemory {
		repos, err := d.r.m.cfg.Store.ListBackfillRepos(ctx, d.r.id, storage.BackfillRepoFilter{
			Statuses: []string{storage.RepoDiscovered, storage.RepoResolved}, After: d.after, Limit: repoBatch,
		})
		if err != nil {
			return fmt.Errorf("list pending repositories: %w", err)
		}
		for _, repo := range repos {
			d.held++
			it := &item{repo: repo}
			if repo.PDSEndpoint == "" {
				d.toResolve = append(d.toResolve, it)
			} else {
				d.enqueue(ctx, it)
			}
		}
		if len(repos) < repoBatch {
			d.exhausted = true
		} else {
			d.after = repos[len(repos)-1].DID
		}
	}
	return nil
}

// enqueue puts a resolved repository in its host's queue, or fails it at
// once when the host is down.
func (d *dispatcher) enqueue(ctx context.Context, it *item) {
	u, _ := url.Parse(it.repo.PDSEndpoint)
	it.host = u.Host
	h := d.hosts[it.host]
	if h == nil {
		h = &hostState{name: it.host, limit: min(startHostLimit, d.perHost)}
		d.hosts[it.host] = h
	}
	if h.down != nil {
		d.fail(ctx, h, it, h.down)
		return
	}
	h.queue = append(h.queue, it)
}

// start begins every resolution and fetch that may begin now.
func (d *dispatcher) start(ctx context.Context) {
	for d.resolving < resolveAhead && len(d.toResolve) > 0 {
		it := d.toResolve[0]
		d.toResolve = d.toResolve[1:]
		d.resolving++
		d.goDo(func() outcome { return d.r.resolveItem(ctx, it) })
	}
	now := time.Now()
	for d.fetching < d.r.concurrency {
		h, it := d.pick(now)
		if it == nil {
			return
		}
		h.inflight++
		d.fetching++
		d.live++
		d.goDo(func() outcome { return d.r.fetchItem(ctx, it, d.results) })
	}
}

func (d *dispatcher) goDo(f func() outcome) {
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		d.results <- f()
	}()
}

// pick takes the next repository to fetch: from the host with the most
// repositories left among those with a free slot and no pause, the first
// one not paused itself.
func (d *dispatcher) pick(now time.Time) (*hostState, *item) {
	var best *hostState
	var bestAt int
	for _, h := range d.hosts {
		if h.down != nil || h.inflight >= h.limit || now.Before(h.notBefore) || len(h.queue) == 0 {
			continue
		}
		at := -1
		for i, it := range h.queue {
			if !now.Before(it.notBefore) {
				at = i
				break
			}
		}
		if at < 0 {
			continue
		}
		if best == nil || len(h.queue)+h.inflight > len(best.queue)+best.inflight ||
			len(h.queue)+h.inflight == len(best.queue)+best.inflight && h.name < best.name {
			best, bestAt = h, at
		}
	}
	if best == nil {
		return nil, nil
	}
	it := best.queue[bestAt]
	best.queue = append(best.queue[:bestAt], best.queue[bestAt+1:]...)
	return best, it
}

// nextWake is how long until a paused host or repository may go on.
func (d *dispatcher) nextWake() time.Duration {
	now := time.Now()
	wake := time.Hour
	if d.fetching >= d.r.concurrency {
		return wake
	}
	for _, h := range d.hosts {
		if h.down != nil || h.inflight >= h.limit {
			continue
		}
		for _, it := range h.queue {
			at := later(it.notBefore, h.notBefore)
			wake = min(wake, max(at.Sub(now), time.Millisecond))
		}
	}
	return wake
}

// settle folds a goroutine's outcome into the dispatcher's state.
func (d *dispatcher) settle(ctx context.Context, o outcome) {
	if o.systemic != nil && d.systemic == nil {
		d.systemic = o.systemic
	}
	if o.resolved {
		d.resolving--
		if o.done || o.systemic != nil || o.it.repo.PDSEndpoint == "" {
			d.held--
			return
		}
		d.enqueue(ctx, o.it)
		return
	}
	h := d.hosts[o.it.host]
	if o.freed || !o.it.freed {
		d.fetching--
		h.inflight--
	}
	if o.freed {
		o.it.freed = true
		return
	}
	d.live--
	o.it.freed = false
	now := time.Now()
	switch {
	case !o.done && o.systemic == nil && o.retry == nil: // stopped before an outcome; left for the next run
		d.held--
	case o.done || o.systemic != nil:
		d.held--
		if o.done {
			h.streak, h.succeeded = 0, true
			h.limit = min(h.limit+1, d.perHost)
		}
		if q := o.quota; q != nil && q.remaining <= h.inflight && q.reset.After(now) {
			h.notBefore = later(h.notBefore, earlier(q.reset, now.Add(d.r.m.cfg.MaxRateLimitWait)))
		}
	case o.wait > 0 || isRateLimited(o.retry): // a 429: pause the host, not the repository's attempts
		h.limit = max(1, h.limit/2)
		wait := o.wait
		if wait <= 0 {
			wait = d.r.m.cfg.RetryBackoff << min(o.it.limited, 6)
		}
		h.notBefore = later(h.notBefore, now.Add(min(wait, d.r.m.cfg.MaxRateLimitWait)))
		o.it.limited++
		if o.it.limited >= maxRateLimited {
			d.fail(ctx, h, o.it, o.retry)
			return
		}
		h.queue = append(h.queue, o.it)
	default: // the network or a 5xx
		h.limit = max(1, h.limit/2)
		h.streak++
		o.it.repo.Attempts++
		if h.streak >= hostDownAfter && !h.succeeded {
			h.down = fmt.Errorf("host unreachable (%d failures in a row, no success): %w", h.streak, o.retry)
			d.fail(ctx, h, o.it, o.retry)
			for _, it := range h.queue {
				d.fail(ctx, h, it, h.down)
			}
			h.queue = nil
			return
		}
		if o.it.repo.Attempts > d.r.m.cfg.Retries {
			d.fail(ctx, h, o.it, o.retry)
			return
		}
		o.it.repo.Error = o.retry.Error()
		if err := d.r.save(ctx, o.it.repo); err != nil { // the attempt, stored
			d.systemic = err
		}
		delay := d.r.m.cfg.RetryBackoff << min(o.it.repo.Attempts-1, 6)
		o.it.notBefore = now.Add(delay/2 + rand.N(delay/2+1))
		if h.streak >= 3 {
			h.notBefore = later(h.notBefore, now.Add(d.r.m.cfg.RetryBackoff<<min(h.streak-3, 6)))
		}
		h.queue = append(h.queue, o.it)
	}
}

// fail records a repository as failed for good with cause.
func (d *dispatcher) fail(ctx context.Context, h *hostState, it *item, cause error) {
	d.held--
	it.repo.FailureReason = failureReason(cause, false)
	if err := d.r.finishRepo(ctx, it.repo, storage.RepoFailed, it.last, cause); err != nil && d.systemic == nil {
		d.systemic = err
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func isRateLimited(err error) bool {
	var xe *XRPCError
	return errors.As(err, &xe) && xe.Status == 429
}

// resolveItem resolves a repository's DID and stores the outcome.
func (r *run) resolveItem(ctx context.Context, it *item) outcome {
	o := outcome{it: it, resolved: true}
	pds, err := r.resolve(ctx, it.repo.DID)
	switch {
	case ctx.Err() != nil:
		return o
	case err != nil:
		it.repo.FailureReason = ReasonUnresolvable
		o.systemic = r.finishRepo(ctx, it.repo, storage.RepoFailed, counts{}, err)
		o.done = true
		return o
	}
	it.repo.PDSEndpoint, it.repo.Status = pds, storage.RepoResolved
	if err := r.save(ctx, it.repo); err != nil {
		o.systemic = err
		return o
	}
	r.m.broker.publish(Event{Type: EventRepoResolved, JobID: r.id, DID: it.repo.DID, PDSEndpoint: pds})
	return o
}

// fetchItem fetches a resolved repository once. A failure that may mend
// (the network, a 5xx, a 429) comes back as retry, for the dispatcher to
// schedule; any other outcome is recorded here. Once a verified export is
// downloaded, the fetch takes a write slot and sends freed on results,
// giving its fetch slot back while it writes.
func (r *run) fetchItem(ctx context.Context, it *item, results chan<- outcome) outcome {
	o := outcome{it: it}
	if r.checkpoint(ctx) != nil {
		return o // left as it is, for the next run
	}
	q := &quotaProbe{}
	started := time.Now()
	writing := false
	defer func() {
		if writing {
			<-r.writeSlots
		}
	}()
	downloaded := func() {
		select {
		case r.writeSlots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		writing = true
		results <- outcome{it: it, freed: true}
	}
	n, err := r.fetchRepo(withDownloaded(withOnce(withQuotaProbe(ctx, q)), downloaded), it.repo.DID, it.repo.PDSEndpoint)
	var se *systemicError
	var xe *XRPCError
	switch {
	case ctx.Err() != nil, errors.Is(err, errStopped):
		return o
	case errors.As(err, &se):
		o.systemic = se
		return o
	case err == nil:
		o.done, o.quota = true, q.get()
		o.systemic = r.finishRepo(ctx, it.repo, storage.RepoFetched, n, nil)
		return o
	case errors.As(err, &xe) && xe.Status == 429:
		o.retry, o.wait, it.last = err, xe.RetryAfter, n
		return o
	case failureReason(err, false) == ReasonUnreachable:
		o.retry, it.last = err, n
		return o
	}
	it.repo.FailureReason = failureReason(err, false)
	if it.repo.FailureReason == ReasonDeleted || it.repo.FailureReason == ReasonTakenDown {
		// Nothing of a deleted or taken-down account stays.
		deleted, perr := r.purgeGone(ctx, it.repo.DID, started)
		n.deleted += deleted
		if perr != nil {
			o.systemic = perr
			return o
		}
	}
	o.done = true
	o.systemic = r.finishRepo(ctx, it.repo, storage.RepoFailed, n, err)
	return o
}

// downloadedKey carries the function a fetch calls once its download is
// done and only writing is left.
type downloadedKey struct{}

func withDownloaded(ctx context.Context, f func()) context.Context {
	return context.WithValue(ctx, downloadedKey{}, f)
}

// downloaded tells the dispatcher, when it asked, that the fetch under ctx
// no longer needs the network.
func downloaded(ctx context.Context) {
	if f, ok := ctx.Value(downloadedKey{}).(func()); ok {
		f()
	}
}
