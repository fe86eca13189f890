// Package wasm runs Lexview plugins: WebAssembly modules on wazero (pure
// Go, no cgo). A module is compiled once and its instances are pooled,
// each running on a goroutine of its own. Every call is bounded by a
// deadline (its caller gets its answer then, and the module is closed,
// so a loop cannot outlive it) and by two memory ceilings, one per
// instance and one for every instance of every plugin together; a trap,
// an exit or an exhausted limit becomes an *Error. An instance left
// holding much memory is not kept, and idle ones are closed after a
// while: their memory goes back to the operating system. A plugin
// reaches the host only through the ABI's host functions (module
// "lexview", see docs/plugins.md) and a WASI preview 1 layer with no
// file system, no environment, no arguments and stdout/stderr captured.
package wasm

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// APIVersion is the plugin ABI version this runtime implements.
const APIVersion = 1

// Limits bound every plugin call.
type Limits struct {
	// CallTimeout bounds one call (default 2s); a shorter deadline on the
	// caller's context wins.
	CallTimeout time.Duration
	// MemoryPages bounds an instance's linear memory in 64 KiB pages
	// (default 2048, 128 MiB).
	MemoryPages uint32
	// MaxInput and MaxResult bound the JSON crossing the boundary
	// (default 1 MiB each).
	MaxInput, MaxResult int
	// PoolSize is how many instances of one plugin may exist at once
	// (default 4); callers beyond it wait for an idle one.
	PoolSize int
	// MaxHTTPBody bounds a response body a plugin reads (default 1 MiB).
	MaxHTTPBody int64
	// MaxLogs bounds the log lines of one call (default 100).
	MaxLogs int
	// MaxMemory bounds the linear memory of every instance of every
	// plugin together, in bytes (default DefaultMaxMemory); one plugin's
	// instances get at most half of it. SetMaxMemory changes it.
	MaxMemory int64
	// KeepMemory is the most linear memory an instance may hold to go
	// back to the pool after a call (default 32 MiB); a larger one is
	// closed, since its memory cannot shrink.
	KeepMemory uint64
	// IdleTimeout closes an instance idle that long (default 1 min).
	IdleTimeout time.Duration
}

func (l *Limits) defaults() {
	if l.CallTimeout <= 0 {
		l.CallTimeout = 2 * time.Second
	}
	if l.MemoryPages == 0 {
		l.MemoryPages = 2048
	}
	if l.MaxInput <= 0 {
		l.MaxInput = 1 << 20
	}
	if l.MaxResult <= 0 {
		l.MaxResult = 1 << 20
	}
	if l.PoolSize <= 0 {
		l.PoolSize = 4
	}
	if l.MaxHTTPBody <= 0 {
		l.MaxHTTPBody = 1 << 20
	}
	if l.MaxLogs <= 0 {
		l.MaxLogs = 100
	}
	if l.MaxMemory <= 0 {
		l.MaxMemory = DefaultMaxMemory
	}
	if l.KeepMemory == 0 {
		l.KeepMemory = 32 << 20
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = time.Minute
	}
}

// Options configure a Runtime.
type Options struct {
	Limits Limits
	// Cache shares compiled code between runtimes (tests); nil for none.
	Cache wazero.CompilationCache
}

// Runtime compiles and runs plugin modules. It is safe for concurrent
// use.
type Runtime struct {
	rt     wazero.Runtime
	limits Limits
	mem    budget

	modsMu sync.Mutex
	mods   map[*Module]struct{} // loaded and not closed

	stop     chan struct{} // ends the idle sweep
	sweeping sync.WaitGroup
}

