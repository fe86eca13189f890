// Package indexer is Lexview's one batch writer. Live ingestion, backfill
// and procedures hand it record changes; it validates them against their
// lexicons, groups them into batches by size and time, and commits each
// batch (with the event-stream cursor that produced it) in one transaction.
// Its queue is bounded: a producer that outruns the database waits.
//
// A Writer has a lifecycle: it accepts changes only between Start and
// Stop. Before Start every submission fails at once with ErrNotStarted;
// once Stop has begun, with ErrStopped. Stop commits what was queued
// before it returns.
package indexer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/lexview/lexview/appview/internal/core/metrics"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
)

// Store is what the writer commits to.
type Store interface {
	ApplyBatch(ctx context.Context, b storage.Batch) error
}

// Snapshotter hands out the current lexicon snapshot.
type Snapshotter interface {
	Snapshot() *lexicon.Snapshot
}

// Hook runs record-event scripts on changes before they are written.
type Hook interface {
	// Wants reports, cheaply, whether a change has a script to run.
	Wants(c storage.Change) bool
	// Apply runs the scripts of changes, rewriting their records in
	// place, and reports per change what to do with it (Outcome): write
	// it, skip it (its script said so), or not write it because its
	// script failed, the failure stored (a pending retry or a dead
	// letter) before Apply returns. An error means a failure could not be
	// made durable; the writer retries.
	Apply(ctx context.Context, changes []storage.Change) ([]Outcome, error)
}

// Outcome is what a Hook decided for one change. The zero Outcome writes
// it.
type Outcome struct {
	// Skip: a script chose not to write the change.
	Skip bool
	// Err: the change's script failed, so it is not written; the failure
	// is stored for a retry or as a dead letter.
	Err error
}

// Written reports whether the change is written.
func (o Outcome) Written() bool { return !o.Skip && o.Err == nil }

// Options configure a Writer. Store and Lexicons are required; the
// tuning fields at zero take the defaults.
type Options struct {
	// Store is where batches are committed.
	Store Store
	// Lexicons hands out the current lexicon snapshot, which says which
	// changes are wanted and validates their records.
	Lexicons Snapshotter

	MaxBatch  int           // changes per transaction; default 1000
	MaxDelay  time.Duration // longest wait to fill a batch; default 100ms
	QueueSize int           // submissions waiting before producers block; default 4000
	// BulkQueueSize bounds the bulk submissions (WriteBulk) waiting;
	// default 8.
	BulkQueueSize int
	// BulkWriters is how many batches of bulk work may be committed at
	// once, in batches of their own, beside the batch of live changes
	// being committed (lanes.go); batches committed together never share
	// a record URI. 0, the default, commits one batch at a time, live and
	// bulk changes sharing batches: what a database with one writer
	// (SQLite) can do.
	BulkWriters int
	// BulkMaxBatch is the size of the bulk batches when BulkWriters is
	// above zero; default MaxBatch.
	BulkMaxBatch int
	RetryDelay   time.Duration // first wait after a failed commit; default 100ms
	// Validation returns a collection's validation mode: what the writer
	// does with a record its lexicon refuses (ModeReject, ModeFlag,
	// ModeHide), or ModeOff for no lexicon validation. Nil rejects
	// every invalid record.
	Validation func(collection string) Mode
	// Hook runs record-event scripts; nil runs none.
	Hook Hook
	// Fence reports whether this instance leads, and the lease its event
	// sources' writes are conditional on (storage.Batch.Fence; nil for
	// none). A submission carrying a stream cursor fails with ErrFenced
	// when made while the instance does not lead, or when the lease it
	// was made under was taken by the time it is committed. Nil: always
	// leading, unfenced.
	Fence   func() (lease *storage.Lease, leading bool)
	Metrics *metrics.Metrics
	Logger  *slog.Logger
	Now     func() time.Time
}

