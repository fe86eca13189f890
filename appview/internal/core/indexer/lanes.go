package indexer

import (
	"context"
	"sync"
	"time"
)

// Bulk lanes. With Options.BulkWriters above zero, the writer runs two
// collectors: one batches live submissions and commits each batch in turn
// (so the stream cursors it stores never get ahead of the changes before
// them); the other batches bulk submissions alone and commits up to
// BulkWriters of those batches at once, beside the live one. Batches in
// flight together never share a record URI (see claims), so no two
// transactions write the same row at once and each URI's changes are
// committed in the order they were batched. With BulkWriters at zero the
// writer is the single collector of indexer.go, live and bulk changes
// sharing batches.

// claims are the record URIs of the batches being committed.
type claims struct {
	mu   sync.Mutex
	cond *sync.Cond
	uris map[string]struct{}
}

func newClaims() *claims {
	c := &claims{uris: map[string]struct{}{}}
	c.cond = sync.NewCond(&c.mu)
	return c
}

// claim waits until none of the batch's URIs is claimed, then claims them
// all and returns them, for release. Only the two collectors claim, one
// batch at a time each, and a claimed batch is always released once
// committed, so a claim never waits for ever.
func (c *claims) claim(items []*item) []string {
	seen := make(map[string]struct{}, batchChanges(items))
	uris := make([]string, 0, batchChanges(items))
	for _, it := range items {
		for _, ch := range it.changes {
			u := ch.URI()
			if _, dup := seen[u]; !dup {
				seen[u] = struct{}{}
				uris = append(uris, u)
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.anyClaimed(uris) {
		c.cond.Wait()
	}
	for _, u := range uris {
		c.uris[u] = struct{}{}
	}
	return uris
}

func (c *claims) anyClaimed(uris []string) bool {
	for _, u := range uris {
		if _, ok := c.uris[u]; ok {
			return true
		}
	}
	return false
}

// release gives up the URIs of a committed batch.
func (c *claims) release(uris []string) {
	c.mu.Lock()
	for _, u := range uris {
		delete(c.uris, u)
	}
	c.mu.Unlock()
	c.cond.Broadcast()
}

func batchChanges(items []*item) int {
	n := 0
	for _, it := range items {
		n += len(it.changes)
	}
	return n
}

// runLanes commits live and bulk batches side by side until ctx ends,
// then waits for the bulk batches still being committed.
func (w *Writer) runLanes(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { w.runBulk(ctx) })
	for {
		first := take(w.queue, ctx.Done(), nil)
		if first == nil {
			break
		}
		items := w.collectFrom(ctx, w.queue, first, w.opt.MaxBatch)
		uris := w.claims.claim(items)
		w.commit(ctx, items)
		w.claims.release(uris)
	}
	wg.Wait()
}

// runBulk batches bulk submissions and commits up to BulkWriters batches
// at once, each in its own goroutine; it returns once ctx has ended and
// every batch it started is committed.
func (w *Writer) runBulk(ctx context.Context) {
	slots := make(chan struct{}, w.opt.BulkWriters)
	var inFlight sync.WaitGroup
	defer inFlight.Wait()
	for {
		select { // a free slot first: batches wait in the queue, not here
		case slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		first := take(w.bulk, ctx.Done(), nil)
		if first == nil {
			return
		}
		w.awaitLive(ctx)
		items := w.collectFrom(ctx, w.bulk, first, w.opt.BulkMaxBatch)
		uris := w.claims.claim(items)
		inFlight.Go(func() {
			w.commit(ctx, items)
			w.claims.release(uris)
			<-slots
		})
	}
}

// liveBacklogPoll is how often a bulk batch held back by live changes
// looks again.
const liveBacklogPoll = 5 * time.Millisecond

// awaitLive holds a bulk batch back while live submissions back up (more
// than a tenth of a batch waiting): live changes then have the database
// to themselves until they have caught up, so a backfill adds little to
// live ingestion's lag even on a busy machine. It returns early when ctx
// ends.
func (w *Writer) awaitLive(ctx context.Context) {
	for len(w.queue) > w.opt.MaxBatch/10 {
		select {
		case <-time.After(liveBacklogPoll):
		case <-ctx.Done():
			return
		}
	}
}

// take returns the next submission of queue, or nil once stop or timeout
// fires.
func take(queue <-chan *item, stop <-chan struct{}, timeout <-chan time.Time) *item {
	select {
	case it := <-queue:
		return it
	case <-stop:
	case <-timeout:
	}
	return nil
}

// collectFrom gathers submissions of one queue into a batch, starting with
// first, until it holds maxBatch changes or MaxDelay has passed.
func (w *Writer) collectFrom(ctx context.Context, queue <-chan *item, first *item, maxBatch int) []*item {
	items := []*item{first}
	n := len(first.changes)
	timer := time.NewTimer(w.opt.MaxDelay)
	defer timer.Stop()
	for n < maxBatch {
		it := take(queue, ctx.Done(), timer.C)
		if it == nil {
			break
		}
		items = append(items, it)
		n += len(it.changes)
	}
	return items
}
