package benchkit

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// Runner measures a server with the benchmark's timing: each measured
// run is Duration/Rounds long after Warmup of unmeasured load, and a
// server and kind are measured in Rounds rounds alternating with the
// other servers, so that changes in the machine's background load fall
// on all alike.
type Runner struct {
	Duration time.Duration // measured load per server and kind, over all rounds
	Warmup   time.Duration // unmeasured load before each round
	Rounds   int
	// ProfDir, when set, receives a CPU profile of round 0 of every
	// measured run (BACKEND-SERVER-KIND.pprof) and a goroutine dump from
	// its middle.
	ProfDir string
}

// Measure warms the server up, then loads it with urls over conns
// connections for one round's share of r.Duration, prints a line of
// figures and returns them.
func (r Runner) Measure(c *Child, backend, server, kind string, urls []string, conns, round int) (*Result, error) {
	ld := NewLoader(conns)
	defer ld.Close()
	if r.Warmup > 0 {
		ld.Run(r.Warmup, urls)
	}
	duration := r.Duration / time.Duration(r.Rounds)
	prof := ""
	if r.ProfDir != "" && round == 0 {
		prof = filepath.Join(r.ProfDir, backend+"-"+server+"-"+kind+".pprof")
		if err := c.Command("start-profile " + prof); err != nil {
			return nil, err
		}
	}
	var res *Result
	if prof != "" {
		done := make(chan struct{})
		go func() { res = ld.Run(duration, urls); close(done) }()
		time.Sleep(duration / 2)
		if err := c.Command("goroutines " + strings.TrimSuffix(prof, ".pprof") + ".goroutines.txt"); err != nil {
			return nil, err
		}
		<-done
		if err := c.Command("stop-profile"); err != nil {
			return nil, err
		}
	} else {
		res = ld.Run(duration, urls)
	}
	fmt.Printf("%-9s %-18s %8.0f req/s  p50 %s  p99 %s  %6.0f bytes/answer  errors %d\n",
		server, kind, res.RPS(), Ms(res.Pct(50)), Ms(res.Pct(99)), res.BytesPerResp(), res.Errors)
	if res.Errors > 0 {
		fmt.Printf("          first error: %s\n", res.FirstErr)
	}
	return res, nil
}

// Verdict renders whether a target is met.
func Verdict(ok bool) string {
	if ok {
		return "MET"
	}
	return "NOT MET"
}

// Ms renders a latency in milliseconds.
func Ms(d time.Duration) string { return fmt.Sprintf("%.3fms", float64(d)/float64(time.Millisecond)) }
