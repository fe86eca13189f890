package main

import (
	"fmt"
	"time"
)

// backendResult is the phases of one backend; a skipped phase has no name.
// The index build phase has two windows: buildBase before the declaration
// and build from it until the indexes are ready.
type backendResult struct{ throughput, steady, backfill, buildBase, build phaseResult }

// phases lists the phases that ran, in order.
func (res backendResult) phases() []phaseResult {
	var out []phaseResult
	for _, p := range []phaseResult{res.throughput, res.steady, res.backfill, res.buildBase, res.build} {
		if p.name != "" {
			out = append(out, p)
		}
	}
	return out
}

// title is a phase's column heading.
func (res phaseResult) title(opt options) string {
	switch res.name {
	case "steady":
		return fmt.Sprintf("steady %d ev/s", opt.steadyRate)
	case "backfill":
		return "live + backfill"
	case "build-base":
		return "live, before build"
	case "build":
		return "live + index build"
	}
	return res.name
}

// changes is what the service wrote in the window: live events, records
// backfilled and records an index build processed.
func (res phaseResult) changes() float64 {
	return res.committed + res.backfillRecords + float64(res.buildRecords)
}

// atSteadyRate reports whether the phase's live events arrived at
// -steady-rate (its CPU is shown as % of one core).
func (res phaseResult) atSteadyRate() bool {
	return res.name == "steady" || res.name == "build-base" || res.name == "build"
}

// workload is what a phase put through the service.
func (res phaseResult) workload(opt options) string {
	switch res.name {
	case "steady":
		return fmt.Sprintf("%s measured", opt.steadyDuration)
	case "backfill":
		return fmt.Sprintf("%d rec + %d ev/s", opt.backfillRecords, opt.steadyRate)
	case "build-base":
		return fmt.Sprintf("%d ev/s, %s", opt.steadyRate, opt.buildBaseline)
	case "build":
		return fmt.Sprintf("%d ev/s, until ready", opt.steadyRate)
	}
	return fmt.Sprintf("%d events at once", res.events)
}

// printBackend prints one backend's phases side by side.
func printBackend(backend string, res backendResult, opt options, w workload) {
	who := "the service process (child `appview serve`)"
	if opt.inProcess {
		who = "the benchmark process (in-process service + stand-ins + generated stream)"
	}
	fmt.Printf("\n== %s ==  (service CPU and memory: %s)\n", backend, who)
	phases := res.phases()
	line := func(label string, cell func(p phaseResult) string) {
		fmt.Printf("%-44s", label)
		for _, p := range phases {
			fmt.Printf(" %-22s", cell(p))
		}
		fmt.Println()
	}
	line("", func(p phaseResult) string { return p.title(opt) })
	line("workload", func(p phaseResult) string { return p.workload(opt) })
	line("live events committed in the measured window", func(p phaseResult) string { return fmt.Sprintf("%.0f", p.committed) })
	line("wall time of the window", func(p phaseResult) string { return fmt.Sprintf("%.1f s", p.wall.Seconds()) })
	line("live events/s committed", func(p phaseResult) string { return thousands(p.rate) })
	line("events/s from 10% to 90% committed", func(p phaseResult) string {
		if p.sustained > 0 {
			return thousands(p.sustained)
		}
		return "-"
	})
	if res.backfill.name != "" {
		line("backfill records indexed / records/s", func(p phaseResult) string {
			if p.name != "backfill" {
				return "-"
			}
			return fmt.Sprintf("%.0f / %s", p.backfillRecords, thousands(p.backfillRate))
		})
	}
	if res.build.name != "" {
		line("index build: records processed / duration", func(p phaseResult) string {
			if p.name != "build" {
				return "-"
			}
			return fmt.Sprintf("%s / %.1f s", thousands(float64(p.buildRecords)), p.buildSeconds)
		})
		line("index build: records/s", func(p phaseResult) string {
			if p.name != "build" {
				return "-"
			}
			return thousands(p.buildRate)
		})
	}
	line("live commit lag p50 / p99", func(p phaseResult) string {
		return seconds(p.p50, false) + " / " + seconds(p.p99, p.p99Inf)
	})
	line("mean batch / largest write queue seen", func(p phaseResult) string {
		return fmt.Sprintf("%.0f / %.0f", p.batchMean, p.maxQueue)
	})
	line("batch writer busy writing (share of the window)", func(p phaseResult) string {
		return fmt.Sprintf("%.0f%%", 100*p.writerBusy)
	})
	line("service CPU (utime+stime)", func(p phaseResult) string { return fmt.Sprintf("%.1f s", p.cpu.Seconds()) })
	line("  = cores used (steady: % of one core)", func(p phaseResult) string {
		if p.atSteadyRate() {
			return fmt.Sprintf("%.1f%%", 100*p.cores())
		}
		return fmt.Sprintf("%.2f", p.cores())
	})
	line("  = CPU per event or backfilled/built record", func(p phaseResult) string {
		changes := p.changes()
		if changes <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.0f µs", float64(p.cpu.Microseconds())/changes)
	})
	line("  service writes per event (wchar)", func(p phaseResult) string {
		changes := p.changes()
		if changes <= 0 || p.written <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f KB", float64(p.written)/changes/1000)
	})
	line("RSS at the end / peak (VmHWM)", func(p phaseResult) string { return mb(p.rss) + " / " + mb(p.hwm) })
	line("anonymous RSS peak (RssAnon, 250 ms reads)", func(p phaseResult) string {
		if p.anonPeak == 0 {
			return "-"
		}
		return mb(p.anonPeak)
	})
	if !opt.inProcess {
		line("benchmark process CPU (stand-ins, scrapes)", func(p phaseResult) string { return cores(p.benchCPU, p.wall) })
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
		printNotes(p, opt)
	}
	printCurve(res.throughput, opt, w)
}

