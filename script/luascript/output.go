package luascript

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/lexview/lexview/script"
)

// Bounds of a script's output (log() and print()), so that a script in a
// loop cannot flood the process log or the event log:
//   - per run: the first maxLogEvents log() messages go to the event log,
//     and at most maxRunLines lines in all (log() and print()) are written
//     anywhere;
//   - per script (its trigger, across runs and VMs): lines pass a token
//     bucket of scriptLineRate lines per second with a burst of
//     scriptLineBurst.
//
// What either bound drops is counted, and reported once per
// dropReportEvery per script: a WARN line in the process log and a
// script.log entry in the event log naming the count.
const (
	maxLogEvents    = 20
	maxRunLines     = 200
	scriptLineRate  = 50
	scriptLineBurst = 200
	dropReportEvery = 10 * time.Second
	// maxOutputScripts bounds the scripts whose buckets are kept; past
	// it the buckets start afresh.
	maxOutputScripts = 4096
)

// outputLimiter holds the per-script buckets and dropped counts.
type outputLimiter struct {
	mu      sync.Mutex
	scripts map[string]*scriptOutput
	now     func() time.Time
}

type scriptOutput struct {
	bucket     *rate.Limiter
	dropped    int
	lastReport time.Time
}

func newOutputLimiter(now func() time.Time) *outputLimiter {
	return &outputLimiter{scripts: map[string]*scriptOutput{}, now: now}
}

func (o *outputLimiter) script(key string) *scriptOutput {
	s := o.scripts[key]
	if s == nil {
		if len(o.scripts) >= maxOutputScripts {
			clear(o.scripts)
		}
		s = &scriptOutput{bucket: rate.NewLimiter(scriptLineRate, scriptLineBurst)}
		o.scripts[key] = s
	}
	return s
}

// allow reports whether a line of the script key may be written now.
func (o *outputLimiter) allow(key string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.script(key).bucket.AllowN(o.now(), 1)
}

// dropped adds n lines dropped by the script key and returns the count
// to report now (0 while the last report is recent).
func (o *outputLimiter) dropped(key string, n int) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := o.script(key)
	s.dropped += n
	now := o.now()
	if s.dropped == 0 || now.Sub(s.lastReport) < dropReportEvery {
		return 0
	}
	n, s.dropped, s.lastReport = s.dropped, 0, now
	return n
}

// outputKey names the script of an invocation for the output bounds.
func outputKey(inv *script.Invocation) string {
	if inv == nil {
		return ""
	}
	return script.Trigger(inv.Kind, inv.Method)
}

// line reports whether the run may write one more line of output,
// counting it, or the drop.
func (v *vm) line() bool {
	r := v.run
	if r == nil {
		return false
	}
	if r.lines >= maxRunLines || !v.e.output.allow(outputKey(r.inv)) {
		r.dropped++
		return false
	}
	r.lines++
	return true
}

// reportDropped reports, at the end of a run, the lines its bounds
// dropped (at most once per dropReportEvery per script).
func (v *vm) reportDropped() {
	r := v.run
	if r == nil || r.inv == nil {
		return
	}
	key := outputKey(r.inv)
	n := v.e.output.dropped(key, r.dropped)
	if n == 0 {
		return
	}
	v.e.log.Warn("script output dropped", "script", key, "lines", n,
		"bounds", fmt.Sprintf("%d lines per run, %d per second per script", maxRunLines, scriptLineRate))
	if r.inv.Host != nil {
		r.inv.Host.Log(context.WithoutCancel(r.ctx), r.inv, fmt.Sprintf(
			"%d lines of output dropped (bounds: %d lines per run, %d per second per script)", n, maxRunLines, scriptLineRate))
	}
}
