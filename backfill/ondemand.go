package backfill

import (
	"container/list"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bluesky-social/indigo/atproto/syntax"
)

// On-demand backfill of one account. When an account signs in (a device
// session, the dashboard, a linked repository), when an operator asks,
// or, with SettingOnDemandQueries on, when a default query finds nothing
// of an account, its repository is fetched at once for every record
// collection: not as a job (jobs run one at a time across the instances,
// and a network job may hold the worker for hours) but in a small lane
// beside the job worker, at most OnDemandOptions.Concurrency fetches at a
// time. A repository is fetched as a job's is (fetchRepo: a verified CAR
// export, or a listing where the PDS refuses getRepo or the instance is
// set to list) and its records are written through the same batch writer,
// carrying the repository's revision: the store's revision rule orders
// them with the live events of the account, which therefore need no
// buffering (a live event newer than the fetch wins whether it is written
// before or after it; an older one loses).
//
// The lane is in memory: requests waiting or running when the process
// stops are lost (the account is fetched at its next sign-in, or by an
// operator), and two instances may each fetch the same account once (the
// revision rule makes that harmless). Each DID is queued at most once at
// a time, and a DID fetched (or tried) within OnDemandOptions.Interval is
// not fetched again; the DIDs remembered for that are bounded
// (OnDemandOptions.Remember, oldest forgotten first).

// What asked for an on-demand fetch (the event log's and the metrics'
// trigger).
const (
	TriggerOAuthSession = "oauth_session" // an app registered a device session
	TriggerSignIn       = "sign_in"       // a dashboard sign-in
	TriggerLinkedRepo   = "linked_repo"   // a linked repository was authorized
	TriggerOperator     = "operator"      // POST /admin/backfill/accounts/{did}
	TriggerQuery        = "query"         // a default query found nothing of the account
)

// What became of an on-demand request (OnDemandAnswer.Status).
const (
	// OnDemandQueued: queued now; it starts as soon as a slot of the lane
	// is free.
	OnDemandQueued = "queued"
	// OnDemandPending: already queued or being fetched; not queued again.
	OnDemandPending = "pending"
	// OnDemandRecent: fetched or tried within the interval (for the query
	// trigger: fetched at all, as far as the lane remembers); not fetched
	// again.
	OnDemandRecent = "recent"
	// OnDemandFull: the lane's queue is full; the request is dropped.
	OnDemandFull = "full"
	// OnDemandNothing: the instance has no record lexicon, so nothing of
	// the account is wanted; nothing is queued.
	OnDemandNothing = "nothing_wanted"
)

// The outcomes of an on-demand fetch (the event log's outcome).
const (
	OnDemandFetched = "fetched"
	OnDemandFailed  = "failed"
)

// SettingOnDemandQueries turns on the query trigger: "true" makes a
// default list query filtered by an account (its first page) or a default
// get that finds nothing ask for the account's repository. Off unless
// "true".
const SettingOnDemandQueries = "backfill.on_demand_queries"

// OnDemandOptions bound the on-demand lane (Options.OnDemand).
type OnDemandOptions struct {
	// Concurrency is how many accounts are fetched at once; default 2.
	Concurrency int
	// Interval is how long after a fetch (or a failed try) an account is
	// not fetched again; default 10 minutes.
	Interval time.Duration
	// Remember bounds the accounts remembered after their fetch, for
	// Interval and the query trigger; default 10,000.
	Remember int
	// Queue bounds the requests waiting; default 1,000. Requests of the
	// query trigger fill at most half of it, so that queries cannot crowd
	// out sign-ins.
	Queue int
}

// Defaults of OnDemandOptions.
const (
	DefaultOnDemandConcurrency = 2
	DefaultOnDemandInterval    = 10 * time.Minute
	DefaultOnDemandRemember    = 10_000
	DefaultOnDemandQueue       = 1_000
)

func (o *OnDemandOptions) defaults() {
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultOnDemandConcurrency
	}
	if o.Interval <= 0 {
		o.Interval = DefaultOnDemandInterval
	}
	if o.Remember <= 0 {
		o.Remember = DefaultOnDemandRemember
	}
	if o.Queue <= 0 {
		o.Queue = DefaultOnDemandQueue
	}
}

