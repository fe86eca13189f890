package wasm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"
)

// Exports of the ABI (docs/plugins.md).
const (
	// ExportAlloc is lv_alloc(size i32) -> ptr i32: a buffer of size bytes
	// in the plugin's memory, which the host fills with a call's input.
	ExportAlloc = "lv_alloc"
	// ExportCall is the script-library capability:
	// lv_call(name_ptr, name_len, in_ptr, in_len i32) -> i64.
	ExportCall = "lv_call"
)

// instanceKey carries the running instance to host functions.
type instanceKey struct{}

// instance is one instantiated module. It runs one call at a time.
type instance struct {
	m         *Module
	mod       api.Module
	mem       *linearMemory
	alloc     api.Function
	stderr    *capped
	idleSince time.Time
	// jobs carries the calls to the instance's own goroutine (Module.Call);
	// it is closed with the instance.
	jobs      chan *job
	closeOnce sync.Once
	// per call
	staged []byte // what lexview.result hands out next
	logs   int
	stack  [2 * maxArgs]uint64
}

// close closes the instance, once; its memory goes back to the budget
// and the operating system as soon as nothing runs on it, and its
// goroutine ends.
func (inst *instance) close() {
	inst.closeOnce.Do(func() {
		if inst.mod != nil {
			_ = inst.mod.Close(context.Background())
		}
		inst.mem.Free()
		close(inst.jobs)
	})
}

// job is one call for an instance's goroutine.
type job struct {
	ctx    context.Context
	export string
	total  int
	args   [][]byte
	done   chan outcome // buffered: the caller may have stopped waiting
}

// outcome is what an instance's goroutine hands its caller.
type outcome struct {
	out []byte
	err error
}

// Call runs export with args, each written into the plugin's memory
// (one lv_alloc for all) and passed as a pointer and length pair, and
// returns the result bytes the plugin packed into its i64 answer. A failed
// instance is closed, never reused.
//
// The instance runs the call on its own goroutine (serve), and Call
// answers ErrTimeout when the deadline passes, whatever the module is
// doing: wazero stops a module only at its next check (a loop iteration,
// or the call's start), and a growth of its memory or the host's garbage
// collection can hold it longer. The instance keeps its pool slot until
// it has stopped and been closed.
func (m *Module) Call(ctx context.Context, export string, args ...[]byte) ([]byte, error) {
	if !m.exports[export] {
		return nil, &Error{Kind: ErrProtocol, Plugin: m.opt.Name, Msg: "the module does not export " + export}
	}
	if len(args) > maxArgs {
		return nil, &Error{Kind: ErrProtocol, Plugin: m.opt.Name, Msg: fmt.Sprintf("%d arguments are more than %d", len(args), maxArgs)}
	}
	total := 0
	for _, a := range args {
		total += len(a)
	}
	if total > m.r.limits.MaxInput {
		return nil, &Error{Kind: ErrProtocol, Plugin: m.opt.Name, Msg: fmt.Sprintf("the input is %d bytes, over the %d-byte limit", total, m.r.limits.MaxInput)}
	}
	ctx, cancel := context.WithTimeout(ctx, m.r.limits.CallTimeout)
	defer cancel()
	inst, err := m.pool.get(ctx)
	if err != nil {
		return nil, &Error{Kind: ErrTimeout, Plugin: m.opt.Name, Msg: "no instance became free before the deadline", Err: err}
	}
	j := &job{ctx: ctx, export: export, total: total, args: args, done: make(chan outcome, 1)}
	if inst == nil {
		go m.serve(j)
	} else {
		inst.jobs <- j
	}
	select {
	case o := <-j.done:
		return o.out, o.err
	case <-ctx.Done():
		select {
		case o := <-j.done: // it finished as the deadline passed
			return o.out, o.err
		default:
		}
		return nil, &Error{Kind: ErrTimeout, Plugin: m.opt.Name, Msg: export + " did not finish before the deadline", Err: ctx.Err()}
	}
}

// serve is an instance's goroutine: it starts the instance for its first
// job, then runs its jobs one at a time, putting the instance back in the
// pool after each, until the instance is closed: when a call fails, when
// a call leaves it holding more memory than an idle instance may keep
// (Limits.KeepMemory), or by the pool (idle too long, memory short, the
// module closed). Its stack stays grown between calls.
func (m *Module) serve(j *job) {
	inst, err := m.instantiate(j.ctx)
	if err != nil {
		m.pool.release(1)
		j.done <- outcome{err: err}
		return
	}
	for {
		out, err := inst.call(j.ctx, j.export, j.total, j.args)
		keep := err == nil && inst.mem.bytes() <= m.r.limits.KeepMemory
		if keep {
			m.pool.put(inst)
		} else {
			m.pool.discard(inst)
		}
		j.done <- outcome{out, err}
		var ok bool
		if j, ok = <-inst.jobs; !ok {
			return
		}
	}
}