// Writer is the batch writer. Create it with New, then Start and Stop it.
type Writer struct {
	store    Store
	lexicons Snapshotter
	opt      Options
	queue    chan *item // live submissions: Submit, Write
	bulk     chan *item // bulk submissions (WriteBulk), batched after live ones

	// gate orders submissions against the lifecycle: submitters hold it
	// for reading while they check the state and enqueue; the writer takes
	// it for writing to mark itself stopped before its final drain, so
	// nothing is enqueued after the drain began.
	gate     sync.RWMutex
	state    state
	stopping chan struct{} // closed when the writer stops accepting
	stopOnce sync.Once
	done     chan struct{} // closed when the final drain is over
	cancel   context.CancelFunc

	mu     sync.Mutex
	claims *claims    // URIs being committed (BulkWriters > 0)
	hookMu sync.Mutex // record-event hooks run for one batch at a time

	rejected map[string]int // rejections per collection since the last report
	logged   map[string]time.Time
	refusals refusalRing // the latest refusals
	stats    Stats
}

// Stats are the writer's running totals.
type Stats struct {
	Queued       int       `json:"queued"`                  // submissions waiting
	Committed    int64     `json:"committed"`               // changes committed since start
	Rejected     int64     `json:"rejected"`                // changes refused by validation since start
	Flagged      int64     `json:"flagged"`                 // invalid records stored with their error (modes flag and hide) since start
	Batches      int64     `json:"batches"`                 // transactions committed since start
	LastCommitAt time.Time `json:"last_commit_at,omitzero"` // zero before the first
}

// Stats returns the running totals.
func (w *Writer) Stats() Stats {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.stats
	st.Queued = len(w.queue) + len(w.bulk)
	return st
}

// item is one submission: changes plus an optional cursor, repository
// states and account states, and a channel closed (after err is set) once
// they are committed.
type item struct {
	source   string
	changes  []storage.Change
	skipped  int         // changes a hook skipped (runHooks)
	failed   []Rejection // changes whose script failed (runHooks)
	cursor   *storage.StreamCursor
	repos    []storage.RepoState
	accounts []storage.AccountState
	fence    *storage.Lease // the lease a source's submission is conditional on
	done     chan struct{}
	err      error
}

// ErrFenced is returned for a submission carrying a stream cursor made
// while this instance does not lead, or under a lease taken since
// (Options.Fence): its event source must stop.
var ErrFenced = errors.New("indexer: not leading; the event source's writes are fenced off")

// ErrNotStarted is returned at once for submissions made before Start.
var ErrNotStarted = errors.New("indexer: writer not started")

// ErrStopped is returned for submissions made once the writer has begun to
// stop (Stop, or the end of Start's context), including those still waiting
// for room in a full queue at that moment.
var ErrStopped = errors.New("indexer: writer stopped")

// state is where a Writer is in its lifecycle.
type state int

const (
	idle    state = iota // not started
	running              // accepting and committing
	stopped              // no longer accepting; the final drain may still run
)

// New returns a Writer; nothing is accepted or written until Start.
func New(opt Options) *Writer {
	if opt.MaxBatch <= 0 {
		opt.MaxBatch = 1000
	}
	if opt.MaxDelay <= 0 {
		opt.MaxDelay = 100 * time.Millisecond
	}
	if opt.QueueSize <= 0 {
		opt.QueueSize = 4_000
	}
	if opt.BulkQueueSize <= 0 {
		opt.BulkQueueSize = 8
	}
	if opt.BulkWriters < 0 {
		opt.BulkWriters = 0
	}
	if opt.BulkMaxBatch <= 0 {
		opt.BulkMaxBatch = opt.MaxBatch
	}
	if opt.RetryDelay <= 0 {
		opt.RetryDelay = 100 * time.Millisecond
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	// The queue holds submissions; bound it so that at most about
	// QueueSize changes wait (submissions are usually one change).
	return &Writer{
		store: opt.Store, lexicons: opt.Lexicons, opt: opt,
		queue: make(chan *item, opt.QueueSize), bulk: make(chan *item, opt.BulkQueueSize),
		stopping: make(chan struct{}), done: make(chan struct{}), claims: newClaims(),
		rejected: map[string]int{}, logged: map[string]time.Time{},
	}
}

// Start starts committing in the background. The writer accepts changes
// from the moment Start returns until Stop is called or ctx ends. A Writer
// starts once: Start after Start or Stop fails.
func (w *Writer) Start(ctx context.Context) error {
	w.gate.Lock()
	defer w.gate.Unlock()
	switch w.state {
	case running:
		return errors.New("indexer: writer already started")
	case stopped:
		return ErrStopped
	}
	w.state = running
	ctx, w.cancel = context.WithCancel(ctx)
	go w.run(ctx)
	return nil
}

// Stop stops accepting changes, commits what is queued and returns once
// that is done. If ctx ends first it returns an error wrapping ctx.Err():
// the writer is then still committing in the background (bounded by its
// own drain deadline), so the store must stay open. Stop may be called
// again to wait longer; on a writer never started it only makes later
// submissions fail with ErrStopped.
func (w *Writer) Stop(ctx context.Context) error {
	if prev := w.stopAccepting(); prev == idle {
		close(w.done) // nothing ever ran
	} else if prev == running {
		w.cancel()
	}
	select {
	case <-w.done:
		return nil
	default:
	}
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("indexer: the writer is still committing queued changes: %w", ctx.Err())
	}
}

