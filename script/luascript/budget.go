package luascript

import (
	"context"
	"errors"
	"math"
	"time"
)

// errBudget is the context error gopher-lua raises when the instruction
// budget is spent.
var errBudget = errors.New("instruction budget exhausted")

var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// budget is the context a running LState consults. gopher-lua calls Done
// exactly once before each VM instruction, so counting those calls gives an
// exact instruction budget without forking the VM. The budget also carries
// the wall-clock deadline of its parent. It is used by one goroutine (the
// LState's) and must not be handed to Go code that waits on it; host calls
// use the parent context.
type budget struct {
	parent   context.Context
	left     int64
	exceeded bool
}

// Done counts one instruction.
func (b *budget) Done() <-chan struct{} {
	b.left--
	if b.left < 0 {
		b.exceeded = true
		return closedChan
	}
	return b.parent.Done()
}

func (b *budget) Err() error {
	if b.exceeded {
		return errBudget
	}
	return b.parent.Err()
}

func (b *budget) Deadline() (time.Time, bool) { return b.parent.Deadline() }
func (b *budget) Value(key any) any           { return b.parent.Value(key) }

// memory is the byte budget of one execution: the strings, decoded values
// and host results a script makes, in total. A charge is checked against
// what is left before it is added, so used never leaves [0, limit] and no
// sum is computed that could overflow.
type memory struct {
	limit int64
	used  int64
	hit   bool // a charge was refused
}

// left is how many bytes may still be charged.
func (m *memory) left() int64 { return m.limit - m.used }

// fits reports whether n more bytes fit; a negative n never does.
func (m *memory) fits(n int64) bool { return n >= 0 && n <= m.left() }

// take charges n bytes if they fit and reports whether they did.
func (m *memory) take(n int64) bool {
	if !m.fits(n) {
		m.hit = true
		return false
	}
	m.used += n
	return true
}

// addSize and mulSize combine non-negative sizes, saturating at
// math.MaxInt64 instead of overflowing: a saturated size never fits.
func addSize(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func mulSize(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}
