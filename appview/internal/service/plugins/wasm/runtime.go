// Package wasm runs Lexview plugins: WebAssembly modules on wazero (pure
// Go, no cgo). A module is compiled once and its instances are pooled;
// every call is bounded by a deadline (the module is closed when its
// context ends, so a loop cannot outlive it) and by a memory ceiling, and
// a trap, an exit or an exhausted limit becomes an *Error. A plugin
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
	"time"

	"github.com/tetratelabs/wazero"
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
	r := &Runtime{rt: rt, limits: opt.Limits}
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, rt); err != nil {
		_ = rt.Close(ctx)
		return nil, fmt.Errorf("wasm: WASI: %w", err)
	}
	if err := r.instantiateHost(ctx); err != nil {
		_ = rt.Close(ctx)
		return nil, fmt.Errorf("wasm: host module: %w", err)
	}
	return r, nil
}

// Close releases every module and instance.
func (r *Runtime) Close(ctx context.Context) error { return r.rt.Close(ctx) }

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
	m.pool = newPool(r.limits.PoolSize)
	return m, nil
}

// Exports reports whether the module exports the function name.
func (m *Module) Exports(name string) bool { return m.exports[name] }

// Close closes the idle instances and the compiled module; calls in
// flight finish, and their instances are closed when they return.
func (m *Module) Close(ctx context.Context) error {
	m.pool.close(ctx)
	return m.compiled.Close(ctx)
}

// instantiate starts a fresh instance: WASI reactor initialisation
// (_initialize) when exported, no file system, no environment.
func (m *Module) instantiate(ctx context.Context) (*instance, error) {
	inst := &instance{m: m, stderr: &capped{max: 4 << 10}}
	cfg := wazero.NewModuleConfig().
		WithName("").
		WithStdout(inst.stderr).
		WithStderr(inst.stderr).
		WithRandSource(rand.Reader).
		WithSysWalltime().
		WithSysNanotime().
		WithSysNanosleep().
		WithStartFunctions()
	ctx, cancel := context.WithTimeout(ctx, m.r.limits.CallTimeout)
	defer cancel()
	ctx = context.WithValue(ctx, instanceKey{}, inst)
	mod, err := m.r.rt.InstantiateModule(ctx, m.compiled, cfg)
	if err != nil {
		return nil, m.classify(ctx, inst, "starting", err)
	}
	inst.mod = mod
	if m.exports["_initialize"] {
		if _, err := mod.ExportedFunction("_initialize").Call(ctx); err != nil {
			_ = mod.Close(context.Background())
			return nil, m.classify(ctx, inst, "initialising", err)
		}
	}
	inst.alloc = mod.ExportedFunction(ExportAlloc)
	return inst, nil
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
