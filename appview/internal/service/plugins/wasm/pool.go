package wasm

import (
	"context"
	"sync"
	"time"
)

// pool keeps one plugin's idle instances and bounds how many exist. A
// slot is taken before an instance starts and given back only once the
// instance is closed, so that the bound holds even for an instance that
// outlives its caller (a call past its deadline stops at its next check,
// see Module.Call). The idle instances are a stack: the most recently
// used is taken first, and the others age out (sweep).
type pool struct {
	size int

	mu      sync.Mutex
	idle    []*instance // most recently used last
	live    int         // instances started or starting
	waiters int
	wake    chan struct{} // closed when an instance or a slot frees up
	closed  bool
}

func newPool(size int) *pool { return &pool{size: size, wake: make(chan struct{})} }

// get returns an idle instance, or nil with a slot taken to start one,
// waiting while every slot is busy.
func (p *pool) get(ctx context.Context) (*instance, error) {
	for {
		p.mu.Lock()
		if n := len(p.idle); n > 0 {
			inst := p.idle[n-1]
			p.idle[n-1] = nil
			p.idle = p.idle[:n-1]
			p.mu.Unlock()
			return inst, nil
		}
		if p.live < p.size {
			p.live++
			p.mu.Unlock()
			return nil, nil
		}
		wake := p.wake
		p.waiters++
		p.mu.Unlock()
		select {
		case <-wake:
			p.mu.Lock()
			p.waiters--
			p.mu.Unlock()
		case <-ctx.Done():
			p.mu.Lock()
			p.waiters--
			p.mu.Unlock()
			return nil, ctx.Err()
		}
	}
}

// signalLocked wakes the callers waiting in get.
func (p *pool) signalLocked() {
	if p.waiters > 0 {
		close(p.wake)
		p.wake = make(chan struct{})
	}
}

// put returns a healthy instance to the pool; after close it is closed.
func (p *pool) put(inst *instance) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.discard(inst)
		return
	}
	inst.idleSince = time.Now()
	p.idle = append(p.idle, inst)
	p.signalLocked()
	p.mu.Unlock()
}

// discard closes an instance (nil: one that did not start) and then
// frees its slot.
func (p *pool) discard(inst *instance) {
	if inst != nil {
		inst.close()
	}
	p.release(1)
}

// release frees n slots.
func (p *pool) release(n int) {
	if n == 0 {
		return
	}
	p.mu.Lock()
	p.live -= n
	p.signalLocked()
	p.mu.Unlock()
}

// take removes the idle instances keep refuses and returns them.
func (p *pool) take(keep func(*instance) bool) []*instance {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*instance
	kept := p.idle[:0]
	for _, inst := range p.idle {
		if keep(inst) {
			kept = append(kept, inst)
		} else {
			out = append(out, inst)
		}
	}
	clear(p.idle[len(kept):])
	p.idle = kept
	return out
}

// closeAll closes instances taken from the pool and frees their slots.
func (p *pool) closeAll(insts []*instance) int {
	for _, inst := range insts {
		inst.close()
	}
	p.release(len(insts))
	return len(insts)
}

// evictIdle closes every idle instance (memory is short) and returns
// how many it closed.
func (p *pool) evictIdle() int {
	return p.closeAll(p.take(func(*instance) bool { return false }))
}

// sweep closes the instances idle since before cutoff.
func (p *pool) sweep(cutoff time.Time) int {
	return p.closeAll(p.take(func(inst *instance) bool { return !inst.idleSince.Before(cutoff) }))
}

// close closes the idle instances; the busy ones are closed when their
// calls return.
func (p *pool) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.evictIdle()
}

// Idle reports how many instances wait in the pool (tests, metrics).
func (m *Module) Idle() int {
	m.pool.mu.Lock()
	defer m.pool.mu.Unlock()
	return len(m.pool.idle)
}

// Live reports how many instances exist (idle, running, or running past
// their caller's deadline).
func (m *Module) Live() int {
	m.pool.mu.Lock()
	defer m.pool.mu.Unlock()
	return m.pool.live
}
