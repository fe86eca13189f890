package main

import (
	"fmt"
	"time"
)

// report holds one backend's results by server and run name.
type report struct {
	backend string
	results map[string]map[string]*result
}

// print writes the backend's tables and verdicts.
func (r *report) print(o options) {
	lv, bl := r.results["lexview"], r.results["baseline"]
	fmt.Printf("\n%s, %d connections: Lexview against the tuned baseline\n", r.backend, o.conns)
	fmt.Printf("%-6s %12s %12s %7s %11s %11s %7s  %s\n", "kind", "lexview r/s", "baseline r/s", "ratio", "lexview p99", "basel. p99", "p99 ×", "targets")
	for _, k := range o.kinds {
		a, b := lv[k], bl[k]
		if a == nil || b == nil {
			continue
		}
		ratio := a.rps() / b.rps()
		p99 := float64(a.pct(99)) / float64(b.pct(99))
		fmt.Printf("%-6s %12.0f %12.0f %7.3f %11s %11s %7.2f  %s\n", k, a.rps(), b.rps(), ratio, ms(a.pct(99)), ms(b.pct(99)), p99,
			verdict(ratio >= targetRatio && p99 <= targetP99Ratio))
	}
	fmt.Printf("(targets: ratio >= %.2f and p99 × <= %.2f)\n", targetRatio, targetP99Ratio)
	if sc, def := lv["scripted"], lv["default"]; sc != nil && def != nil {
		ratio := sc.rps() / def.rps()
		fmt.Printf("scripted/default first page: %.3f (%.0f vs %.0f req/s; target >= %.2f: %s)\n",
			ratio, sc.rps(), def.rps(), targetScriptedRatio, verdict(ratio >= targetScriptedRatio))
	}
	if sc, def := lv["scripted-c1"], lv["default-c1"]; sc != nil && def != nil {
		added := sc.pct(50) - def.pct(50)
		fmt.Printf("script p50 added, 1 connection: %s (%s vs %s; target < %s: %s)\n",
			ms(added), ms(sc.pct(50)), ms(def.pct(50)), ms(targetScriptP50), verdict(added < targetScriptP50))
	}
	if beside, alone := lv["small-beside"], lv["small-alone"]; beside != nil && alone != nil {
		change := float64(beside.pct(99))/float64(alone.pct(99)) - 1
		fmt.Printf("small collection p99 beside %s: %s, alone: %s, change %+.0f%% (target within ±%.0f%%: %s)\n",
			"the large one", ms(beside.pct(99)), ms(alone.pct(99)), 100*change, 100*targetIsolation,
			verdict(change <= targetIsolation && change >= -targetIsolation))
	}
	for name, runs := range r.results {
		for kind, res := range runs {
			if res.errors > 0 {
				fmt.Printf("note: %s %s had %d errors; first: %s\n", name, kind, res.errors, res.firstErr)
			}
		}
	}
}

func verdict(ok bool) string {
	if ok {
		return "MET"
	}
	return "NOT MET"
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3fms", float64(d)/float64(time.Millisecond)) }