// New starts a runtime. Close releases it.
func New(ctx context.Context, opt Options) (*Runtime, error) {
	opt.Limits.defaults()
	cfg := wazero.NewRuntimeConfig().
		WithCloseOnContextDone(true).
		WithMemoryLimitPages(opt.Limits.MemoryPages)
	if opt.Cache != nil {
		cfg = cfg.WithCompilationCache(opt.Cache)
	}
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	r := &Runtime{rt: rt, limits: opt.Limits, mods: map[*Module]struct{}{}, stop: make(chan struct{})}
	r.mem.limit.Store(opt.Limits.MaxMemory)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		_ = rt.Close(ctx)
		return nil, fmt.Errorf("wasm: WASI: %w", err)
	}
	if err := r.instantiateHost(ctx); err != nil {
		_ = rt.Close(ctx)
		return nil, fmt.Errorf("wasm: host module: %w", err)
	}
	r.sweeping.Add(1)
	go r.sweepIdle()
	return r, nil
}

// Close releases every module and instance; the memory of an instance
// still running is released when it stops.
func (r *Runtime) Close(ctx context.Context) error {
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	r.sweeping.Wait()
	for _, m := range r.modules() {
		m.pool.close()
	}
	return r.rt.Close(ctx)
}

// sweepIdle closes the instances idle for longer than IdleTimeout, until
// Close.
func (r *Runtime) sweepIdle() {
	defer r.sweeping.Done()
	t := time.NewTicker(max(r.limits.IdleTimeout/4, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case now := <-t.C:
			cutoff := now.Add(-r.limits.IdleTimeout)
			for _, m := range r.modules() {
				m.pool.sweep(cutoff)
			}
		}
	}
}

// modules returns the loaded modules.
func (r *Runtime) modules() []*Module {
	r.modsMu.Lock()
	defer r.modsMu.Unlock()
	mods := make([]*Module, 0, len(r.mods))
	for m := range r.mods {
		mods = append(mods, m)
	}
	return mods
}

// Limits returns the runtime's limits, defaults filled in.
func (r *Runtime) Limits() Limits { return r.limits }

// Level is a plugin log line's severity.
type Level int

// Log levels as the ABI numbers them.
const (
	LevelDebug Level = iota
	LevelInfo
	LevelWarn
	LevelError
)

// String names the level as the event log does.
func (l Level) String() string {
	switch l {
	case LevelDebug:
		return "debug"
	case LevelWarn:
		return "warn"
	case LevelError:
		return "error"
	}
	return "info"
}

// Env is what a module's host functions reach: its secrets, its config,
// its log and the guarded HTTP client.
type Env interface {
	// Secret returns the plugin's secret key, and whether it is set.
	Secret(ctx context.Context, key string) (string, bool)
	// Config returns the plugin's configuration as a JSON object.
	Config(ctx context.Context) []byte
	// Log records one line the plugin logged.
	Log(ctx context.Context, level Level, message string)
}

// ModuleOptions describe one plugin's module.
type ModuleOptions struct {
	// Name names the plugin in errors.
	Name string
	// AllowedHosts are the hostnames the plugin may reach over HTTP: an
	// exact name, or "*.example.com" for its subdomains.
	AllowedHosts []string
	// HTTPClient makes the plugin's requests; it must refuse private
	// addresses unless the operator allowed them.
	HTTPClient *http.Client
	Env        Env
}

// Module is a compiled plugin with its pool of instances.
type Module struct {
	r        *Runtime
	opt      ModuleOptions
	compiled wazero.CompiledModule
	exports  map[string]bool
	pool     *pool
	// minMemory is the memory an instance starts with, in bytes.
	minMemory int64
	// memUsed is what its instances hold (guarded by the budget's mu).
	memUsed int64
}

// Load compiles wasm and checks that it exports the ABI's allocator and
// memory; the first instance starts on first use.
func (r *Runtime) Load(ctx context.Context, wasm []byte, opt ModuleOptions) (*Module, error) {
	compiled, err := r.rt.CompileModule(ctx, wasm)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: the module does not compile: %w", opt.Name, err)
	}
	m := &Module{r: r, opt: opt, compiled: compiled, exports: map[string]bool{}}
	for name := range compiled.ExportedFunctions() {
		m.exports[name] = true
	}
	if !m.exports[ExportAlloc] {
		_ = compiled.Close(ctx)
		return nil, fmt.Errorf("plugin %s: the module does not export %s", opt.Name, ExportAlloc)
	}
	if len(compiled.ExportedMemories()) == 0 {
		_ = compiled.Close(ctx)
		return nil, fmt.Errorf("plugin %s: the module exports no memory", opt.Name)
	}
	for _, def := range compiled.ExportedMemories() {
		m.minMemory = int64(def.Min()) << 16
	}
	m.pool = newPool(r.limits.PoolSize)
	r.modsMu.Lock()
	r.mods[m] = struct{}{}
	r.modsMu.Unlock()
	return m, nil
}

