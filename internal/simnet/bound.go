package simnet

import (
	"context"
	"fmt"
	"math"
)

// Bound is the latency-bound limit of a backfill of a plan: what a perfect
// scheduler could reach with a given concurrency overall and per host,
// were the database free and no answer failed.
type Bound struct {
	Records int     // records fetched: those of the reachable accounts
	Seconds float64 // the shortest time to fetch them
	// RecordsPerSecond is Records/Seconds.
	RecordsPerSecond float64
	// Binding names the constraint that sets Seconds: "concurrency" (the
	// repositories' total time over the overall concurrency), or a host's
	// "per-host concurrency", "rate limit" or "largest repository".
	Binding string
}

func (b Bound) String() string {
	return fmt.Sprintf("%d records in %.1f s = %.0f records/s (bound by %s)", b.Records, b.Seconds, b.RecordsPerSecond, b.Binding)
}

// Bound computes the limit for a backfill fetching every reachable
// account's export once, at most concurrency at a time overall and
// perHost on one host. A repository takes its host's RTT plus its
// export's bytes at the host's bandwidth (the export's size estimated
// from a sample export's bytes per record); a rate-limited host takes at
// least a window for each RateLimit requests after the first window. DID
// resolution and discovery are taken as overlapped with fetching, and
// the requests that learn an account is inactive as free: the bound is
// optimistic, so a ratio against it is conservative.
func (p *Plan) Bound(concurrency, perHost int) (Bound, error) {
	perRecord, err := p.bytesPerRecord()
	if err != nil {
		return Bound{}, err
	}
	type hostWork struct {
		sum, longest float64
		repos        int
	}
	work := make([]hostWork, len(p.Hosts))
	b := Bound{Records: p.Records()}
	var total float64
	for _, a := range p.Accounts {
		if !p.Reachable(a) {
			continue
		}
		h := p.Hosts[a.Host]
		t := h.RTT.Seconds() + float64(a.Records+a.Other)*perRecord/float64(h.Bandwidth)
		w := &work[a.Host]
		w.sum += t
		w.longest = max(w.longest, t)
		w.repos++
		total += t
	}
	b.Seconds, b.Binding = total/float64(max(concurrency, 1)), "concurrency"
	for i, w := range work {
		if w.repos == 0 {
			continue
		}
		limits := []struct {
			seconds float64
			name    string
		}{
			{w.sum / float64(max(perHost, 1)), "per-host concurrency"},
			{w.longest, "largest repository"},
		}
		if rl := p.Hosts[i].RateLimit; rl > 0 {
			windows := math.Floor(float64(w.repos-1) / float64(rl))
			limits = append(limits, struct {
				seconds float64
				name    string
			}{windows * p.Spec.RateWindow.Seconds(), "rate limit"})
		}
		for _, l := range limits {
			if l.seconds > b.Seconds {
				b.Seconds, b.Binding = l.seconds, fmt.Sprintf("host %d's %s", i, l.name)
			}
		}
	}
	if b.Seconds > 0 {
		b.RecordsPerSecond = float64(b.Records) / b.Seconds
	}
	return b, nil
}

// bytesPerRecord measures an export's bytes per record on a sample
// account of 400 records.
func (p *Plan) bytesPerRecord() (float64, error) {
	sample := Account{Index: 0, DID: "did:plc:aaaaaaaaaaaaaaaaaaaaaaaa", Records: 320, Other: 80, Rev: tid(0, 1).String()}
	car, err := p.Export(context.Background(), sample)
	if err != nil {
		return 0, err
	}
	return float64(len(car)) / float64(sample.Records+sample.Other), nil
}
