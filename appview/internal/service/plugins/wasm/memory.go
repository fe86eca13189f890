package wasm

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/tetratelabs/wazero/experimental"
)

// The plugins' memory ceiling: every instance of every plugin of a Runtime
// draws its linear memory from one budget.
const (
	// MaxMemorySetting is the instance setting that sets the ceiling, in
	// bytes, from MinMaxMemory to MaxMaxMemory; without it the ceiling is
	// Limits.MaxMemory (DefaultMaxMemory unless configured).
	MaxMemorySetting = "plugins.max_memory_bytes"
	// DefaultMaxMemory is the ceiling without a setting: 512 MiB.
	DefaultMaxMemory = 512 << 20
	// MinMaxMemory and MaxMaxMemory bound what MaxMemorySetting may set.
	MinMaxMemory = 64 << 20
	MaxMaxMemory = 64 << 30
)

// budget accounts the linear memory of every instance of a Runtime
// against one ceiling. A plugin's instances together get at most half
// of it, so that one plugin cannot take the memory every other plugin
// needs; within both bounds, memory goes to whoever grows first. Before a
// growth is refused, idle instances are closed to make room.
type budget struct {
	limit atomic.Int64 // the ceiling, bytes
	mu    sync.Mutex
	used  int64 // by every instance, bytes
}

// take reserves n bytes for module m, or says why it cannot ("" when it
// did) and whether the whole ceiling (rather than m's share) is short.
func (b *budget) take(m *Module, n int64) (why string, ceiling bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	limit := b.limit.Load()
	switch {
	case m.memUsed+n > limit/2:
		return fmt.Sprintf("the plugin's instances would hold more than %d bytes, half the plugins' memory ceiling (%s)", limit/2, MaxMemorySetting), false
	case b.used+n > limit:
		return fmt.Sprintf("the plugins' memory ceiling of %d bytes is reached (%s)", limit, MaxMemorySetting), true
	}
	m.memUsed += n
	b.used += n
	return "", false
}

// give returns n bytes module m held.
func (b *budget) give(m *Module, n int64) {
	b.mu.Lock()
	m.memUsed -= n
	b.used -= n
	b.mu.Unlock()
}

// reserve takes n bytes for m, closing idle instances to make room when
// the budget is short: m's own, then, when the ceiling is what is short,
// every plugin's.
func (r *Runtime) reserve(m *Module, n int64) string {
	why, ceiling := r.mem.take(m, n)
	if why == "" {
		return ""
	}
	if m.pool.evictIdle() > 0 {
		if why, ceiling = r.mem.take(m, n); why == "" {
			return ""
		}
	}
	if ceiling && r.evictIdle() > 0 {
		why, _ = r.mem.take(m, n)
	}
	return why
}

// evictIdle closes the idle instances of every module and returns how
// many it closed.
func (r *Runtime) evictIdle() int {
	n := 0
	for _, m := range r.modules() {
		n += m.pool.evictIdle()
	}
	return n
}

// MemoryInUse reports the linear memory every plugin instance holds
// now, in bytes: the amount counted against the ceiling.
func (r *Runtime) MemoryInUse() int64 {
	r.mem.mu.Lock()
	defer r.mem.mu.Unlock()
	return r.mem.used
}

// MemoryByPlugin reports the linear memory each plugin's instances hold,
// in bytes, by plugin name.
func (r *Runtime) MemoryByPlugin() map[string]int64 {
	mods := r.modules()
	r.mem.mu.Lock()
	defer r.mem.mu.Unlock()
	out := make(map[string]int64, len(mods))
	for _, m := range mods {
		out[m.opt.Name] += m.memUsed
	}
	return out
}

// MaxMemory reports the plugins' memory ceiling, in bytes.
func (r *Runtime) MaxMemory() int64 { return r.mem.limit.Load() }

// SetMaxMemory sets the plugins' memory ceiling (the setting
// MaxMemorySetting); n <= 0 restores Limits.MaxMemory. Lowering it takes
// nothing from running calls: growths are refused until enough memory is
// given back, and idle instances are closed at once when the plugins
// hold more than the new ceiling.
func (r *Runtime) SetMaxMemory(n int64) {
	if n <= 0 {
		n = r.limits.MaxMemory
	}
	r.mem.limit.Store(n)
	if r.MemoryInUse() > n {
		r.evictIdle()
	}
}

// MemoryInUse reports the linear memory this plugin's instances hold,
// in bytes.
func (m *Module) MemoryInUse() int64 {
	m.r.mem.mu.Lock()
	defer m.r.mem.mu.Unlock()
	return m.memUsed
}