// OnDemandMetrics counts on-demand requests; Options.Metrics may
// implement it. outcome is a fetch's (OnDemandFetched, OnDemandFailed) or
// a request's that fetched nothing (OnDemandPending, OnDemandRecent,
// OnDemandFull, OnDemandNothing).
type OnDemandMetrics interface {
	BackfillOnDemand(trigger, outcome string, records int64)
}

// OnDemandAnswer is what became of a request for an account's repository.
type OnDemandAnswer struct {
	DID    string
	Status string // OnDemandQueued, OnDemandPending, OnDemandRecent, OnDemandFull or OnDemandNothing
	// LastFetch is when the account's last fetch ended, for
	// OnDemandRecent; Again is when it may be fetched again.
	LastFetch, Again time.Time
}

// onDemand is the lane: the requests waiting, the accounts being fetched,
// and the accounts fetched lately.
type onDemand struct {
	opt     OnDemandOptions
	queries atomic.Bool                            // SettingOnDemandQueries
	fetch   func(ctx context.Context, r odRequest) // fetches one account, then calls finish

	mu        sync.Mutex
	base      context.Context // Run's; nil until Run starts the lane
	high, low []*odEntry      // waiting: sign-ins and operators first, then queries
	running   int
	busy      map[string]*odEntry      // queued or being fetched
	done      map[string]*list.Element // of recent
	recent    *list.List               // *odDone, oldest first
}

type odRequest struct{ did, trigger, actor string }

// odEntry is a request in the lane: waiting, then being fetched.
type odEntry struct {
	req             odRequest
	queued, started time.Time // started is zero while waiting
}

type odDone struct {
	did string
	at  time.Time
	ok  bool
}

func newOnDemand(opt OnDemandOptions, fetch func(context.Context, odRequest)) *onDemand {
	opt.defaults()
	return &onDemand{opt: opt, fetch: fetch, busy: map[string]*odEntry{}, done: map[string]*list.Element{}, recent: list.New()}
}

// OnDemandQueries reports whether the query trigger is on: one atomic
// load.
func (m *Manager) OnDemandQueries() bool { return m.od.queries.Load() }

// SetOnDemandQueries turns the query trigger (SettingOnDemandQueries) on
// or off.
func (m *Manager) SetOnDemandQueries(on bool) { m.od.queries.Store(on) }

// AccountQueried is the query trigger: a default query found nothing of
// did. With SettingOnDemandQueries on, the account is fetched unless the
// lane remembers fetching it, or it is waiting or being fetched. Off, it
// costs one atomic load; on, a map lookup under a lock. It never waits.
// The answer's Status is "" when the trigger is off or did is not a DID.
func (m *Manager) AccountQueried(did string) OnDemandAnswer {
	if !m.od.queries.Load() {
		return OnDemandAnswer{DID: did}
	}
	if _, err := syntax.ParseDID(did); err != nil {
		return OnDemandAnswer{DID: did}
	}
	return m.fetchAccount(odRequest{did: did, trigger: TriggerQuery})
}

// FetchAccount asks for did's repository to be fetched now, beside the
// jobs, for every record collection (see the top of ondemand.go). It
// never waits for the fetch, whose outcome goes to the event log
// (backfill.on_demand, with actor as its actor: the operator who asked,
// or "") and the metrics. A did that is not a DID is a *RequestError.
func (m *Manager) FetchAccount(did, trigger, actor string) (OnDemandAnswer, error) {
	if _, err := syntax.ParseDID(did); err != nil {
		return OnDemandAnswer{}, &RequestError{Message: "invalid DID: " + did}
	}
	return m.fetchAccount(odRequest{did, trigger, actor}), nil
}

// RequestAccount is an operator's request (TriggerOperator, actor the
// operator's DID): account is a DID or a handle, resolved first as
// Create resolves accounts; one that does not resolve to a DID whose
// document names a PDS is a *RequestError.
func (m *Manager) RequestAccount(ctx context.Context, account, actor string) (OnDemandAnswer, error) {
	account = strings.TrimSpace(account)
	if account == "" {
		return OnDemandAnswer{}, &RequestError{Message: "an account (a DID or a handle) is required"}
	}
	did, err := resolveAccount(ctx, m.cfg.Directory, account)
	if err != nil {
		return OnDemandAnswer{}, &RequestError{Message: "unresolvable account: " + account, Unresolvable: []string{account}}
	}
	return m.FetchAccount(did, TriggerOperator, actor)
}

