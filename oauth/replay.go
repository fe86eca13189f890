package oauth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"sync"
	"time"
)

// DefaultReplayCapacity is the default bound on proofs a ReplayCache
// remembers (about 100 MB at the limit; memory grows only with use).
const DefaultReplayCapacity = 1 << 20

// replayMargin is kept beyond iat+window before a proof is forgotten, to
// absorb clock granularity (iat has second precision).
const replayMargin = 30 * time.Second

const replayShards = 64

// ReplayStore remembers accepted DPoP proofs for every process sharing it
// (storage.DPoPReplayStore is one). Proofs are identified by ReplayHash.
type ReplayStore interface {
	// RememberDPoPProof records hash until expires and reports whether it
	// was new: false when it is already recorded with an expiry after now
	// (a replay). Of concurrent calls with one hash, at most one reports
	// true.
	RememberDPoPProof(ctx context.Context, hash []byte, expires, now time.Time) (bool, error)
}

// ReplayHash identifies a DPoP proof in a ReplayStore: SHA-256 of the key
// thumbprint, a zero byte and the jti. It is unsalted, so that every
// process computes the same hash.
func ReplayHash(jkt, jti string) []byte {
	h := sha256.New()
	h.Write([]byte(jkt))
	h.Write([]byte{0})
	h.Write([]byte(jti))
	return h.Sum(make([]byte, 0, sha256.Size))
}

type replayKey [16]byte

type replayEntry struct {
	key replayKey
	exp int64 // unix nanoseconds
}

// replayShard is one lock's worth of the cache: a map for look-ups and a
// FIFO of insertions for expiry and eviction of the oldest.
type replayShard struct {
	mu    sync.Mutex
	seen  map[replayKey]int64
	queue []replayEntry
	head  int
	limit int
}

// ReplayCache remembers DPoP proofs, identified by key thumbprint and jti,
// until they expire, and reports replays. Each entry is kept until its own
// expiry, which the Verifier sets after the last instant the proof could
// still pass the iat check; the cache therefore outlives the proof window.
// It holds at most its capacity: beyond it the oldest entries are evicted
// early, so the capacity must exceed the number of proofs accepted within
// twice the proof window. It is safe for concurrent use.
type ReplayCache struct {
	salt   [16]byte // keys are salted so that shard placement is unpredictable
	shards [replayShards]replayShard
}

// NewReplayCache returns a cache holding at most capacity entries
// (DefaultReplayCapacity when capacity <= 0).
func NewReplayCache(capacity int) *ReplayCache {
	if capacity <= 0 {
		capacity = DefaultReplayCapacity
	}
	per := max(1, (capacity+replayShards-1)/replayShards)
	c := &ReplayCache{}
	_, _ = rand.Read(c.salt[:])
	for i := range c.shards {
		c.shards[i].seen = make(map[replayKey]int64)
		c.shards[i].limit = per
	}
	return c
}

func (c *ReplayCache) key(jkt, jti string) replayKey {
	h := sha256.New()
	h.Write(c.salt[:])
	h.Write([]byte(jkt))
	h.Write([]byte{0})
	h.Write([]byte(jti))
	var sum [sha256.Size]byte
	var k replayKey
	copy(k[:], h.Sum(sum[:0]))
	return k
}

// Add records the proof (jkt, jti) until expires. It returns false when
// the same pair is already recorded and not yet expired at now: a replay.
func (c *ReplayCache) Add(jkt, jti string, expires, now time.Time) bool {
	k := c.key(jkt, jti)
	s := &c.shards[k[0]%replayShards]
	n, exp := now.UnixNano(), expires.UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire(n)
	if prev, ok := s.seen[k]; ok && prev > n {
		return false
	}
	for len(s.seen) >= s.limit && s.head < len(s.queue) {
		s.pop()
	}
	s.seen[k] = exp
	s.queue = append(s.queue, replayEntry{key: k, exp: exp})
	return true
}

// Len reports how many proofs are remembered.
func (c *ReplayCache) Len() int {
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		n += len(s.seen)
		s.mu.Unlock()
	}
	return n
}

// expire forgets the entries at the head of the queue that have expired.
// Insertion order approximates expiry order (iat lies within the window
// of the insertion time), so the queue needs no sorting.
func (s *replayShard) expire(now int64) {
	for s.head < len(s.queue) && s.queue[s.head].exp <= now {
		s.pop()
	}
}

// pop removes the oldest queued entry and its map entry, unless the key
// was recorded again later (then the map holds a newer expiry).
func (s *replayShard) pop() {
	e := s.queue[s.head]
	s.queue[s.head] = replayEntry{}
	s.head++
	if exp, ok := s.seen[e.key]; ok && exp == e.exp {
		delete(s.seen, e.key)
	}
	if s.head == len(s.queue) {
		s.queue, s.head = s.queue[:0], 0
	} else if s.head >= 1024 && s.head >= len(s.queue)/2 {
		n := copy(s.queue, s.queue[s.head:])
		s.queue, s.head = s.queue[:n], 0
	}
}
