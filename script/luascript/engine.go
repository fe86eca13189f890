// Package luascript is Lexview's default script engine: gopher-lua (Lua
// 5.1) in a sandbox, with an exact instruction budget, a wall-clock
// deadline and limits on memory, compiled once per source and run on
// pooled VMs that are reset between uses.
package luascript

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"

	"github.com/lexview/lexview/script"
)

// Limits bound one execution. Zero values take the defaults.
type Limits struct {
	// Instructions is the exact VM instruction budget; default 1,000,000.
	Instructions int64
	// Timeout is the wall-clock deadline, host calls included; default 10s.
	Timeout time.Duration
	// MaxString is the largest string a script may build; default 16 MiB.
	MaxString int
	// MaxAllocated is the memory ceiling of one execution: the bytes of
	// the strings, decoded JSON, host results (records, rows, responses)
	// and variable-length value lists a script makes, in total (see
	// memory.go; what the VM makes in one instruction, no more than a
	// table constructor's fields, is bounded by the instruction budget,
	// the call stack by CallStack); default 256 MiB.
	MaxAllocated int64
	// CallStack is the deepest Lua call nesting; default 200.
	CallStack int
	// MaxRawRows caps the rows db.raw returns; default 1000.
	MaxRawRows int
	// MaxHTTPBody caps an http.* response body; default 5 MiB.
	MaxHTTPBody int64
	// MaxDepth bounds nested xrpc.query/xrpc.procedure calls; default 4.
	MaxDepth int
}

// DefaultInstructions is the specification's instruction budget.
const DefaultInstructions = 1_000_000

func (l Limits) withDefaults() Limits {
	if l.Instructions <= 0 {
		l.Instructions = DefaultInstructions
	}
	if l.Timeout <= 0 {
		l.Timeout = 10 * time.Second
	}
	if l.MaxString <= 0 {
		l.MaxString = 16 << 20
	}
	if l.MaxAllocated <= 0 {
		l.MaxAllocated = 256 << 20
	}
	if l.CallStack <= 0 {
		l.CallStack = 200
	}
	if l.MaxRawRows <= 0 {
		l.MaxRawRows = 1000
	}
	if l.MaxHTTPBody <= 0 {
		l.MaxHTTPBody = 5 << 20
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = 4
	}
	return l
}

// Options configure an Engine.
type Options struct {
	Limits Limits
	// PoolSize is how many idle VMs are kept; default 8 × GOMAXPROCS, at
	// least 32 (an idle VM holds about 240 KB). A run that finds no idle
	// VM builds one (about 0.4 ms of CPU) and a VM returned to a full pool
	// is dropped, so the pool must cover the scripts running at once,
	// which wait on the database more than they compute.
	PoolSize int
	Logger   *slog.Logger
	Now      func() time.Time
}

// Engine implements script.Engine with gopher-lua.
type Engine struct {
	limits Limits
	pool   chan *vm
	log    *slog.Logger
	now    func() time.Time
	tids   *tidSource
	// eagerRecords turns lazy records off (tests compare both paths).
	eagerRecords bool
	// afterRun, when set, sees each run's final state (tests check the
	// memory accounting).
	afterRun func(*run)
	// output bounds scripts' log() and print() (output.go).
	output *outputLimiter
}

var _ script.Engine = (*Engine)(nil)

