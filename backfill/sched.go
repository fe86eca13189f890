package backfill

import (
	"sync"

	"github.com/lexview/lexview/storage"
)

// hostSched bounds the fetches running against each PDS host. A worker
// whose repository's host is at its limit parks the repository instead of
// waiting, and moves on to the next one; whoever finishes a fetch on that
// host takes the parked repository over with its slot. So one busy host
// does not hold up repositories on the others.
type hostSched struct {
	mu        sync.Mutex
	cond      *sync.Cond
	perHost   int
	maxParked int
	busy      map[string]int
	parked    map[string][]storage.BackfillRepo
	nParked   int
	closed    bool
}

func newHostSched(perHost, maxParked int) *hostSched {
	s := &hostSched{perHost: perHost, maxParked: maxParked, busy: map[string]int{}, parked: map[string][]storage.BackfillRepo{}}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// take reports whether the caller now holds a slot on host. When it does
// not, the repository was parked (another fetch on the host will take it
// up) or the scheduler was closed. take waits only while the parking
// space is full.
func (s *hostSched) take(host string, repo storage.BackfillRepo) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for !s.closed {
		if s.busy[host] < s.perHost {
			s.busy[host]++
			return true
		}
		if s.nParked < s.maxParked {
			s.parked[host] = append(s.parked[host], repo)
			s.nParked++
			return false
		}
		s.cond.Wait()
	}
	return false
}

// done is called when a fetch on host ends. It hands over a parked
// repository of that host (the caller keeps the slot and fetches it), or
// frees the slot.
func (s *hostSched) done(host string) (storage.BackfillRepo, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.cond.Broadcast()
	if q := s.parked[host]; len(q) > 0 && !s.closed {
		repo := q[0]
		if len(q) == 1 {
			delete(s.parked, host)
		} else {
			s.parked[host] = q[1:]
		}
		s.nParked--
		return repo, true
	}
	s.busy[host]--
	return storage.BackfillRepo{}, false
}

// close wakes every waiter and refuses further slots; parked repositories
// are left for the next run.
func (s *hostSched) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.cond.Broadcast()
}