func (m *Manager) fetchAccount(r odRequest) OnDemandAnswer {
	did, trigger := r.did, r.trigger
	a := OnDemandAnswer{DID: did, Status: OnDemandNothing}
	if len(m.cfg.Lexicons.Snapshot().RecordCollections()) > 0 {
		a = m.od.request(r, m.cfg.Now())
	}
	if a.Status != OnDemandQueued {
		m.countOnDemand(trigger, a.Status, 0)
		if a.Status == OnDemandFull {
			m.cfg.Logger.Warn("backfill: the on-demand queue is full; request dropped", "did", did, "trigger", trigger)
		}
	}
	return a
}

// request queues did unless it is busy, was fetched lately, or the queue
// is full, and starts what the free slots allow.
func (od *onDemand) request(r odRequest, now time.Time) OnDemandAnswer {
	did, trigger := r.did, r.trigger
	a := OnDemandAnswer{DID: did}
	od.mu.Lock()
	defer od.mu.Unlock()
	if od.busy[did] != nil {
		a.Status = OnDemandPending
		return a
	}
	if e, ok := od.done[did]; ok {
		d := e.Value.(*odDone)
		if again := d.at.Add(od.opt.Interval); now.Before(again) || (trigger == TriggerQuery && d.ok) {
			a.Status, a.LastFetch, a.Again = OnDemandRecent, d.at, again
			return a
		}
	}
	limit := od.opt.Queue
	if trigger == TriggerQuery {
		limit /= 2
	}
	if len(od.high)+len(od.low) >= limit {
		a.Status = OnDemandFull
		return a
	}
	e := &odEntry{req: r, queued: now}
	if trigger == TriggerQuery {
		od.low = append(od.low, e)
	} else {
		od.high = append(od.high, e)
	}
	od.busy[did] = e
	a.Status = OnDemandQueued
	od.startLocked(now)
	return a
}

// startLocked starts waiting requests while slots are free (once Run
// started the lane). The caller holds mu.
func (od *onDemand) startLocked(now time.Time) {
	for od.base != nil && od.base.Err() == nil && od.running < od.opt.Concurrency {
		var e *odEntry
		switch {
		case len(od.high) > 0:
			e, od.high = od.high[0], od.high[1:]
		case len(od.low) > 0:
			e, od.low = od.low[0], od.low[1:]
		default:
			return
		}
		od.running++
		e.started = now
		go od.fetch(od.base, e.req)
	}
}

// finish records the end of did's fetch (ok: it was fetched) and starts
// the next request.
func (od *onDemand) finish(did string, at time.Time, ok, remember bool) {
	od.mu.Lock()
	defer od.mu.Unlock()
	od.running--
	delete(od.busy, did)
	if remember {
		if e, found := od.done[did]; found {
			od.recent.Remove(e)
		}
		od.done[did] = od.recent.PushBack(&odDone{did: did, at: at, ok: ok})
		for od.recent.Len() > od.opt.Remember {
			oldest := od.recent.Front()
			od.recent.Remove(oldest)
			delete(od.done, oldest.Value.(*odDone).did)
		}
	}
	od.startLocked(at)
}

// OnDemandItem is an account waiting in the on-demand lane or being
// fetched.
type OnDemandItem struct {
	DID, Trigger string
	Actor        string    // the operator who asked, or ""
	Queued       time.Time // when it was asked for
	Started      time.Time // when its fetch started; zero while waiting
}

// OnDemandState is the on-demand lane now.
type OnDemandState struct {
	// Items are the accounts being fetched (oldest first), then those
	// waiting, in the order they will start.
	Items []OnDemandItem
	// Remembered counts the accounts remembered as fetched or tried
	// lately (OnDemandOptions.Remember at most).
	Remembered int
}

// OnDemand describes the on-demand lane of this instance.
func (m *Manager) OnDemand() OnDemandState {
	od := m.od
	od.mu.Lock()
	defer od.mu.Unlock()
	st := OnDemandState{Remembered: od.recent.Len()}
	item := func(e *odEntry) OnDemandItem {
		return OnDemandItem{DID: e.req.did, Trigger: e.req.trigger, Actor: e.req.actor, Queued: e.queued, Started: e.started}
	}
	for _, e := range od.busy {
		if !e.started.IsZero() {
			st.Items = append(st.Items, item(e))
		}
	}
	slices.SortFunc(st.Items, func(a, b OnDemandItem) int { return a.Started.Compare(b.Started) })
	for _, e := range slices.Concat(od.high, od.low) {
		st.Items = append(st.Items, item(e))
	}
	return st
}

