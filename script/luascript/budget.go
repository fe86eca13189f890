package luascript

import (
	"context"
	"errors"
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
