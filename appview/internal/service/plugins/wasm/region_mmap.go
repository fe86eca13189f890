//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package wasm

import (
	"math"

	"golang.org/x/sys/unix"
)

// mmapRegion reserves an instance's maximum memory as address space
// without access, outside the Go heap, and makes it accessible as the
// memory grows: a growth is one mprotect, never a copy, pages become
// resident only when the plugin touches them, and release unmaps them at
// once.
type mmapRegion struct {
	b    []byte // the whole reservation
	size uint64 // accessible bytes
}

// newRegion reserves max bytes, or falls back to the Go heap when the
// reservation is refused.
func newRegion(max uint64) region {
	if max == 0 || max > math.MaxInt {
		return &heapRegion{}
	}
	b, err := unix.Mmap(-1, 0, int(max), unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return &heapRegion{}
	}
	return &mmapRegion{b: b}
}

func (r *mmapRegion) grow(size uint64) []byte {
	if size > uint64(len(r.b)) {
		return nil
	}
	if size > r.size {
		if err := unix.Mprotect(r.b[r.size:size], unix.PROT_READ|unix.PROT_WRITE); err != nil {
			return nil
		}
		r.size = size
	}
	return r.b[:size:size]
}

func (r *mmapRegion) release() {
	if r.b != nil {
		_ = unix.Munmap(r.b)
		r.b = nil
	}
}
