//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package wasm

// newRegion puts the memory on the Go heap: this platform has no mmap.
func newRegion(uint64) region { return &heapRegion{} }