// stopAccepting makes every later submission fail with ErrStopped and
// returns the state before. Submitters waiting for room give up; once the
// gate is held, nobody is between the state check and the queue, so what
// is queued now is all the final drain has to commit.
func (w *Writer) stopAccepting() state {
	w.stopOnce.Do(func() { close(w.stopping) })
	w.gate.Lock()
	defer w.gate.Unlock()
	prev := w.state
	w.state = stopped
	return prev
}

// enqueue puts it on queue unless the writer is not running; it waits for
// room while the queue is full.
func (w *Writer) enqueue(ctx context.Context, queue chan<- *item, it *item) error {
	w.gate.RLock()
	defer w.gate.RUnlock()
	if err := w.stateErr(); err != nil {
		return err
	}
	select {
	case queue <- it:
		return nil
	case <-w.stopping:
		return ErrStopped
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Result reports what happened to a submission's changes.
type Result struct {
	// Accepted counts the changes validation let through.
	Accepted int
	// Rejected lists the changes validation refused.
	Rejected []Rejection
	// Flagged lists, among the Accepted, the records their lexicon
	// refuses that are stored with that error (the validation modes flag
	// and hide), with the error.
	Flagged []Rejection
	// Of the Accepted, once committed (Write, WriteBulk and Remove wait
	// for it; Submit leaves these empty): Skipped counts the changes a
	// record-event script or hook chose not to write, and ScriptFailed
	// lists those whose script failed (not written: stored for a retry,
	// then as a dead letter), with the script's error.
	Skipped      int
	ScriptFailed []Rejection
}

// Rejection is a change that is not written, and why.
type Rejection struct {
	URI string
	Err error
}

// Submit validates changes and queues the valid ones, with cursor, for the
// next batch. It blocks while the queue is full and returns without
// waiting for the commit. Invalid changes are reported, logged and
// counted; they never reach the index.
func (w *Writer) Submit(ctx context.Context, source string, changes []storage.Change, cursor *storage.StreamCursor) (Result, error) {
	return w.SubmitCommit(ctx, source, changes, nil, cursor)
}

// SubmitCommit is Submit for a verified event source: the repository
// states (storage.RepoState) its commits reached are stored in the same
// transaction as the changes and the cursor, even when every change was
// invalid or there were none.
func (w *Writer) SubmitCommit(ctx context.Context, source string, changes []storage.Change, repos []storage.RepoState,
	cursor *storage.StreamCursor) (Result, error) {
	_, res, err := w.submit(ctx, source, changes, repos, cursor)
	return res, err
}

// MarkPosition stores a stream position of source and returns once it is
// committed: for a source starting from live, whose starting point must
// be durable before it reads anything. It is fenced like a submission
// (Options.Fence).
func (w *Writer) MarkPosition(ctx context.Context, source string, cursor storage.StreamCursor) error {
	it, _, err := w.submit(ctx, source, nil, nil, &cursor)
	if err != nil || it == nil {
		return err
	}
	select {
	case <-it.done:
		return it.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// submit validates and queues a submission, returning its item (nil when
// there was nothing to queue).
func (w *Writer) submit(ctx context.Context, source string, changes []storage.Change, repos []storage.RepoState,
	cursor *storage.StreamCursor) (*item, Result, error) {
	if err := w.accepting(); err != nil {
		return nil, Result{}, err
	}
	var fence *storage.Lease
	if cursor != nil && w.opt.Fence != nil {
		var leading bool
		if fence, leading = w.opt.Fence(); !leading {
			return nil, Result{}, ErrFenced
		}
	}
	it, res := w.prepare(source, changes, cursor, w.validate)
	if it == nil && len(repos) > 0 {
		it = &item{source: source, done: make(chan struct{})}
	}
	if it == nil {
		return nil, res, nil
	}
	it.repos, it.fence = repos, fence
	if err := w.enqueue(ctx, w.queue, it); err != nil {
		return nil, res, err
	}
	w.opt.Metrics.Queue(len(w.queue))
	return it, res, nil
}

// accepting reports, without waiting, why the writer takes no changes
// now (nil while it is running). Submissions check it before validating,
// so that a writer that cannot take them neither counts nor rejects them.
func (w *Writer) accepting() error {
	w.gate.RLock()
	defer w.gate.RUnlock()
	return w.stateErr()
}

// stateErr is why the writer takes no changes in its state (nil while it
// is running); the caller holds gate.
func (w *Writer) stateErr() error {
	switch w.state {
	case idle:
		return ErrNotStarted
	case stopped:
		return ErrStopped
	}
	return nil
}

// Write is Submit that waits until the changes are committed.
func (w *Writer) Write(ctx context.Context, source string, changes []storage.Change) (Result, error) {
	return w.write(ctx, w.queue, source, changes, w.validate)
}

// WriteBulk is Write for bulk work (backfill): its submissions wait in a
// short queue of their own and fill batches after live changes, so that a
// running backfill adds at most about one batch to live ingestion's lag.
func (w *Writer) WriteBulk(ctx context.Context, source string, changes []storage.Change) (Result, error) {
	return w.write(ctx, w.bulk, source, changes, w.validate)
}

// Remove is Write for an operator's removal of indexed records: every
// change must be a delete (storage.OpDelete), and, unlike Write, its
// collection needs no record lexicon, so that whatever is indexed can be
// removed whatever lexicons remain. Identifiers are checked as for every
// change; record-event hooks run, and the metrics count the changes under
// source, like any other submission. Like every submission without a
// stream cursor it is not fenced (Options.Fence): any instance may
// commit it.
func (w *Writer) Remove(ctx context.Context, source string, changes []storage.Change) (Result, error) {
	return w.write(ctx, w.queue, source, changes, validateRemoval)
}

func (w *Writer) write(ctx context.Context, queue chan<- *item, source string, changes []storage.Change, valid check) (Result, error) {
	if err := w.accepting(); err != nil {
		return Result{}, err
	}
	it, res := w.prepare(source, changes, nil, valid)
	if it == nil {
		return res, nil
	}
	if err := w.enqueue(ctx, queue, it); err != nil {
		return res, err
	}
	// Once queued, the change is committed even if the writer stops: the
	// final drain takes everything queued.
	select {
	case <-it.done:
		res.Skipped, res.ScriptFailed = it.skipped, it.failed
		return res, it.err
	case <-ctx.Done():
		return res, ctx.Err()
	}
}

// run commits queued changes until ctx ends, then stops accepting, commits
// what is still queued (with a fresh deadline of drainTimeout) and closes
// done.
func (w *Writer) run(ctx context.Context) {
	defer close(w.done)
	if w.opt.BulkWriters > 0 {
		w.runLanes(ctx)
		w.stopAccepting()
		w.drain()
		return
	}
	for {
		it := w.next(ctx.Done(), nil)
		if it == nil {
			break
		}
		w.commit(ctx, w.collect(ctx, it))
	}
	w.stopAccepting()
	w.drain()
}

// next returns the next submission, live ones first, waiting until one
// comes or stop or timeout fires (then nil).
func (w *Writer) next(stop <-chan struct{}, timeout <-chan time.Time) *item {
	select {
	case it := <-w.queue:
		return it
	default:
	}
	select {
	case it := <-w.queue:
		return it
	case it := <-w.bulk:
		return it
	case <-stop:
	case <-timeout:
	}
	return nil
}

// drainTimeout bounds the final flush at shutdown.
const drainTimeout = 30 * time.Second

func (w *Writer) drain() {
	ctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	for {
		var it *item
		select {
		case it = <-w.queue:
		default:
			select {
			case it = <-w.bulk:
			default:
				return
			}
		}
		w.commit(ctx, w.collect(ctx, it))
	}
}

// collect gathers submissions into one batch, starting with first, until
// the batch is full or MaxDelay has passed. Live submissions waiting are
// always taken before bulk ones.
func (w *Writer) collect(ctx context.Context, first *item) []*item {
	items := []*item{first}
	n := len(first.changes)
	timer := time.NewTimer(w.opt.MaxDelay)
	defer timer.Stop()
	for n < w.opt.MaxBatch {
		it := w.next(ctx.Done(), timer.C)
		if it == nil {
			break
		}
		items = append(items, it)
		n += len(it.changes)
	}
	return items
}

// commit writes a batch, retrying with backoff until it succeeds or the
// drain deadline passes: queued changes are never dropped while Lexview
// runs. Submissions of event sources are fenced by the lease they were
// made under (Options.Fence): when it was taken by another instance since,
// they fail with ErrFenced (their cursor is not stored either, so the new
// leader reads their events again) and the rest of the batch is written
// without them.
func (w *Writer) commit(ctx context.Context, items []*item) {
	w.runHooks(ctx, items)
	b, oldest := batchOf(items)
	start := time.Now()
	err := w.retry(ctx, "committing a batch", len(b.Ops), func() error {
		err := w.store.ApplyBatch(context.WithoutCancel(ctx), b)
		if errors.Is(err, storage.ErrFenced) {
			// Deposed: what came from the sources is not written; the
			// rest is, at once.
			items = w.refuseFenced(items)
			b, oldest = batchOf(items)
			err = w.store.ApplyBatch(context.WithoutCancel(ctx), b)
		}
		return err
	})
	if err == nil {
		w.committed(items, b, oldest, time.Since(start))
	}
	w.opt.Metrics.Queue(len(w.queue) + len(w.bulk))
	for _, it := range items {
		it.err = err
		close(it.done)
	}
}

// refuseFenced fails the fenced submissions of items with ErrFenced and
// returns the others.
func (w *Writer) refuseFenced(items []*item) []*item {
	kept := items[:0:0]
	for _, it := range items {
		if it.fence == nil {
			kept = append(kept, it)
			continue
		}
		it.err = ErrFenced
		close(it.done)
	}
	if n := len(items) - len(kept); n > 0 {
		w.opt.Logger.Warn("the leader's lease was taken: submissions of event sources refused", "submissions", n)
	}
	return kept
}

// batchOf assembles the batch of items, fenced by the lease of its fenced
// submissions, and the arrival of each source's oldest change.
func batchOf(items []*item) (storage.Batch, map[string]time.Time) {
	var b storage.Batch
	var cursors streamCursors
	oldest := map[string]time.Time{} // per source
	repoAt := map[string]int{}       // index in b.Repos by DID: the later state wins
	for _, it := range items {
		for _, r := range it.repos {
			if i, ok := repoAt[r.DID]; ok {
				b.Repos[i] = r
				continue
			}
			repoAt[r.DID] = len(b.Repos)
			b.Repos = append(b.Repos, r)
		}
		b.Accounts = append(b.Accounts, it.accounts...)
		for _, c := range it.changes {
			rec := storage.Record{
				URI: c.URI(), DID: c.DID, Collection: c.Collection, RKey: c.RKey, CID: c.CID, Rev: c.Rev, Value: c.Record,
				Invalid: c.Invalid,
			}
			b.Ops = append(b.Ops, storage.RecordOp{Delete: c.Op == storage.OpDelete, Record: rec})
			if t, ok := oldest[it.source]; !ok || c.Received.Before(t) {
				oldest[it.source] = c.Received
			}
		}
		if it.cursor != nil {
			cursors.set(*it.cursor)
		}
		if it.fence != nil && (b.Fence == nil || it.fence.Token < b.Fence.Token) {
			b.Fence = it.fence // the oldest lease: if it was taken, every fenced one fails
		}
	}
	b.Cursors = cursors
	return b, oldest
}

// committed updates the metrics and totals after batch b of items was
// written in took.
func (w *Writer) committed(items []*item, b storage.Batch, oldest map[string]time.Time, took time.Duration) {
	w.opt.Metrics.Committed(len(b.Ops), took)
	now := w.opt.Now()
	for source, t := range oldest {
		w.opt.Metrics.Lag(source, now.Sub(t))
	}
	w.mu.Lock()
	w.stats.Committed += int64(len(b.Ops))
	w.stats.Batches++
	w.stats.LastCommitAt = w.opt.Now()
	w.mu.Unlock()
	type key struct{ source, collection string }
	indexed := map[key]int{}
	for _, it := range items {
		for _, c := range it.changes {
			indexed[key{it.source, c.Collection}]++
		}
	}
	for k, n := range indexed {
		w.opt.Metrics.Indexed(k.source, k.collection, n)
	}
}

// retry calls fn until it succeeds, with backoff; once ctx has ended it
// gives up after a few attempts.
func (w *Writer) retry(ctx context.Context, what string, changes int, fn func() error) error {
	delay := w.opt.RetryDelay
	for attempt := 1; ; attempt++ {
		err := fn()
		if err == nil {
			return nil
		}
		w.opt.Logger.Error(what+" failed; retrying", "changes", changes, "attempt", attempt, "err", err)
		if ctx.Err() != nil && attempt >= 3 {
			return err // shutting down: give up after a few tries
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
		}
		delay = min(delay*2, 5*time.Second)
	}
}

// runHooks replaces each item's changes with what the record-event
// scripts made of them. It retries until the outcome is durable; when it
// cannot be (shutting down), the changes are written as they came, so
// nothing acknowledged is lost.
func (w *Writer) runHooks(ctx context.Context, items []*item) {
	h := w.opt.Hook
	if h == nil {
		return
	}
	// Hooks never run for two batches at once (RecordHook promises it).
	w.hookMu.Lock()
	defer w.hookMu.Unlock()
	// One Apply for the whole batch, so scripts run concurrently across
	// submissions.
	var all []storage.Change
	hooked := make([]bool, len(items))
	for n, it := range items {
		if slices.ContainsFunc(it.changes, h.Wants) {
			hooked[n] = true
			all = append(all, it.changes...)
		}
	}
	if len(all) == 0 {
		return
	}
	var outcomes []Outcome
	err := w.retry(ctx, "running record-event scripts", len(all), func() error {
		var err error
		outcomes, err = h.Apply(context.WithoutCancel(ctx), all)
		return err
	})
	if err != nil {
		return
	}
	i := 0
	for n, it := range items {
		if !hooked[n] {
			continue
		}
		out := it.changes[:0]
		for range it.changes {
			switch o := outcomes[i]; {
			case o.Written():
				out = append(out, all[i])
			case o.Err != nil:
				it.failed = append(it.failed, Rejection{URI: all[i].URI(), Err: o.Err})
			default:
				it.skipped++
			}
			i++
		}
		it.changes = out
	}
}

// streamCursors holds the last position of each stream in a batch. Items
// of one stream are in stream order, so its last cursor wins; streams
// (sources) are independent and each keeps its own.
type streamCursors []storage.StreamCursor

func (cs *streamCursors) set(c storage.StreamCursor) {
	for i := range *cs {
		if (*cs)[i].Name == c.Name {
			(*cs)[i].Value = c.Value
			return
		}
	}
	*cs = append(*cs, c)
}
