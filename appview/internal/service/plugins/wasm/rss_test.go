package wasm_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lexview/lexview/appview/internal/service/plugins/wasm"
	"github.com/lexview/lexview/appview/internal/testing/plugintest"
)

// BenchmarkHostileRSS runs a hostile sequence over three plugins (each
// fills its pool with instances holding 100 MiB, runs calls past their
// deadline and out of memory, fills its pool again with instances
// holding 100 MiB, then 24 MiB) and reports the process's anonymous
// resident memory (RssAnon) before, right after, after a garbage
// collection, after the idle instances were closed (IdleTimeout), after
// debug.FreeOSMemory and after the runtime closed. Run it with
//
//	go test ./appview/internal/service/plugins/wasm -run X -bench HostileRSS -benchtime 1x
func BenchmarkHostileRSS(b *testing.B) {
	ctx := context.Background()
	bin := plugintest.Build(b, "appview/internal/service/plugins/wasm/testdata/bad")
	for b.Loop() {
		rt, err := wasm.New(ctx, wasm.Options{Cache: cache, Limits: wasm.Limits{IdleTimeout: 2 * time.Second}})
		if err != nil {
			b.Fatal(err)
		}
		var mods []*wasm.Module
		for _, name := range []string{"a", "b", "c"} {
			m, err := rt.Load(ctx, bin, wasm.ModuleOptions{Name: name, Env: &env{}})
			if err != nil {
				b.Fatal(err)
			}
			mods = append(mods, m)
		}
		runtime.GC()
		debug.FreeOSMemory()
		before := rssAnon(b)
		each := func(fn, in string, timeout time.Duration) {
			var wg sync.WaitGroup
			for _, m := range mods {
				for range 4 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						cctx, cancel := context.WithTimeout(ctx, timeout)
						defer cancel()
						_, _ = m.CallFunction(cctx, fn, json.RawMessage(in))
					}()
				}
			}
			wg.Wait()
		}
		each("hold", `{"mib":100}`, 10*time.Second)
		first := rssAnon(b)
		each("grow", `{"step":16,"keep":1}`, 500*time.Millisecond)
		each("grow", `{"step":16,"keep":8}`, 10*time.Second)
		each("hold", `{"mib":100}`, 10*time.Second)
		each("hold", `{"mib":24}`, 10*time.Second)
		after := rssAnon(b)
		runtime.GC()
		time.Sleep(time.Second)
		gc := rssAnon(b)
		time.Sleep(3 * time.Second)
		idle := rssAnon(b)
		debug.FreeOSMemory()
		freed := rssAnon(b)
		_ = rt.Close(ctx)
		runtime.GC()
		debug.FreeOSMemory()
		closed := rssAnon(b)
		b.ReportMetric(float64(before)/(1<<20), "MiB-before")
		b.ReportMetric(float64(first)/(1<<20), "MiB-after-first-round")
		b.ReportMetric(float64(after)/(1<<20), "MiB-after")
		b.ReportMetric(float64(gc)/(1<<20), "MiB-after-gc")
		b.ReportMetric(float64(idle)/(1<<20), "MiB-after-idle")
		b.ReportMetric(float64(freed)/(1<<20), "MiB-after-freeosmemory")
		b.ReportMetric(float64(closed)/(1<<20), "MiB-runtime-closed")
		b.ReportMetric(float64(procStatus(b, "VmHWM"))/(1<<20), "MiB-peak-rss")
	}
}

// rssAnon reads RssAnon from /proc/self/status (Linux), in bytes.
func rssAnon(tb testing.TB) int64 { return procStatus(tb, "RssAnon") }

// procStatus reads the field key (in kB) of /proc/self/status, in bytes.
func procStatus(tb testing.TB, key string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		tb.Skip("no /proc/self/status")
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), key+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	tb.Skip("no " + key)
	return 0
}