// maxArgs bounds the pointer and length pairs of one call.
const maxArgs = 4

// call runs one export on the instance.
func (inst *instance) call(ctx context.Context, export string, total int, args [][]byte) ([]byte, error) {
	m := inst.m
	inst.staged, inst.logs = nil, 0
	inst.stderr.reset()
	if !inst.mem.enter() {
		return nil, &Error{Kind: ErrTrap, Plugin: m.opt.Name, Msg: "the instance was closed"}
	}
	defer inst.mem.leave()
	inst.mem.clearRefusal()
	ctx = context.WithValue(ctx, instanceKey{}, inst)
	stack := inst.stack[:]
	stack[0] = api.EncodeI32(int32(total))
	if err := inst.alloc.CallWithStack(ctx, stack); err != nil {
		return nil, m.classify(ctx, inst, ExportAlloc, err)
	}
	ptr := uint32(stack[0])
	mem := inst.mod.Memory()
	for i, a := range args {
		if len(a) > 0 && !mem.Write(ptr, a) {
			return nil, &Error{Kind: ErrProtocol, Plugin: m.opt.Name, Msg: fmt.Sprintf("%s returned %d, outside memory for %d bytes", ExportAlloc, ptr, total)}
		}
		stack[2*i], stack[2*i+1] = uint64(ptr), uint64(uint32(len(a)))
		ptr += uint32(len(a))
	}
	if err := inst.mod.ExportedFunction(export).CallWithStack(ctx, stack); err != nil {
		return nil, m.classify(ctx, inst, export, err)
	}
	rptr, rlen := uint32(stack[0]>>32), uint32(stack[0])
	if rlen > uint32(m.r.limits.MaxResult) {
		return nil, &Error{Kind: ErrProtocol, Plugin: m.opt.Name, Msg: fmt.Sprintf("%s returned %d bytes, over the %d-byte limit", export, rlen, m.r.limits.MaxResult)}
	}
	out, ok := mem.Read(rptr, rlen)
	if !ok {
		return nil, &Error{Kind: ErrProtocol, Plugin: m.opt.Name, Msg: fmt.Sprintf("%s returned a result outside memory (%d+%d)", export, rptr, rlen)}
	}
	inst.staged = nil
	return append([]byte(nil), out...), nil
}

// classify turns a failed call into an *Error.
func (m *Module) classify(ctx context.Context, inst *instance, what string, err error) error {
	var pe *Error
	if errors.As(err, &pe) {
		return pe
	}
	stderr := strings.TrimSpace(inst.stderr.String())
	var exit *sys.ExitError
	switch {
	case errors.As(err, &exit) && (exit.ExitCode() == sys.ExitCodeDeadlineExceeded || exit.ExitCode() == sys.ExitCodeContextCanceled),
		ctx.Err() != nil:
		return &Error{Kind: ErrTimeout, Plugin: m.opt.Name, Msg: what + " did not finish before the deadline", Err: ctx.Err()}
	case strings.Contains(stderr, "out of memory") || strings.Contains(err.Error(), "out of memory") || inst.mem.why() != "":
		// A refused growth ends a Go module with "out of memory"; another
		// module may trap its own way once memory.grow answered -1.
		if why := inst.mem.why(); why != "" {
			return &Error{Kind: ErrMemory, Plugin: m.opt.Name, Msg: fmt.Sprintf("%s ran out of memory: %s", what, why)}
		}
		return &Error{Kind: ErrMemory, Plugin: m.opt.Name, Msg: fmt.Sprintf("%s ran out of memory (limit %d pages of 64 KiB)", what, m.r.limits.MemoryPages)}
	case exit != nil:
		return &Error{Kind: ErrTrap, Plugin: m.opt.Name, Msg: fmt.Sprintf("%s exited with code %d%s", what, exit.ExitCode(), detail(stderr))}
	}
	return &Error{Kind: ErrTrap, Plugin: m.opt.Name, Msg: what + " trapped" + detail(stderr), Err: err}
}

func detail(stderr string) string {
	if stderr == "" {
		return ""
	}
	if i := strings.IndexByte(stderr, '\n'); i > 0 {
		stderr = stderr[:i]
	}
	return ": " + stderr
}

// capped keeps the first max bytes written to it.
type capped struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.max - len(c.buf); room > 0 {
		c.buf = append(c.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return string(c.buf)
}

func (c *capped) reset() {
	c.mu.Lock()
	c.buf = c.buf[:0]
	c.mu.Unlock()
}
