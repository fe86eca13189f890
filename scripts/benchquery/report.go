package main

import (
	"fmt"

	"github.com/lexview/lexview/scripts/internal/benchkit"
)

// report holds one backend's results by server and run name.
type report struct {
	backend string
	results map[string]map[string]*benchkit.Result
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
		ratio := a.RPS() / b.RPS()
		p99 := float64(a.Pct(99)) / float64(b.Pct(99))
		fmt.Printf("%-6s %12.0f %12.0f %7.3f %11s %11s %7.2f  %s\n", k, a.RPS(), b.RPS(), ratio, benchkit.Ms(a.Pct(99)), benchkit.Ms(b.Pct(99)), p99,
			benchkit.Verdict(ratio >= targetRatio && p99 <= targetP99Ratio))
	}
	fmt.Printf("(targets: ratio >= %.2f and p99 × <= %.2f)\n", targetRatio, targetP99Ratio)
	if sc, def := lv["scripted"], lv["default"]; sc != nil && def != nil {
		ratio := sc.RPS() / def.RPS()
		fmt.Printf("scripted/default first page: %.3f (%.0f vs %.0f req/s; target >= %.2f: %s)\n",
			ratio, sc.RPS(), def.RPS(), targetScriptedRatio, benchkit.Verdict(ratio >= targetScriptedRatio))
	}
	if sc, def := lv["scripted-c1"], lv["default-c1"]; sc != nil && def != nil {
		added := sc.Pct(50) - def.Pct(50)
		fmt.Printf("script p50 added, 1 connection: %s (%s vs %s; target < %s: %s)\n",
			benchkit.Ms(added), benchkit.Ms(sc.Pct(50)), benchkit.Ms(def.Pct(50)), benchkit.Ms(targetScriptP50), benchkit.Verdict(added < targetScriptP50))
	}
	if beside, alone := lv["small-beside"], lv["small-alone"]; beside != nil && alone != nil {
		change := float64(beside.Pct(99))/float64(alone.Pct(99)) - 1
		fmt.Printf("small collection p99 beside %s: %s, alone: %s, change %+.0f%% (target within ±%.0f%%: %s)\n",
			"the large one", benchkit.Ms(beside.Pct(99)), benchkit.Ms(alone.Pct(99)), 100*change, 100*targetIsolation,
			benchkit.Verdict(change <= targetIsolation && change >= -targetIsolation))
	}
	for name, runs := range r.results {
		for kind, res := range runs {
			if res.Errors > 0 {
				fmt.Printf("note: %s %s had %d errors; first: %s\n", name, kind, res.Errors, res.FirstErr)
			}
		}
	}
}