// Exports reports whether the module exports the function name.
func (m *Module) Exports(name string) bool { return m.exports[name] }

// Close closes the idle instances and the compiled module; calls in
// flight finish, and their instances are closed when they return.
func (m *Module) Close(ctx context.Context) error {
	m.r.modsMu.Lock()
	delete(m.r.mods, m)
	m.r.modsMu.Unlock()
	m.pool.close()
	return m.compiled.Close(ctx)
}

// instantiate starts a fresh instance: WASI reactor initialisation
// (_initialize) when exported, no file system, no environment. Its
// initial memory is taken from the budget first.
func (m *Module) instantiate(ctx context.Context) (*instance, error) {
	inst := &instance{m: m, stderr: &capped{max: 4 << 10}, mem: newLinearMemory(m.r, m), jobs: make(chan *job, 1)}
	if why := inst.mem.takeCredit(m.minMemory); why != "" {
		inst.mem.Free()
		return nil, &Error{Kind: ErrMemory, Plugin: m.opt.Name, Msg: fmt.Sprintf("starting an instance needs %d bytes: %s", m.minMemory, why)}
	}
	inst.mem.enter() // a fresh memory: never freed yet
	defer inst.mem.leave()
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithStdout(inst.stderr).
		WithStderr(inst.stderr).
		WithRandSource(rand.Reader).
		WithSysWalltime().
		WithSysNanotime().
		WithSysNanosleep().
		WithStartFunctions()
	ctx = context.WithValue(ctx, instanceKey{}, inst)
	mod, err := m.instantiateModule(inst.mem.context(ctx), cfg)
	if err != nil {
		inst.mem.Free()
		return nil, m.classify(ctx, inst, "starting", err)
	}
	inst.mod = mod
	if m.exports["_initialize"] {
		if _, err := mod.ExportedFunction("_initialize").Call(ctx); err != nil {
			inst.close()
			return nil, m.classify(ctx, inst, "initialising", err)
		}
	}
	inst.alloc = mod.ExportedFunction(ExportAlloc)
	return inst, nil
}

// instantiateModule is InstantiateModule, with a panic (wazero panics
// when it is refused a module's initial memory) turned into an error.
func (m *Module) instantiateModule(ctx context.Context, cfg wazero.ModuleConfig) (mod api.Module, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("wazero: %v", p)
		}
	}()
	return m.r.rt.InstantiateModule(ctx, m.compiled, cfg)
}

// ErrorKind classifies plugin failures.
type ErrorKind int

// Failure kinds.
const (
	ErrTrap     ErrorKind = iota + 1 // the module trapped or exited
	ErrTimeout                       // the call's deadline passed
	ErrMemory                        // the memory ceiling was hit
	ErrProtocol                      // the module broke the ABI (bad pointers, results, missing exports)
	ErrPlugin                        // the plugin answered with an error of its own
)

// Error is a failed plugin call.
type Error struct {
	Kind   ErrorKind
	Plugin string
	Msg    string
	Err    error
}

func (e *Error) Error() string {
	if e.Err != nil {
		// wazero appends a wasm stack trace: the first line is enough.
		msg, _, _ := strings.Cut(e.Err.Error(), "\n")
		return fmt.Sprintf("plugin %s: %s: %s", e.Plugin, e.Msg, msg)
	}
	return fmt.Sprintf("plugin %s: %s", e.Plugin, e.Msg)
}

func (e *Error) Unwrap() error { return e.Err }

// IsKind reports whether err is an *Error of kind k.
func IsKind(err error, k ErrorKind) bool {
	var e *Error
	return errors.As(err, &e) && e.Kind == k
}
