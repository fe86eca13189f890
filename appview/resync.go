package appview

import (
	"iter"
	"sync"
)

// resyncQueue keeps one fetch at a time per repository: a request for a
// repository being fetched is not dropped but runs once more after the
// fetch under way (requests meanwhile are merged into that one), since
// the fetch under way may have read the repository before what the
// request is about (an account active again, a later gap).
type resyncQueue struct {
	mu sync.Mutex
	// byDID holds the repositories being fetched; the value, when not
	// nil, is the next run asked for.
	byDID map[string]*resyncRun
}

// resyncRun is a run asked for while another was under way.
type resyncRun struct {
	after []<-chan struct{} // what the run must wait for
}

// request asks for a fetch of did after after (nil: at once). It reports
// whether the caller must start the runs (runs); when false, a fetch is
// under way and one more run is queued behind it.
func (q *resyncQueue) request(did string, after <-chan struct{}) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.byDID == nil {
		q.byDID = map[string]*resyncRun{}
	}
	next, busy := q.byDID[did]
	if !busy {
		q.byDID[did] = nil
		return true
	}
	if next == nil {
		next = &resyncRun{}
		q.byDID[did] = next
	}
	if after != nil {
		next.after = append(next.after, after)
	}
	return false
}

// runs yields what each run of did's fetches must wait for: first after,
// then, for as long as requests came during the previous run, one merged
// run more. did is done once it stops yielding.
func (q *resyncQueue) runs(did string, after <-chan struct{}) iter.Seq[<-chan struct{}] {
	return func(yield func(<-chan struct{}) bool) {
		if !yield(after) {
			return
		}
		for {
			q.mu.Lock()
			next := q.byDID[did]
			if next == nil {
				delete(q.byDID, did)
				q.mu.Unlock()
				return
			}
			q.byDID[did] = nil
			q.mu.Unlock()
			if !yield(all(next.after)) {
				return
			}
		}
	}
}

// abandon forgets did's fetches (the context ended).
func (q *resyncQueue) abandon(did string) {
	q.mu.Lock()
	delete(q.byDID, did)
	q.mu.Unlock()
}

// all returns a channel closed once every one of chans is (nil when there
// are none).
func all(chans []<-chan struct{}) <-chan struct{} {
	if len(chans) == 0 {
		return nil
	}
	done := make(chan struct{})
	go func() {
		for _, c := range chans {
			<-c
		}
		close(done)
	}()
	return done
}
