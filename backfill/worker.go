package backfill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
)

// errStopped ends a run at a checkpoint after a pause or cancel request.
var errStopped = errors.New("backfill: stopped at a checkpoint")

// run is one processing of one job, from claim to finish or stop.
type run struct {
	m           *Manager
	id          string              // the job's ID
	job         storage.BackfillJob // as the run last wrote it; only the run's own goroutine touches it
	act         *active
	lease       storage.BackfillLease // the job's lease, which fences the run's progress writes
	log         *slog.Logger
	collections []string
	concurrency int
	perHost     int
	writeSlots  chan struct{} // during dispatch: fetches writing after their download
	method      string        // FetchCAR or FetchListRecords
	deleted     atomic.Int64  // stored records removed by reconciliation in this run
}

func newRun(m *Manager, job storage.BackfillJob, act *active) *run {
	return &run{m: m, id: job.ID, job: job, act: act, lease: act.lease, log: m.cfg.Logger.With("job", job.ID)}
}

// execute carries the job through its remaining stages.
func (r *run) execute(ctx context.Context) error {
	r.concurrency = r.setting(ctx, SettingConcurrency, DefaultConcurrency, MaxConcurrency)
	r.perHost = r.setting(ctx, SettingPerHostConcurrency, DefaultPerHostConcurrency, MaxPerHostConcurrency)
	r.method = r.fetchMethod(ctx)
	if err := r.wantedCollections(); err != nil {
		return err
	}
	pollCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); r.poll(pollCtx) }()
	go func() { defer wg.Done(); r.keepLease(pollCtx) }()
	defer wg.Wait()
	defer cancel()

	if r.job.Stage == storage.StagePending {
		if err := r.setStage(ctx, storage.StageDiscovering, true); err != nil {
			return err
		}
	}
	if r.job.Stage == storage.StageDiscovering {
		if err := r.discover(ctx); err != nil {
			return err
		}
		if err := r.setStage(ctx, storage.StageFetching, false); err != nil {
			return err
		}
	}
	if r.job.Stage == storage.StageFetching {
		return r.fetchAll(ctx)
	}
	return nil
}

// setting reads a concurrency setting, clamped to [1, hi].
func (r *run) setting(ctx context.Context, key string, def, hi int) int {
	v, err := r.m.cfg.Store.GetSetting(ctx, key)
	if err != nil {
		if !errors.Is(err, storage.ErrNotFound) {
			r.log.Warn("backfill: reading a setting failed; using the default", "key", key, "err", err)
		}
		return def
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		r.log.Warn("backfill: setting is not an integer; using the default", "key", key, "value", v)
		return def
	}
	return min(max(n, 1), hi)
}

// wantedCollections fixes the collections this run fetches.
func (r *run) wantedCollections() error {
	snap := r.m.cfg.Lexicons.Snapshot()
	if c := r.job.Collection; c != "" {
		if l, ok := snap.Get(c); !ok || l.Kind != lexicon.KindRecord {
			return fmt.Errorf("no record lexicon for collection %s", c)
		}
		r.collections = []string{c}
		return nil
	}
	r.collections = snap.RecordCollections()
	if len(r.collections) == 0 {
		return errors.New("no record lexicons to backfill")
	}
	return nil
}

// checkpoint returns errStopped once a pause or cancel was requested.
func (r *run) checkpoint(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if r.act.stopped() {
		return errStopped
	}
	return nil
}

// live are the statuses of a job a worker may still change.
var live = []string{storage.BackfillRunning, storage.BackfillPausing, storage.BackfillCancelling}

func (r *run) setStage(ctx context.Context, stage string, start bool) error {
	u := storage.BackfillJobUpdate{From: live, Stage: stage, Lease: &r.lease}
	if start {
		u.StartedAt, u.StartCounters = r.m.cfg.Now(), true
	}
	job, changed, err := r.m.cfg.Store.UpdateBackfillJob(ctx, r.id, u)
	if err != nil {
		if errors.Is(err, storage.ErrLeaseLost) {
			r.act.lose()
		}
		return fmt.Errorf("set stage %s: %w", stage, err)
	}
	if !changed {
		return errStopped
	}
	r.job = job
	r.m.broker.publish(Event{Type: EventJobStageChanged, JobID: job.ID, Stage: stage})
	r.m.broker.publish(CountersEvent(job))
	return nil
}

// poll refreshes the job from the store: it publishes job_counters when
// the counters move, and stops the run if the job stopped running (a
// change made elsewhere: by an admin request on this instance or another)
// or was claimed again (the lease was lost).
func (r *run) poll(ctx context.Context) {
	var last storage.BackfillJob
	t := time.NewTicker(r.m.cfg.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		job, err := r.m.cfg.Store.GetBackfillJob(ctx, r.id)
		if err != nil {
			continue
		}
		if job.LeaseToken != r.lease.Token {
			r.act.lose()
		}
		if job.Status != storage.BackfillRunning {
			r.act.signal()
		}
		if counters(job) != counters(last) {
			r.m.broker.publish(CountersEvent(job))
			last = job
		}
	}
}

