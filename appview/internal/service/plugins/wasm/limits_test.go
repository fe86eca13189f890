package wasm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lexview/lexview/appview/internal/service/plugins/wasm"
)

const badPlugin = "appview/internal/service/plugins/wasm/testdata/bad"

// TestDeadlineUnderMemoryGrowth: calls that allocate 16 MiB at every step
// answer ErrTimeout within 10% of their deadline, even four at once on a
// small machine; the instances they leave running still hold their pool
// slots and are closed when they stop, their memory given back.
//
// Before the calls ran on goroutines of their own, these calls answered
// up to 1.65 s late on a 2 s deadline: a growth copied the whole memory
// on the Go heap, and the collections it caused held every goroutine,
// the one that would stop the module included. The deadline is long and
// the slack generous so that a loaded machine does not fail the test;
// the old overshoot is several times the slack.
func TestDeadlineUnderMemoryGrowth(t *testing.T) {
	const (
		deadline = 2 * time.Second
		slack    = 250 * time.Millisecond // scheduling on a loaded machine
		calls    = 4
	)
	rt := newRuntime(t, wasm.Limits{MaxMemory: 4 << 30, MemoryPages: 4096})
	var mods []*wasm.Module
	for _, name := range []string{"a", "b"} {
		m := load(t, rt, badPlugin, wasm.ModuleOptions{Name: name, Env: &env{}})
		// One instance per call, started before the clock runs.
		warm(t, m, calls)
		mods = append(mods, m)
	}
	var wg sync.WaitGroup
	for i := range calls * len(mods) {
		m := mods[i%len(mods)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			start := time.Now()
			_, err := m.CallFunction(ctx, "grow", json.RawMessage(`{"step":32,"keep":1}`))
			took := time.Since(start)
			if !wasm.IsKind(err, wasm.ErrTimeout) {
				t.Errorf("call %d: %v, want a timeout", i, err)
			}
			if limit := deadline + deadline/10 + slack; took > limit {
				t.Errorf("call %d answered after %v, over %v", i, took, limit)
			}
			t.Logf("call %d answered after %v", i, took)
		}()
	}
	wg.Wait()
	for _, m := range mods {
		if live := m.Live(); live > rt.Limits().PoolSize {
			t.Fatalf("%d instances live, over the pool size", live)
		}
	}
	eventually(t, "the timed-out instances closed and their memory given back", func() bool {
		return mods[0].Live()+mods[1].Live() == 0 && rt.MemoryInUse() == 0
	})
	if out, err := mods[0].CallFunction(context.Background(), "echo", json.RawMessage(`1`)); err != nil || string(out) != "1" {
		t.Fatalf("after the timeouts: %s %v", out, err)
	}
}

// warm starts n instances of m (n concurrent calls that each wait for
// the others).
func warm(t *testing.T, m *wasm.Module, n int) {
	t.Helper()
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = m.CallFunction(context.Background(), "echo", json.RawMessage(`1`))
		}()
	}
	wg.Wait()
}

