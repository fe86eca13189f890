package main

import (
	"fmt"

	"github.com/lexview/lexview/scripts/internal/benchkit"
)

// report holds one backend's results by server and kind.
type report struct {
	backend string
	plan    *plan
	kinds   []kind
	results map[string]map[string]*benchkit.Result
	missing map[string]string // kind → why it was not measured
}

// print writes the backend's table, verdicts and what was not measured.
func (r *report) print(o options) {
	lv, bl := r.results["lexview"], r.results["baseline"]
	fmt.Printf("\n%s, %d connections: Lexview against the tuned baseline; %v\n", r.backend, o.conns, o.spec)
	fmt.Printf("%-18s %11s %11s %6s %10s %10s %10s %10s %6s  %s\n", "kind", "lexview r/s", "basel. r/s", "ratio",
		"lexv. p50", "basel. p50", "lexv. p99", "basel. p99", "p99 ×", "targets")
	for _, k := range r.kinds {
		a, b := lv[k.name], bl[k.name]
		if a == nil || b == nil {
			fmt.Printf("%-18s not measured: %s\n", k.name, r.missing[k.name])
			continue
		}
		ratio := a.RPS() / b.RPS()
		p99 := float64(a.Pct(99)) / float64(b.Pct(99))
		fmt.Printf("%-18s %11.0f %11.0f %6.3f %10s %10s %10s %10s %6.2f  %s\n", k.name, a.RPS(), b.RPS(), ratio,
			benchkit.Ms(a.Pct(50)), benchkit.Ms(b.Pct(50)), benchkit.Ms(a.Pct(99)), benchkit.Ms(b.Pct(99)), p99,
			benchkit.Verdict(ratio >= targetRatio && p99 <= targetP99Ratio))
	}
	fmt.Printf("(targets: ratio >= %.2f and p99 × <= %.2f)\n", targetRatio, targetP99Ratio)
	for _, k := range r.kinds {
		fmt.Printf("  %-18s %s\n", k.name, k.what(r.plan))
	}
	for name, runs := range r.results {
		for kind, res := range runs {
			if res.Errors > 0 {
				fmt.Printf("note: %s %s had %d errors; first: %s\n", name, kind, res.Errors, res.FirstErr)
			}
		}
	}
}
