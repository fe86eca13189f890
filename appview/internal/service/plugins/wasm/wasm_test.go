package wasm_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"

	"github.com/lexview/lexview/appview/internal/service/plugins/wasm"
	"github.com/lexview/lexview/appview/internal/testing/plugintest"
	"github.com/lexview/lexview/internal/netguard"
)

var cache = wazero.NewCompilationCache()

type env struct {
	mu      sync.Mutex
	secrets map[string]string
	logs    []string
}

func (e *env) Secret(_ context.Context, key string) (string, bool) {
	v, ok := e.secrets[key]
	return v, ok
}

func (e *env) Config(context.Context) []byte { return []byte(`{"words":["darn","heck"]}`) }

func (e *env) Log(_ context.Context, level wasm.Level, msg string) {
	e.mu.Lock()
	e.logs = append(e.logs, level.String()+":"+msg)
	e.mu.Unlock()
}

func newRuntime(t *testing.T, limits wasm.Limits) *wasm.Runtime {
	t.Helper()
	rt, err := wasm.New(context.Background(), wasm.Options{Limits: limits, Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	return rt
}

func load(t *testing.T, rt *wasm.Runtime, dir string, opt wasm.ModuleOptions) *wasm.Module {
	t.Helper()
	m, err := rt.Load(context.Background(), plugintest.Build(t, dir), opt)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestWordFilter(t *testing.T) {
	rt := newRuntime(t, wasm.Limits{})
	e := &env{}
	m := load(t, rt, "examples/plugins/wordfilter", wasm.ModuleOptions{Name: "word-filter", Env: e})
	ctx := context.Background()
	out, err := m.CallFunction(ctx, "check", json.RawMessage(`{"text":"Oh heck, that is DARN good"}`))
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `{"clean":false,"matches":["heck","darn"]}` {
		t.Fatalf("check: %s", out)
	}
	out, err = m.CallFunction(ctx, "censor", json.RawMessage(`{"text":"Oh heck!"}`))
	if err != nil || string(out) != `{"text":"Oh ****!"}` {
		t.Fatalf("censor: %s %v", out, err)
	}
	if len(e.logs) != 1 || e.logs[0] != "info:censored a word" {
		t.Fatalf("logs: %v", e.logs)
	}
	if m.Idle() != 1 || m.Live() != 1 {
		t.Fatalf("pool: idle %d live %d, want the one instance reused", m.Idle(), m.Live())
	}
	if _, err := m.CallFunction(ctx, "nope", nil); !wasm.IsKind(err, wasm.ErrPlugin) || !strings.Contains(err.Error(), "no function nope") {
		t.Fatalf("unknown function: %v", err)
	}
	// Concurrent calls stay within the pool.
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := m.CallFunction(ctx, "check", json.RawMessage(`{"text":"fine"}`)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if m.Live() > rt.Limits().PoolSize {
		t.Fatalf("live %d over the pool size", m.Live())
	}
}

func TestHostFunctions(t *testing.T) {
	rt := newRuntime(t, wasm.Limits{})
	e := &env{secrets: map[string]string{"token": "s3cret-token"}}
	m := load(t, rt, "appview/internal/service/plugins/wasm/testdata/bad", wasm.ModuleOptions{Name: "bad", Env: e})
	ctx := context.Background()
	call := func(fn, in string) string {
		t.Helper()
		out, err := m.CallFunction(ctx, fn, json.RawMessage(in))
		if err != nil {
			t.Fatalf("%s: %v", fn, err)
		}
		return string(out)
	}
	if got := call("secret", `"token"`); got != `{"set":true,"value":"s3cret-token"}` {
		t.Fatalf("secret: %s", got)
	}
	if got := call("secret", `"missing"`); got != `{"set":false,"value":""}` {
		t.Fatalf("missing secret: %s", got)
	}
	if got := call("config", `null`); got != `{"words":["darn","heck"]}` {
		t.Fatalf("config: %s", got)
	}
	var now int64
	if err := json.Unmarshal([]byte(call("now", "null")), &now); err != nil || time.Since(time.UnixMilli(now)).Abs() > time.Minute {
		t.Fatalf("now: %d %v", now, err)
	}
	call("log", `"hello"`)
	if len(e.logs) != 1 || e.logs[0] != `warn:"hello"` {
		t.Fatalf("logs: %v", e.logs)
	}
	if _, err := m.CallFunction(ctx, "fail", nil); !wasm.IsKind(err, wasm.ErrPlugin) || !strings.Contains(err.Error(), "refused politely") {
		t.Fatalf("plugin error: %v", err)
	}
}

func TestHTTP(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("pong"))
	}))
	defer srv.Close()
	rt := newRuntime(t, wasm.Limits{})
	ctx := context.Background()
	bin := plugintest.Build(t, "appview/internal/service/plugins/wasm/testdata/bad")
	open := func(hosts []string, client *http.Client) *wasm.Module {
		m, err := rt.Load(ctx, bin, wasm.ModuleOptions{Name: "net", AllowedHosts: hosts, HTTPClient: client})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	in, _ := json.Marshal(srv.URL + "/ping")

	// Declared host, a client that may reach loopback: the answer.
	out, err := open([]string{"127.0.0.1"}, srv.Client()).CallFunction(ctx, "get", in)
	if err != nil || string(out) != `{"body":"pong","status":200}` {
		t.Fatalf("allowed: %s %v", out, err)
	}
	// Undeclared host: refused before any request.
	_, err = open([]string{"example.com"}, srv.Client()).CallFunction(ctx, "get", in)
	if !wasm.IsKind(err, wasm.ErrPlugin) || !strings.Contains(err.Error(), `host "127.0.0.1" is not among the manifest's allowed_hosts`) {
		t.Fatalf("undeclared host: %v", err)
	}
	// Declared, but a private address through the guarded client.
	guarded := netguard.NewClient(netguard.Options{}, 5*time.Second)
	_, err = open([]string{"127.0.0.1"}, guarded).CallFunction(ctx, "get", in)
	if !wasm.IsKind(err, wasm.ErrPlugin) || !strings.Contains(err.Error(), "request failed") {
		t.Fatalf("private address: %v", err)
	}
}

func TestHostAllowed(t *testing.T) {
	for _, c := range []struct {
		host string
		want bool
	}{
		{"api.example.com", true}, {"API.Example.com.", true}, {"x.cdn.example.org", true},
		{"cdn.example.org", false}, {"example.com", false}, {"evil-api.example.com", false},
	} {
		if got := wasm.HostAllowed([]string{"api.example.com", "*.cdn.example.org"}, c.host); got != c.want {
			t.Errorf("%s: %v", c.host, got)
		}
	}
}

func TestBadModules(t *testing.T) {
	rt := newRuntime(t, wasm.Limits{CallTimeout: 20 * time.Second, MemoryPages: 1024, MaxResult: 1 << 20})
	e := &env{secrets: map[string]string{"token": "s3cret-token"}}
	m := load(t, rt, "appview/internal/service/plugins/wasm/testdata/bad", wasm.ModuleOptions{Name: "bad", Env: e})
	other := load(t, rt, "examples/plugins/wordfilter", wasm.ModuleOptions{Name: "word-filter", Env: e})
	ctx := context.Background()
	for _, c := range []struct {
		name, export, fn string
		kind             wasm.ErrorKind
		msg              string
	}{
		{"trap", wasm.ExportCall, "panic", wasm.ErrTrap, "lv_call trapped: panic: deliberate"},
		{"infinite loop", wasm.ExportCall, "loop", wasm.ErrTimeout, "lv_call did not finish before the deadline"},
		{"unbounded allocation", wasm.ExportCall, "alloc", wasm.ErrMemory, "ran out of memory (limit 1024 pages"},
		{"garbage to a host function", wasm.ExportCall, "garbage", wasm.ErrProtocol, "lexview.secret: 524288 bytes at 2147483632 are outside memory"},
		{"short result buffer", wasm.ExportCall, "short-buffer", wasm.ErrProtocol, "lexview.result: the buffer holds 11 bytes, the staged result is 12"},
		{"giant result", "lv_giant", "", wasm.ErrProtocol, "over the 1048576-byte limit"},
		{"malformed result", "lv_malformed", "", wasm.ErrProtocol, "lv_malformed returned malformed JSON"},
		{"result outside memory", "lv_outside", "", wasm.ErrProtocol, "returned a result outside memory"},
		{"missing export", "lv_auth_start", "", wasm.ErrProtocol, "the module does not export lv_auth_start"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := heapInuse()
			start := time.Now()
			callCtx := ctx
			if c.kind == wasm.ErrTimeout { // the caller's shorter deadline wins
				var cancel context.CancelFunc
				callCtx, cancel = context.WithTimeout(ctx, 300*time.Millisecond)
				defer cancel()
			}
			var err error
			if c.fn != "" {
				_, err = m.CallFunction(callCtx, c.fn, nil)
			} else {
				_, err = m.Invoke(callCtx, c.export, []byte("null"))
			}
			if !wasm.IsKind(err, c.kind) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("got %v, want kind %d with %q", err, c.kind, c.msg)
			}
			if time.Since(start) > 30*time.Second {
				t.Fatalf("took %v", time.Since(start))
			}
			// The broken instance is gone, its memory with it (the
			// allocation case grew to 64 MiB); the plugin and others still
			// work.
			// The instance is closed as its call fails, but the runtime
			// may let go of its memory a moment later: give it a few
			// seconds before calling it kept.
			after := heapInuse()
			for deadline := time.Now().Add(5 * time.Second); after > before+16<<20 && time.Now().Before(deadline); {
				time.Sleep(50 * time.Millisecond)
				after = heapInuse()
			}
			if after > before+16<<20 {
				t.Fatalf("heap grew from %d to %d bytes", before, after)
			}
			if m.Live() != m.Idle() {
				t.Fatalf("live %d idle %d: a failed instance was kept", m.Live(), m.Idle())
			}
			if out, err := m.CallFunction(ctx, "echo", json.RawMessage(`{"a":1}`)); err != nil || string(out) != `{"a":1}` {
				t.Fatalf("after %s: %s %v", c.name, out, err)
			}
			if _, err := other.CallFunction(ctx, "check", json.RawMessage(`{"text":"x"}`)); err != nil {
				t.Fatalf("other plugin after %s: %v", c.name, err)
			}
		})
	}
	// Oversized input is refused before it reaches the module.
	if _, err := m.CallFunction(ctx, "echo", json.RawMessage(`"`+strings.Repeat("x", 2<<20)+`"`)); !wasm.IsKind(err, wasm.ErrProtocol) {
		t.Fatalf("oversized input: %v", err)
	}
}

func heapInuse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

func TestLoadRefusesNonModules(t *testing.T) {
	rt := newRuntime(t, wasm.Limits{})
	ctx := context.Background()
	if _, err := rt.Load(ctx, []byte("not wasm"), wasm.ModuleOptions{Name: "x"}); err == nil || !strings.Contains(err.Error(), "plugin x: the module does not compile") {
		t.Fatalf("garbage: %v", err)
	}
	// A valid module without the ABI's allocator.
	empty := []byte{0, 'a', 's', 'm', 1, 0, 0, 0}
	if _, err := rt.Load(ctx, empty, wasm.ModuleOptions{Name: "x"}); err == nil || !strings.Contains(err.Error(), "does not export lv_alloc") {
		t.Fatalf("empty module: %v", err)
	}
}