// linearMemory backs one instance's linear memory (wazero's
// experimental.LinearMemory): every growth is counted against the
// runtime's budget, and refused (memory.grow answers -1) when the budget
// is short. Where the platform allows, the memory is a reservation of
// the instance's maximum outside the Go heap, made accessible as it
// grows: a growth copies nothing, and Free gives the pages back to the
// operating system at once.
//
// Free may come from another goroutine while the instance runs
// (Runtime.Close closes every instance): the memory is then released
// when the last user leaves (enter and leave bracket every use).
type linearMemory struct {
	r *Runtime
	m *Module

	mu      sync.Mutex
	users   int
	freed   bool   // Free was called
	gone    bool   // the pages were released
	reserve region // the platform's reservation, or the Go heap
	size    uint64 // accessible (and accounted) bytes
	credit  int64  // taken from the budget before instantiation
	refused string // why the last growth was refused, "" if none
	sizeNow atomic.Uint64
}

// region is one instance's memory: a reservation of max bytes made
// accessible as it grows (mmap) or a Go slice (elsewhere).
type region interface {
	// grow makes the first size bytes accessible and returns them, nil
	// when it cannot.
	grow(size uint64) []byte
	// release gives the memory back.
	release()
}

func newLinearMemory(r *Runtime, m *Module) *linearMemory { return &linearMemory{r: r, m: m} }

// allocator returns the wazero allocator that hands out l.
func (l *linearMemory) allocator() experimental.MemoryAllocator {
	return experimental.MemoryAllocatorFunc(func(_, max uint64) experimental.LinearMemory {
		l.mu.Lock()
		l.reserve = newRegion(max)
		l.mu.Unlock()
		return l
	})
}

// Reallocate implements experimental.LinearMemory. A refused growth
// answers nil (memory.grow then answers -1); wazero cannot be refused the
// initial memory, which the credit taken before instantiation covers.
func (l *linearMemory) Reallocate(size uint64) []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.gone || l.reserve == nil {
		return nil
	}
	if size <= l.size {
		return l.reserve.grow(size)
	}
	delta := int64(size - l.size)
	fromCredit := min(l.credit, delta)
	need := delta - fromCredit
	if need > 0 {
		if why := l.r.reserve(l.m, need); why != "" {
			l.refused = why
			return nil
		}
	}
	b := l.reserve.grow(size)
	if b == nil {
		l.r.mem.give(l.m, need)
		l.refused = "the operating system refused the memory"
		return nil
	}
	l.credit -= fromCredit
	l.size = size
	l.sizeNow.Store(size)
	return b
}

// Free implements experimental.LinearMemory.
func (l *linearMemory) Free() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.freed = true
	if l.users == 0 {
		l.releaseLocked()
	}
}

// enter and leave bracket a use of the memory (a call, an
// instantiation): a Free meanwhile waits for leave. enter reports false,
// and the memory must not be used, once it was freed (the runtime
// closed the instance under the pool).
func (l *linearMemory) enter() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.freed {
		return false
	}
	l.users++
	return true
}

func (l *linearMemory) leave() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.users--
	if l.users == 0 && l.freed {
		l.releaseLocked()
	}
}

// releaseLocked gives the pages and their budget back, once.
func (l *linearMemory) releaseLocked() {
	if l.gone {
		return
	}
	l.gone = true
	if l.reserve != nil {
		l.reserve.release()
		l.reserve = nil
	}
	l.r.mem.give(l.m, int64(l.size)+l.credit)
	l.size, l.credit = 0, 0
	l.sizeNow.Store(0)
}

// takeCredit reserves n bytes before the instance starts, so that its
// initial memory (which wazero cannot be refused) is within the budget.
func (l *linearMemory) takeCredit(n int64) string {
	if why := l.r.reserve(l.m, n); why != "" {
		return why
	}
	l.mu.Lock()
	l.credit += n
	l.mu.Unlock()
	return ""
}

// why says why the last growth was refused, "" when none was.
func (l *linearMemory) why() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.refused
}

// clearRefusal forgets the last refusal: a call starts.
func (l *linearMemory) clearRefusal() {
	l.mu.Lock()
	l.refused = ""
	l.mu.Unlock()
}

// bytes reports the instance's accessible memory.
func (l *linearMemory) bytes() uint64 { return l.sizeNow.Load() }

// heapRegion is a region on the Go heap, for platforms without mmap: a
// growth copies, and the garbage collector takes the memory back.
type heapRegion struct{ b []byte }

func (h *heapRegion) grow(size uint64) []byte {
	if size > uint64(cap(h.b)) {
		nb := make([]byte, size, max(size, uint64(cap(h.b))*5/4))
		copy(nb, h.b)
		h.b = nb
	}
	h.b = h.b[:size]
	return h.b
}

func (h *heapRegion) release() { h.b = nil }

// context returns ctx carrying l's allocator for InstantiateModule.
func (l *linearMemory) context(ctx context.Context) context.Context {
	return experimental.WithMemoryAllocator(ctx, l.allocator())
}