// startOnDemand starts the lane with Run's context: requests made before
// start now, and fetches end with ctx. Requests still waiting when ctx
// ends are dropped.
func (m *Manager) startOnDemand(ctx context.Context) {
	od := m.od
	od.mu.Lock()
	defer od.mu.Unlock()
	od.base = ctx
	od.startLocked(m.cfg.Now())
}

// errNothingWanted fails an on-demand fetch on an instance without record
// lexicons.
var errNothingWanted = errors.New("no record lexicons to backfill")

// accountFetch is what one on-demand fetch did.
type accountFetch struct {
	pds    string
	n      counts
	reason string // a failure's reason (reasons.go)
}

// fetchOnDemand fetches one account for the lane, records the outcome
// (event log, metrics) and frees the slot. A fetch cut short by the end
// of Run's context is forgotten: it is neither recorded nor remembered.
func (m *Manager) fetchOnDemand(ctx context.Context, req odRequest) {
	began := time.Now()
	res, err := m.fetchOneAccount(ctx, req.did)
	if ctx.Err() != nil {
		m.od.finish(req.did, m.cfg.Now(), false, false)
		return
	}
	outcome, severity, errMsg := OnDemandFetched, "", ""
	if err != nil {
		outcome, severity, errMsg = OnDemandFailed, "warn", err.Error()
		m.cfg.Logger.Warn("backfill: on-demand fetch failed", "did", req.did, "trigger", req.trigger,
			"pds", res.pds, "reason", res.reason, "err", err)
	} else {
		m.cfg.Logger.Info("backfill: on-demand fetch", "did", req.did, "trigger", req.trigger,
			"records", res.n.fetched, "deleted", res.n.deleted, "method", res.n.method)
	}
	m.countOnDemand(req.trigger, outcome, res.n.fetched)
	// The lane remembers the outcome before the event log shows it, so a
	// reader who saw the entry sees the account as fetched lately.
	m.od.finish(req.did, m.cfg.Now(), err == nil, true)
	m.audit(context.WithoutCancel(ctx), AuditEntry{Type: "backfill.on_demand", Severity: severity, ActorDID: req.actor, Subject: req.did, Detail: map[string]any{
		"trigger": req.trigger, "outcome": outcome, "pds_endpoint": nullable(res.pds), "fetch_method": nullable(res.n.method),
		"records": res.n.fetched, "records_deleted": res.n.deleted, "error": nullable(errMsg),
		"failure_reason": nullable(res.reason), "duration_ms": time.Since(began).Milliseconds(),
	}})
}

// fetchOneAccount resolves did and fetches its records of every record
// collection, as a job's repository is fetched, outside any job.
func (m *Manager) fetchOneAccount(ctx context.Context, did string) (accountFetch, error) {
	var res accountFetch
	r := &run{m: m, id: "on-demand", act: &active{stop: make(chan struct{})}, log: m.cfg.Logger.With("on_demand", did)}
	r.collections = m.cfg.Lexicons.Snapshot().RecordCollections()
	if len(r.collections) == 0 {
		res.reason = ReasonOther
		return res, errNothingWanted
	}
	r.method = r.fetchMethod(ctx)
	pds, err := r.resolve(ctx, did)
	if err != nil {
		res.reason = ReasonUnresolvable
		return res, err
	}
	res.pds = pds
	res.n, err = r.fetchRepo(ctx, did, pds)
	var se *systemicError
	switch {
	case err == nil:
	case errors.As(err, &se):
		res.reason = ReasonOther
	default:
		res.reason = failureReason(err, false)
	}
	return res, err
}

// countOnDemand counts a request's outcome when the metrics take it.
func (m *Manager) countOnDemand(trigger, outcome string, records int64) {
	if om, ok := m.cfg.Metrics.(OnDemandMetrics); ok {
		om.BackfillOnDemand(trigger, outcome, records)
	}
}
