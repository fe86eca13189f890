package main

import (
	"fmt"
	"time"
)

// printBackend prints one backend's phases side by side.
func printBackend(backend string, res [2]phaseResult, opt options) {
	who := "the service process (child `appview serve`)"
	if opt.inProcess {
		who = "the benchmark process (in-process service + stand-in + generated stream)"
	}
	fmt.Printf("\n== %s ==  (service CPU and memory: %s)\n", backend, who)
	phases := []phaseResult{res[0]}
	if res[1].name != "" {
		phases = append(phases, res[1])
	}
	header := fmt.Sprintf("%d events at once", res[0].events)
	fmt.Printf("%-44s %-22s", "", "throughput")
	if len(phases) > 1 {
		fmt.Printf(" %s", fmt.Sprintf("steady %d ev/s", opt.steadyRate))
	}
	fmt.Println()
	line := func(label string, cell func(p phaseResult) string) {
		fmt.Printf("%-44s", label)
		for _, p := range phases {
			fmt.Printf(" %-22s", cell(p))
		}
		fmt.Println()
	}
	line("workload", func(p phaseResult) string {
		if p.name == "steady" {
			return fmt.Sprintf("%s measured", opt.steadyDuration)
		}
		return header
	})
	line("events committed in the measured window", func(p phaseResult) string { return fmt.Sprintf("%.0f", p.committed) })
	line("wall time of the window", func(p phaseResult) string { return fmt.Sprintf("%.1f s", p.wall.Seconds()) })
	line("events/s committed", func(p phaseResult) string { return thousands(p.rate) })
	line("events/s from 10% to 90% committed", func(p phaseResult) string {
		if p.sustained > 0 {
			return thousands(p.sustained)
		}
		return "-"
	})
	line("commit lag p50 / p99", func(p phaseResult) string {
		return seconds(p.p50, false) + " / " + seconds(p.p99, p.p99Inf)
	})
	line("mean batch / largest write queue seen", func(p phaseResult) string {
		return fmt.Sprintf("%.0f / %.0f", p.batchMean, p.maxQueue)
	})
	line("service CPU (utime+stime)", func(p phaseResult) string { return fmt.Sprintf("%.1f s", p.cpu.Seconds()) })
	line("  = cores used (steady: % of one core)", func(p phaseResult) string {
		if p.name == "steady" {
			return fmt.Sprintf("%.1f%%", 100*p.cores())
		}
		return fmt.Sprintf("%.2f", p.cores())
	})
	line("  = CPU per event", func(p phaseResult) string {
		if p.committed <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.0f µs", float64(p.cpu.Microseconds())/p.committed)
	})
	line("RSS at the end / peak (VmHWM)", func(p phaseResult) string { return mb(p.rss) + " / " + mb(p.hwm) })
	if !opt.inProcess {
		line("benchmark process CPU (stand-in, scrapes)", func(p phaseResult) string { return cores(p.benchCPU, p.wall) })
	}
	if backend == "postgres" {
		line("PostgreSQL server processes CPU", func(p phaseResult) string {
			if p.dbCPU == 0 {
				return "(not measurable)"
			}
			return cores(p.dbCPU, p.wall)
		})
	}
	line("rest of the machine (other processes)", func(p phaseResult) string { return cores(p.othersCPU, p.wall) })
	for _, p := range phases {
		if !p.complete {
			fmt.Printf("  %s: NOT every event was committed before the deadline\n", p.name)
		}
		if p.rejected > 0 {
			fmt.Printf("  %s: %.0f events rejected by validation\n", p.name, p.rejected)
		}
		if p.publish > 0 {
			fmt.Printf("  %s: handing the %d events to the stand-in (PublishRaw, 20k per call, concurrent with ingestion) took %s\n", p.name, p.events, p.publish.Round(time.Millisecond))
		}
		if p.profilePath != "" {
			fmt.Printf("  %s: CPU profile %s\n", p.name, p.profilePath)
		}
	}
}

func cores(d, wall time.Duration) string {
	if wall <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f s = %.2f cores", d.Seconds(), d.Seconds()/wall.Seconds())
}

func printSummary(opt options, results map[string][2]phaseResult) {
	fmt.Printf("\n== targets (issue 4; this machine: %d cores) ==\n", numCPU())
	fmt.Printf("%-44s", "target")
	for _, b := range opt.backends {
		fmt.Printf(" %-22s", b)
	}
	fmt.Println()
	row := func(label string, cell func(b string, tp, st phaseResult) (string, bool, bool)) {
		fmt.Printf("%-44s", label)
		for _, b := range opt.backends {
			res, ok := results[b]
			if !ok {
				fmt.Printf(" %-22s", "(failed)")
				continue
			}
			v, pass, applies := cell(b, res[0], res[1])
			switch {
			case !applies:
				v = "-"
			case pass:
				v += "  ok"
			default:
				v += "  MISS"
			}
			fmt.Printf(" %-22s", v)
		}
		fmt.Println()
	}
	row("ingest ≥ 10,000 ev/s sqlite, ≥ 5,000 pg", func(b string, tp, _ phaseResult) (string, bool, bool) {
		return thousands(tp.rate) + "/s", tp.complete && tp.rate >= targetRate[b], true
	})
	steady := func(st phaseResult) bool { return st.name != "" }
	row(fmt.Sprintf("at %d ev/s: CPU < 25%% of one core", opt.steadyRate), func(_ string, _, st phaseResult) (string, bool, bool) {
		return fmt.Sprintf("%.1f%%", 100*st.cores()), st.cores() < targetSteadyCPU, steady(st)
	})
	row(fmt.Sprintf("at %d ev/s: peak RSS < 300 MB", opt.steadyRate), func(_ string, _, st phaseResult) (string, bool, bool) {
		return mb(st.hwm), st.hwm < targetRSS, steady(st)
	})
	row(fmt.Sprintf("at %d ev/s: p99 commit lag < 1 s", opt.steadyRate), func(_ string, _, st phaseResult) (string, bool, bool) {
		return seconds(st.p99, st.p99Inf), !st.p99Inf && st.p99 < targetP99, steady(st)
	})
	row("at full throughput: p99 commit lag < 1 s", func(_ string, tp, _ phaseResult) (string, bool, bool) {
		return seconds(tp.p99, tp.p99Inf), !tp.p99Inf && tp.p99 < targetP99, true
	})
	fmt.Println("\nLag is lexview_commit_lag_seconds: arrival at the service (WebSocket read) to commit, observed once per")
	fmt.Println("batch for its oldest change, so its quantiles are per batch and bound the per-event lag from above.")
	if opt.inProcess {
		fmt.Println("In-process mode: CPU and memory include the stand-in and the generated stream; use child mode for the targets.")
	}
}