// keepLease renews the job's lease every third of its duration until ctx
// ends, and stops the run when the lease was lost (the job was claimed
// again). A renewal that fails otherwise (the database unreachable) is
// tried again at the next tick: should the lease run out meanwhile and
// another instance claim the job, the run's next progress write fails
// with storage.ErrLeaseLost and stops it.
func (r *run) keepLease(ctx context.Context) {
	ttl := r.m.cfg.LeaseDuration
	t := time.NewTicker(max(ttl/3, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := r.m.cfg.Store.RenewBackfillLease(ctx, r.lease, ttl)
		switch {
		case errors.Is(err, storage.ErrLeaseLost):
			r.act.lose()
			return
		case err != nil && ctx.Err() == nil:
			r.log.Warn("backfill: renewing the job's lease failed", "err", err)
		}
	}
}

func counters(j storage.BackfillJob) [7]any {
	v := func(p *int64) int64 {
		if p == nil {
			return -1
		}
		return *p
	}
	return [7]any{j.Status, j.Stage, v(j.TotalRepos), v(j.ResolvedRepos), v(j.ProcessedRepos), v(j.TotalRecords), v(j.FailedRepos)}
}

// discovery is the resumable position of network discovery, stored as
// the job's relay cursor.
type discovery struct {
	Method     string `json:"method"`
	Collection string `json:"collection,omitempty"`
	Cursor     string `json:"cursor,omitempty"`
}

const (
	methodByCollection = "com.atproto.sync.listReposByCollection"
	methodListRepos    = "com.atproto.sync.listRepos"
)

// discover records the job's repositories.
func (r *run) discover(ctx context.Context) error {
	if r.job.Scope == storage.ScopeDIDs {
		if _, err := r.m.cfg.Store.AddBackfillRepos(ctx, r.lease, r.job.DIDs, ""); err != nil {
			return fmt.Errorf("record repositories: %w", err)
		}
		r.published(r.job.DIDs)
		return nil
	}
	if r.m.cfg.RelayURL == "" {
		return errors.New("no relay configured (RELAY_URL)")
	}
	var st discovery
	if r.job.RelayCursor != "" {
		_ = json.Unmarshal([]byte(r.job.RelayCursor), &st)
	}
	if st.Method == methodListRepos {
		return r.discoverPages(ctx, st)
	}
	start := max(slices.Index(r.collections, st.Collection), 0)
	if start == 0 && st.Collection != r.collections[0] {
		st.Cursor = ""
	}
	for i := start; i < len(r.collections); i++ {
		st = discovery{Method: methodByCollection, Collection: r.collections[i], Cursor: st.Cursor}
		if i > start {
			st.Cursor = ""
		}
		err := r.discoverPages(ctx, st)
		if notImplemented(err) {
			r.log.Info("backfill: the relay does not offer listReposByCollection; listing every repository instead", "err", err)
			return r.discoverPages(ctx, discovery{Method: methodListRepos})
		}
		if err != nil {
			return err
		}
	}
	return nil
}

type repoList struct {
	Cursor string `json:"cursor"`
	Repos  []struct {
		DID    string `json:"did"`
		Active *bool  `json:"active"`
	} `json:"repos"`
}

// discoverPages pages through one relay listing from st, storing each page
// with the position after it.
func (r *run) discoverPages(ctx context.Context, st discovery) error {
	for {
		if err := r.checkpoint(ctx); err != nil {
			return err
		}
		params := url.Values{"limit": {strconv.Itoa(r.m.cfg.DiscoveryPageSize)}}
		if st.Method == methodByCollection {
			params.Set("collection", st.Collection)
		}
		if st.Cursor != "" {
			params.Set("cursor", st.Cursor)
		}
		var page repoList
		if err := r.m.http.get(ctx, r.m.cfg.RelayURL, st.Method, params, &page); err != nil {
			if ctx.Err() != nil || notImplemented(err) {
				return err
			}
			return fmt.Errorf("discover repositories: %w", err)
		}
		dids := make([]string, 0, len(page.Repos))
		for _, repo := range page.Repos {
			if repo.DID != "" && (repo.Active == nil || *repo.Active) {
				dids = append(dids, repo.DID)
			}
		}
		last := page.Cursor == "" || len(page.Repos) == 0 || page.Cursor == st.Cursor
		next := st
		next.Cursor = page.Cursor
		if last && st.Method == methodByCollection {
			next.Cursor = ""
			if i := slices.Index(r.collections, st.Collection); i+1 < len(r.collections) {
				next.Collection = r.collections[i+1]
			}
		}
		raw, _ := json.Marshal(next)
		if _, err := r.m.cfg.Store.AddBackfillRepos(ctx, r.lease, dids, string(raw)); err != nil {
			return fmt.Errorf("record repositories: %w", err)
		}
		r.published(dids)
		if last {
			return nil
		}
		st.Cursor = page.Cursor
	}
}

func (r *run) published(dids []string) {
	for _, did := range dids {
		r.m.broker.publish(Event{Type: EventRepoDiscovered, JobID: r.id, DID: did})
	}
}

// repoBatch is how many pending repositories are read from the store at
// a time.
const repoBatch = 256

// fetchAll resolves and fetches every repository not yet done, with
// bounded concurrency overall and per PDS host (dispatch.go).
func (r *run) fetchAll(ctx context.Context) error { return r.dispatch(ctx) }