// New returns an Engine.
func New(o Options) *Engine {
	if o.PoolSize <= 0 {
		o.PoolSize = max(32, 8*runtime.GOMAXPROCS(0))
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Engine{limits: o.Limits.withDefaults(), pool: make(chan *vm, o.PoolSize), log: o.Logger, now: o.Now, tids: newTIDSource(),
		output: newOutputLimiter(o.Now)}
}

// Limits returns the engine's limits (defaults filled in).
func (e *Engine) Limits() Limits { return e.limits }

// program is a compiled script.
type program struct {
	e     *Engine
	proto *lua.FunctionProto
}

// Compile parses and compiles source. The operations that make memory
// the VM cannot account for are rewritten into calls of guards first
// (rewrite.go).
func (e *Engine) Compile(name, source string) (script.Program, error) {
	chunk, err := parse.Parse(strings.NewReader(source), name)
	if err != nil {
		return nil, &script.Error{Kind: script.ErrSyntax, Msg: err.Error()}
	}
	chunk = rewrite(chunk)
	proto, err := lua.Compile(chunk, name)
	if err != nil {
		return nil, &script.Error{Kind: script.ErrSyntax, Msg: err.Error()}
	}
	// The main chunk is vararg, so with Lua 5.1's compatibility gopher-lua
	// builds an `arg` table on every call; but it names that table only in
	// nested functions, so in the main chunk nothing can read it.
	proto.IsVarArg &^= lua.VarArgNeedsArg
	return &program{e: e, proto: proto}, nil
}

func (e *Engine) get() *vm {
	select {
	case v := <-e.pool:
		return v
	default:
		return newVM(e)
	}
}

// put returns a VM to the pool; a VM that saw a failure is dropped, so
// nothing a failed run left behind can reach the next one.
func (e *Engine) put(v *vm, healthy bool) {
	if !healthy {
		v.L.Close()
		return
	}
	v.L.SetTop(0)
	v.releaseLazy(v.run)
	v.run, v.state = nil, run{} // keep nothing of the invocation while idle
	select {
	case e.pool <- v:
	default:
		v.L.Close()
	}
}

// Run executes the chunk (which defines handle) and then handle(), in a
// fresh global environment, within the budget.
func (p *program) Run(ctx context.Context, inv *script.Invocation) (json.RawMessage, error) {
	return p.AppendRun(ctx, inv, nil)
}

// AppendRun implements script.AppendProgram: Run, with the result
// appended to dst.
func (p *program) AppendRun(ctx context.Context, inv *script.Invocation, dst []byte) (out []byte, err error) {
	lim := p.e.limits
	ctx, cancel := context.WithTimeout(ctx, lim.Timeout)
	defer cancel()
	v := p.e.get()
	v.state = run{ctx: ctx, inv: inv, budget: budget{parent: ctx, left: lim.Instructions}, mem: memory{limit: lim.MaxAllocated}}
	v.run = &v.state
	b := &v.run.budget
	healthy := false
	defer func() {
		healthy = healthy && v.clean()
		if r := recover(); r != nil { // a bug in a host function: never reaches the client
			err = &script.Error{Kind: script.ErrRuntime, Msg: fmt.Sprintf("internal error: %v", r)}
			healthy = false
		}
		v.L.RemoveContext()
		v.reportDropped()
		if p.e.afterRun != nil {
			p.e.afterRun(v.run)
		}
		p.e.put(v, healthy)
	}()
	v.L.SetContext(b)
	env, err := v.newEnv(inv)
	if err != nil {
		return nil, v.classify(b, err)
	}
	fn := v.L.NewFunctionFromProto(p.proto)
	fn.Env = env
	v.L.Push(fn)
	if err := v.L.PCall(0, 0, nil); err != nil {
		return nil, v.classify(b, err)
	}
	handle, ok := env.RawGetString("handle").(*lua.LFunction)
	if !ok {
		return nil, &script.Error{Kind: script.ErrNoHandle, Msg: "the script defines no handle() function"}
	}
	v.L.Push(handle)
	if err := v.L.PCall(0, 1, nil); err != nil {
		return nil, v.classify(b, err)
	}
	ret := v.L.Get(-1)
	v.L.Pop(1)
	v.L.RemoveContext()
	// Encoding can decode lazy records, which is charged and may raise.
	if perr := protectLua(func() { out, err = v.appendJSON(dst, ret, lim.MaxString) }); perr != nil {
		return nil, v.classify(b, perr)
	}
	if err != nil {
		return nil, &script.Error{Kind: script.ErrRuntime, Msg: "handle() returned a value that is not JSON: " + err.Error()}
	}
	healthy = true
	return out, nil
}

// classify turns a Lua error into a script.Error.
func (v *vm) classify(b *budget, err error) error {
	switch {
	case b.exceeded:
		return &script.Error{Kind: script.ErrBudget, Msg: fmt.Sprintf("the script exceeded its budget of %d instructions", v.e.limits.Instructions)}
	case errors.Is(b.parent.Err(), context.DeadlineExceeded):
		return &script.Error{Kind: script.ErrBudget, Msg: fmt.Sprintf("the script exceeded its deadline of %s", v.e.limits.Timeout)}
	case v.run.mem.hit:
		return &script.Error{Kind: script.ErrMemory, Msg: err.Error()}
	}
	return &script.Error{Kind: script.ErrRuntime, Msg: err.Error()}
}

// protectLua runs fn, which runs outside a protected Lua call, and returns
// a Lua error it raises as an error.
func protectLua(fn func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			apiErr, ok := r.(*lua.ApiError)
			if !ok {
				panic(r)
			}
			err = apiErr
		}
	}()
	fn()
	return nil
}
