package wasm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

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
	m      *Module
	mod    api.Module
	alloc  api.Function
	stderr *capped
	// per call
	staged []byte // what lexview.result hands out next
	logs   int
	stack  [2 * maxArgs]uint64
}

// pool keeps idle instances and bounds how many exist.
type pool struct {
	slots  chan struct{}  // one token per live instance
	idle   chan *instance // never fuller than slots
	mu     sync.Mutex
	closed bool
}

func newPool(size int) *pool {
	return &pool{slots: make(chan struct{}, size), idle: make(chan *instance, size)}
}

// get returns an idle instance, or a slot to start a new one (nil
// instance), waiting while the pool is full.
func (p *pool) get(ctx context.Context) (*instance, error) {
	select {
	case inst := <-p.idle:
		return inst, nil
	default:
	}
	select {
	case inst := <-p.idle:
		return inst, nil
	case p.slots <- struct{}{}:
		return nil, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// put returns a healthy instance to the pool.
func (p *pool) put(ctx context.Context, inst *instance) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		p.discard(ctx, inst)
		return
	}
	p.idle <- inst
}

// discard closes a broken instance and frees its slot.
func (p *pool) discard(ctx context.Context, inst *instance) {
	if inst != nil && inst.mod != nil {
		_ = inst.mod.Close(context.WithoutCancel(ctx))
	}
	<-p.slots
}

func (p *pool) close(ctx context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for {
		select {
		case inst := <-p.idle:
			p.discard(ctx, inst)
		default:
			return
		}
	}
}

// Idle reports how many instances wait in the pool (tests, metrics).
func (m *Module) Idle() int { return len(m.pool.idle) }

// Live reports how many instances exist (idle or running).
func (m *Module) Live() int { return len(m.pool.slots) }

// Call runs export with args, each written into the plugin's memory
// (one lv_alloc for all) and passed as a pointer and length pair, and
// returns the result bytes the plugin packed into its i64 answer. A failed
// instance is closed, never reused.
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
	if inst == nil {
		if inst, err = m.instantiate(ctx); err != nil {
			<-m.pool.slots
			return nil, err
		}
	}
	out, err := inst.call(ctx, export, total, args)
	if err != nil {
		m.pool.discard(ctx, inst)
		return nil, err
	}
	m.pool.put(ctx, inst)
	return out, nil
}

// maxArgs bounds the pointer and length pairs of one call.
const maxArgs = 4

// call runs one export on the instance.
func (inst *instance) call(ctx context.Context, export string, total int, args [][]byte) ([]byte, error) {
	m := inst.m
	inst.staged, inst.logs = nil, 0
	inst.stderr.reset()
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
	case strings.Contains(stderr, "out of memory") || strings.Contains(err.Error(), "out of memory"):
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