// TestMemoryCeiling: the plugins' memory ceiling holds across plugins. A
// plugin's instances get at most half of it; the plugins together get no
// more than all of it; idle instances are closed to make room; every
// byte is given back when the instances close.
func TestMemoryCeiling(t *testing.T) {
	rt := newRuntime(t, wasm.Limits{MaxMemory: 96 << 20, KeepMemory: 64 << 20, IdleTimeout: time.Hour, CallTimeout: time.Minute})
	a := load(t, rt, badPlugin, wasm.ModuleOptions{Name: "a", Env: &env{}})
	b := load(t, rt, badPlugin, wasm.ModuleOptions{Name: "b", Env: &env{}})
	c := load(t, rt, badPlugin, wasm.ModuleOptions{Name: "c", Env: &env{}})
	ctx := context.Background()
	hold := func(m *wasm.Module, mib int) error {
		_, err := m.CallFunction(ctx, "hold", json.RawMessage(fmt.Sprintf(`{"mib":%d}`, mib)))
		return err
	}
	// spin holds mib MiB in a call that runs until stop.
	var running sync.WaitGroup
	stop, cancel := context.WithCancel(ctx)
	defer func() { cancel(); running.Wait() }()
	spin := func(m *wasm.Module, mib int) {
		t.Helper()
		running.Add(1)
		go func() {
			defer running.Done()
			_, _ = m.CallFunction(stop, "hold", json.RawMessage(fmt.Sprintf(`{"mib":%d,"spin":true}`, mib)))
		}()
		eventually(t, fmt.Sprintf("a call holding %d MiB", mib), func() bool { return m.MemoryInUse() >= int64(mib)<<20 })
	}
	wantMemory := func(err error, why string) {
		t.Helper()
		if !wasm.IsKind(err, wasm.ErrMemory) || !strings.Contains(err.Error(), why) {
			t.Fatalf("got %v, want ErrMemory saying %q", err, why)
		}
	}

	// Idle instances holding memory are closed to make room: a and b
	// keep about 34 MiB each, c needs as much.
	if err := hold(a, 30); err != nil {
		t.Fatal(err)
	}
	if err := hold(b, 30); err != nil {
		t.Fatal(err)
	}
	if a.Idle() != 1 || b.Idle() != 1 || rt.MemoryInUse() < 60<<20 {
		t.Fatalf("idle %d and %d, %d bytes in use: want both instances kept", a.Idle(), b.Idle(), rt.MemoryInUse())
	}
	if err := hold(c, 30); err != nil {
		t.Fatalf("with only idle instances over the ceiling: %v", err)
	}
	if a.Idle()+b.Idle() != 0 || c.Idle() != 1 {
		t.Fatalf("idle %d, %d and %d: want a's and b's idle instances closed", a.Idle(), b.Idle(), c.Idle())
	}

	// A plugin's instances get at most half the ceiling (48 MiB)...
	spin(a, 30)
	wantMemory(hold(a, 20), "half the plugins' memory ceiling (plugins.max_memory_bytes)")
	// ... and the plugins together no more than the ceiling, whatever
	// their shares: with a and b each holding about 34 MiB in a running
	// call, c cannot get 34 more.
	spin(b, 30)
	wantMemory(hold(c, 30), "the plugins' memory ceiling of 100663296 bytes is reached (plugins.max_memory_bytes)")
	if used := rt.MemoryInUse(); used > 96<<20 {
		t.Fatalf("%d bytes in use, over the ceiling", used)
	}
	// A plugin within its share and the ceiling still runs.
	if out, err := c.CallFunction(ctx, "echo", json.RawMessage(`1`)); err != nil || string(out) != "1" {
		t.Fatalf("a small call beside them: %s %v", out, err)
	}

	// Every byte comes back when the instances close.
	cancel()
	running.Wait()
	for _, m := range []*wasm.Module{a, b, c} {
		if err := m.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the memory given back", func() bool { return rt.MemoryInUse() == 0 })
}

// TestIdleInstancesGiveMemoryBack: an instance left holding more than
// KeepMemory is closed after its call, and an idle one after
// IdleTimeout; their memory returns to the budget.
func TestIdleInstancesGiveMemoryBack(t *testing.T) {
	rt := newRuntime(t, wasm.Limits{KeepMemory: 16 << 20, IdleTimeout: 200 * time.Millisecond})
	m := load(t, rt, badPlugin, wasm.ModuleOptions{Name: "bad", Env: &env{}})
	ctx := context.Background()
	if _, err := m.CallFunction(ctx, "hold", json.RawMessage(`{"mib":20}`)); err != nil {
		t.Fatal(err)
	}
	if m.Live() != 0 || rt.MemoryInUse() != 0 {
		t.Fatalf("live %d, %d bytes in use: want the large instance closed", m.Live(), rt.MemoryInUse())
	}
	if _, err := m.CallFunction(ctx, "echo", json.RawMessage(`1`)); err != nil {
		t.Fatal(err)
	}
	if m.Idle() != 1 || rt.MemoryInUse() == 0 {
		t.Fatalf("idle %d, %d bytes in use: want the small instance kept", m.Idle(), rt.MemoryInUse())
	}
	eventually(t, "the idle instance closed", func() bool { return m.Live() == 0 && rt.MemoryInUse() == 0 })
}

// TestSetMaxMemory: the ceiling changes at once; lowering it closes the
// idle instances over it.
func TestSetMaxMemory(t *testing.T) {
	rt := newRuntime(t, wasm.Limits{KeepMemory: 128 << 20, IdleTimeout: time.Hour})
	m := load(t, rt, badPlugin, wasm.ModuleOptions{Name: "bad", Env: &env{}})
	ctx := context.Background()
	if rt.MaxMemory() != wasm.DefaultMaxMemory {
		t.Fatalf("default ceiling %d", rt.MaxMemory())
	}
	if _, err := m.CallFunction(ctx, "hold", json.RawMessage(`{"mib":70}`)); err != nil {
		t.Fatal(err)
	}
	rt.SetMaxMemory(64 << 20)
	if rt.MaxMemory() != 64<<20 || m.Idle() != 0 || rt.MemoryInUse() != 0 {
		t.Fatalf("ceiling %d, idle %d, %d bytes in use", rt.MaxMemory(), m.Idle(), rt.MemoryInUse())
	}
	if _, err := m.CallFunction(ctx, "hold", json.RawMessage(`{"mib":40}`)); !wasm.IsKind(err, wasm.ErrMemory) {
		t.Fatalf("40 MiB over a 32 MiB share: %v", err)
	}
	rt.SetMaxMemory(0)
	if rt.MaxMemory() != wasm.DefaultMaxMemory {
		t.Fatalf("restored ceiling %d", rt.MaxMemory())
	}
}

// eventually waits up to 10 s for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