// printCurve prints the throughput phase's committed events/s per
// -curve-step events, as the database grows.
func printCurve(p phaseResult, opt options, w workload) {
	if len(p.curve) == 0 {
		return
	}
	fmt.Printf("throughput: events/s per %s events committed (the database held %s records before the phase)\n",
		thousands(float64(opt.curveStep)), thousands(float64(w.liveAfterPrefill)))
	for i, c := range p.curve {
		if i > 0 && i%5 == 0 {
			fmt.Println()
		}
		fmt.Printf("  %s–%s: %-8s", short(c.from), short(c.to), thousands(c.rate))
	}
	fmt.Println()
}

// short renders an event count briefly: 1.2M, 300k, 999.
func short(n int) string {
	switch {
	case n >= 1_000_000 && n%100_000 == 0:
		return fmt.Sprintf("%gM", float64(n)/1e6)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}

// printNotes prints what a phase's column cannot show.
func printNotes(p phaseResult, opt options) {
	switch {
	case p.complete:
	case p.name == "backfill":
		fmt.Printf("  %s: the job did NOT index exactly the %d records listed\n", p.name, opt.backfillRecords)
	case p.name == "build":
		fmt.Printf("  %s: the indexes were NOT all ready within -timeout %s: the window, its lag and the records/s end there\n", p.name, opt.timeout)
	default:
		fmt.Printf("  %s: NOT every event was committed before the deadline\n", p.name)
	}
	if p.rejected > 0 {
		fmt.Printf("  %s: %.0f events rejected by validation\n", p.name, p.rejected)
	}
	if p.publish > 0 {
		fmt.Printf("  %s: handing the %d events to the stand-in (PublishRaw, 20k per call, concurrent with ingestion) took %s\n", p.name, p.events, p.publish.Round(time.Millisecond))
	}
	if p.recordBytes > 0 {
		fmt.Printf("  %s: %d records of %.0f bytes of JSON on average, in %d repositories on %d PDS stand-ins, listed %d per page\n",
			p.name, opt.backfillRecords, p.recordBytes, backfillHosts*backfillReposPerHost, backfillHosts, backfillPageSize)
	}
	for _, b := range p.indexes {
		took := "not ready"
		if b.took > 0 {
			took = fmt.Sprintf("ready %.1f s after its declaration", b.took.Seconds())
		}
		fmt.Printf("  %s: %s: %s of %s records processed, %s\n", p.name, b.spec, thousands(float64(b.done)), thousands(float64(b.total)), took)
	}
	if p.name == "build" {
		fmt.Printf("  %s: %d live events published in the window\n", p.name, p.events)
	}
	if p.liveRanOut {
		fmt.Printf("  %s: the live stream (%d events) ran out before the job completed: the end of the window had no live load\n", p.name, p.events)
	}
	if p.profilePath != "" {
		fmt.Printf("  %s: CPU profile %s\n", p.name, p.profilePath)
	}
}

func cores(d, wall time.Duration) string {
	if wall <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f s = %.2f cores", d.Seconds(), d.Seconds()/wall.Seconds())
}

func printSummary(opt options, results map[string]backendResult) {
	fmt.Printf("\n== targets (issue 4; this machine: %d cores) ==\n", numCPU())
	fmt.Printf("%-44s", "target")
	for _, b := range opt.backends {
		fmt.Printf(" %-22s", b)
	}
	fmt.Println()
	// row prints a target's cell per backend: its value, whether it is
	// met, and whether it applies (the phase ran).
	row := func(label string, cell func(b string, res backendResult) (v string, pass, applies bool)) {
		fmt.Printf("%-44s", label)
		for _, b := range opt.backends {
			res, ok := results[b]
			if !ok {
				fmt.Printf(" %-22s", "(failed)")
				continue
			}
			v, pass, applies := cell(b, res)
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
	lagBelow := func(p phaseResult) (string, bool) { return seconds(p.p99, p.p99Inf), !p.p99Inf && p.p99 < targetP99 }
	row("ingest ≥ 10,000 ev/s sqlite, ≥ 5,000 pg", func(b string, res backendResult) (string, bool, bool) {
		tp := res.throughput
		return thousands(tp.rate) + "/s", tp.complete && tp.rate >= targetRate[b], true
	})
	row(fmt.Sprintf("at %d ev/s: CPU < 25%% of one core", opt.steadyRate), func(_ string, res backendResult) (string, bool, bool) {
		st := res.steady
		return fmt.Sprintf("%.1f%%", 100*st.cores()), st.cores() < targetSteadyCPU, st.name != ""
	})
	row(fmt.Sprintf("at %d ev/s: peak RSS < 300 MB", opt.steadyRate), func(_ string, res backendResult) (string, bool, bool) {
		return mb(res.steady.hwm), res.steady.hwm < targetRSS, res.steady.name != ""
	})
	row(fmt.Sprintf("at %d ev/s: p99 commit lag < 1 s", opt.steadyRate), func(_ string, res backendResult) (string, bool, bool) {
		v, pass := lagBelow(res.steady)
		return v, pass, res.steady.name != ""
	})
	row("at full throughput: p99 commit lag < 1 s", func(_ string, res backendResult) (string, bool, bool) {
		v, pass := lagBelow(res.throughput)
		return v, pass, true
	})
	row("burst: peak RssAnon < 250 MiB (issue 32)", func(_ string, res backendResult) (string, bool, bool) {
		tp := res.throughput
		return mb(tp.anonPeak), tp.anonPeak > 0 && tp.anonPeak < 250<<20, tp.anonPeak > 0
	})
	row("backfill ≥ 15,000 records/s", func(_ string, res backendResult) (string, bool, bool) {
		bf := res.backfill
		return thousands(bf.backfillRate) + "/s", bf.complete && bf.backfillRate >= targetBackfillRate, bf.name != ""
	})
	row("live p99 lag < 1 s while a backfill runs", func(_ string, res backendResult) (string, bool, bool) {
		v, pass := lagBelow(res.backfill)
		return v, pass, res.backfill.name != ""
	})
	row("index build: live p99 lag < 2 s (issue 32)", func(_ string, res backendResult) (string, bool, bool) {
		b := res.build
		v := fmt.Sprintf("%s, %s rec", seconds(b.p99, b.p99Inf), thousands(float64(b.buildRecords)))
		return v, b.complete && !b.p99Inf && b.p99 < targetBuildP99, b.name != ""
	})
	fmt.Println("\nLag is lexview_commit_lag_seconds: arrival at the service (WebSocket read) to commit, observed once per")
	fmt.Println("batch for its oldest change, so its quantiles are per batch and bound the per-event lag from above.")
	if opt.backfillRecords > 0 {
		fmt.Printf("Backfill: records indexed with source=\"backfill\" from job creation to completion (polled every 50 ms),\n"+
			"fetched from local PDS stand-ins while live events arrive at %d ev/s; the lag is that of the live events.\n", opt.steadyRate)
	}
	if len(opt.buildIndexes) > 0 {
		fmt.Printf("Index build (issue 32's target is a build over 1,000,000 records): live events at %d ev/s into a fresh service; the\n"+
			"window of -build-baseline before POST /admin/indexes and the window from it until every index is ready, one after the\n"+
			"other in the same process: the second differs by the build, by the indexes' upkeep (triggers keep them current for\n"+
			"every write from the declaration on) and by %s of growth. Records are the indexes' done (the build's pass over the\n"+
			"records stored before the declaration); the duration is the service's created_at to the last updated_at.\n", opt.steadyRate, opt.buildBaseline)
	}
	if opt.inProcess {
		fmt.Println("In-process mode: CPU and memory include the stand-ins and the generated stream; use child mode for the targets.")
	}
}
