// Package simnet simulates an atproto network for backfill tests and
// benchmarks: PDS hosts with their own latency, bandwidth, rate limits and
// faults, accounts in every state an AppView meets (active, deactivated,
// taken down, deleted, migrated between hosts), a PLC directory and a
// relay, all served on 127.0.0.1 and all decided by a seed.
//
// Plan draws a network from a Spec without starting anything; Start serves
// it. The same seed always draws the same hosts, accounts and records, and
// the same sequence of requests for an account meets the same faults.
package simnet

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Spec describes a network to draw.
type Spec struct {
	// Seed decides everything drawn.
	Seed uint64
	// Hosts and Repos are the numbers of PDS hosts and of accounts.
	Hosts, Repos int
	// Collection is the collection every account holds records of (at
	// least one), and Other a collection a backfill of Collection skips;
	// OtherShare is Other's records as a share of Collection's.
	Collection, Other string
	OtherShare        float64
	// MedianRecords is the median number of Collection records of an
	// account; the counts are log-normal around it (sigma 1.1). A share
	// LargeShare of accounts are drawn instead log-uniformly from
	// MaxRecords/10 to MaxRecords, the long tail.
	MedianRecords, MaxRecords int
	LargeShare                float64
	// MinRTT and MaxRTT bound a host's round-trip time, drawn log-uniformly
	// per host; each answer waits the host's RTT, varied by ±Jitter (a
	// fraction).
	MinRTT, MaxRTT time.Duration
	Jitter         float64
	// MinBandwidth and MaxBandwidth bound a host's bytes per second to
	// each client connection, drawn log-uniformly per host.
	MinBandwidth, MaxBandwidth int
	// RateLimited is the share of hosts that answer 429 beyond RateLimit
	// requests per RateWindow, with RateLimit-* and Retry-After headers.
	RateLimited float64
	RateLimit   int
	RateWindow  time.Duration
	// Down is the share of hosts that refuse every connection; Flaky the
	// share whose answers fail with chance FlakyFailure: a 502 or 503, a
	// download cut short, or an answer that stalls StallTime and is then
	// dropped.
	Down, Flaky  float64
	FlakyFailure float64
	StallTime    time.Duration
	// Deactivated, TakenDown and Deleted are the shares of accounts in
	// those states (their PDS refuses their repository), and Migrated the
	// share that moved from another host (which refuses them as
	// deactivated) to the one their DID document names.
	Deactivated, TakenDown, Deleted, Migrated float64
	// PLCRTT is the PLC directory's answer time, RelayRTT the relay's.
	PLCRTT, RelayRTT time.Duration
}

// Small is a network for tests: 12 hosts and 150 accounts, a tail to 2,000
// records, RTT 2-20 ms, and every kind of host and account at least once.
func Small(seed uint64) Spec {
	return Spec{
		Seed: seed, Hosts: 12, Repos: 150,
		Collection: "app.sim.post", Other: "app.sim.like", OtherShare: 0.25,
		MedianRecords: 20, MaxRecords: 2000, LargeShare: 0.02,
		MinRTT: 2 * time.Millisecond, MaxRTT: 20 * time.Millisecond, Jitter: 0.2,
		MinBandwidth: 2 << 20, MaxBandwidth: 40 << 20,
		RateLimited: 0.1, RateLimit: 10, RateWindow: 500 * time.Millisecond,
		Down: 0.05, Flaky: 0.1, FlakyFailure: 0.3, StallTime: 300 * time.Millisecond,
		Deactivated: 0.03, TakenDown: 0.02, Deleted: 0.02, Migrated: 0.03,
		PLCRTT: 2 * time.Millisecond, RelayRTT: 2 * time.Millisecond,
	}
}

// Full is the network of the backfill benchmark: 300 hosts, 30,000
// accounts of median 40 records with a long tail to 50,000, RTT 20-300 ms,
// 5% of hosts rate-limited and 2% failing (half down, half flaky).
func Full(seed uint64) Spec {
	return Spec{
		Seed: seed, Hosts: 300, Repos: 30000,
		Collection: "app.sim.post", Other: "app.sim.like", OtherShare: 0.25,
		MedianRecords: 40, MaxRecords: 50000, LargeShare: 0.001,
		MinRTT: 20 * time.Millisecond, MaxRTT: 300 * time.Millisecond, Jitter: 0.2,
		MinBandwidth: 1 << 20, MaxBandwidth: 20 << 20,
		RateLimited: 0.05, RateLimit: 50, RateWindow: 5 * time.Second,
		Down: 0.01, Flaky: 0.01, FlakyFailure: 0.2, StallTime: 10 * time.Second,
		Deactivated: 0.01, TakenDown: 0.005, Deleted: 0.005, Migrated: 0.01,
		PLCRTT: 30 * time.Millisecond, RelayRTT: 20 * time.Millisecond,
	}
}

// Fault is how a host fails.
type Fault int

// The faults of a host.
const (
	Healthy Fault = iota
	// Down hosts refuse every connection.
	Down
	// Flaky hosts fail a share of their answers (Spec.FlakyFailure).
	Flaky
)

func (f Fault) String() string {
	return [...]string{"healthy", "down", "flaky"}[f]
}

// Host is one PDS host of a plan.
type Host struct {
	Index     int
	RTT       time.Duration
	Bandwidth int // bytes per second per connection
	RateLimit int // requests per Spec.RateWindow; 0 for none
	Fault     Fault
}

// Account states, as a PDS's listRepos and a relay report them ("" is
// active).
const (
	Active      = ""
	Deactivated = "deactivated"
	TakenDown   = "takendown"
	Deleted     = "deleted"
)

// Account is one repository of a plan.
type Account struct {
	Index int
	DID   string
	// Host serves the repository; Former is the host it migrated from,
	// or -1.
	Host, Former int
	Status       string
	// Records and Other are its numbers of records of Spec.Collection and
	// Spec.Other.
	Records, Other int
	Rev            string
}

// Plan is a drawn network.
type Plan struct {
	Spec     Spec
	Hosts    []Host
	Accounts []Account
}

// Draw draws the network spec describes.
func Draw(spec Spec) *Plan {
	rng := rand.New(rand.NewPCG(spec.Seed, 0x51a7e7))
	p := &Plan{Spec: spec}
	for i := range spec.Hosts {
		h := Host{
			Index:     i,
			RTT:       time.Duration(logUniform(rng, float64(spec.MinRTT), float64(spec.MaxRTT))),
			Bandwidth: int(logUniform(rng, float64(spec.MinBandwidth), float64(spec.MaxBandwidth))),
		}
		switch x := rng.Float64(); {
		case x < spec.Down:
			h.Fault = Down
		case x < spec.Down+spec.Flaky:
			h.Fault = Flaky
		}
		if rng.Float64() < spec.RateLimited {
			h.RateLimit = spec.RateLimit
		}
		p.Hosts = append(p.Hosts, h)
	}
	// Every kind at least once in a small network: the first hosts take
	// the faults the shares would otherwise round away. Each kind has its
	// own host to take it, so passes until nothing changes settle.
	for pass := 0; spec.Hosts >= 4 && pass < 3; pass++ {
		ensureHost(p.Hosts, func(h Host) bool { return h.Fault == Down }, func(h *Host) { h.Fault = Down }, spec.Down > 0, 0)
		ensureHost(p.Hosts, func(h Host) bool { return h.Fault == Flaky }, func(h *Host) { h.Fault = Flaky }, spec.Flaky > 0, 1)
		ensureHost(p.Hosts, func(h Host) bool { return h.RateLimit > 0 && h.Fault == Healthy }, func(h *Host) { h.RateLimit, h.Fault = spec.RateLimit, Healthy }, spec.RateLimited > 0, 2)
	}
	seen := map[string]bool{}
	for i := range spec.Repos {
		a := Account{Index: i, Host: rng.IntN(max(spec.Hosts, 1)), Former: -1, Rev: tid(int64(i), 1).String()}
		for a.DID == "" || seen[a.DID] {
			a.DID = plcDID(rng)
		}
		seen[a.DID] = true
		if rng.Float64() < spec.LargeShare {
			a.Records = int(logUniform(rng, float64(spec.MaxRecords)/10, float64(spec.MaxRecords)))
		} else {
			n := float64(spec.MedianRecords) * math.Exp(1.1*rng.NormFloat64())
			a.Records = int(min(max(n, 1), float64(spec.MaxRecords)/10))
		}
		a.Other = int(float64(a.Records) * spec.OtherShare)
		switch x := rng.Float64(); {
		case x < spec.Deactivated:
			a.Status = Deactivated
		case x < spec.Deactivated+spec.TakenDown:
			a.Status = TakenDown
		case x < spec.Deactivated+spec.TakenDown+spec.Deleted:
			a.Status = Deleted
		case x < spec.Deactivated+spec.TakenDown+spec.Deleted+spec.Migrated && spec.Hosts > 1:
			a.Former = (a.Host + 1 + rng.IntN(spec.Hosts-1)) % spec.Hosts
		}
		p.Accounts = append(p.Accounts, a)
	}
	// Every account state at least once too, on the first accounts.
	for pass := 0; spec.Repos >= 8 && spec.Hosts > 1 && pass < 4; pass++ {
		for k, st := range []struct {
			want   bool
			status string
			moved  bool
		}{{spec.Deactivated > 0, Deactivated, false}, {spec.TakenDown > 0, TakenDown, false}, {spec.Deleted > 0, Deleted, false}, {spec.Migrated > 0, Active, true}} {
			if st.want && !slices.ContainsFunc(p.Accounts, func(a Account) bool { return a.Status == st.status && (a.Former >= 0) == st.moved }) {
				a := &p.Accounts[k]
				a.Status, a.Former = st.status, -1
				if st.moved {
					a.Former = (a.Host + 1) % spec.Hosts
				}
			}
		}
	}
	return p
}

// ensureHost makes sure some host satisfies has (when want), setting
// hosts[at] so if none does.
func ensureHost(hosts []Host, has func(Host) bool, set func(*Host), want bool, at int) {
	if !want {
		return
	}
	for _, h := range hosts {
		if has(h) {
			return
		}
	}
	set(&hosts[at])
}

// Reachable reports whether a backfill can fetch a's records: the account
// is active and its host is not down.
func (p *Plan) Reachable(a Account) bool {
	return a.Status == Active && p.Hosts[a.Host].Fault != Down
}

// Records is the number of Spec.Collection records a perfect backfill
// holds at the end: those of every reachable account.
func (p *Plan) Records() int {
	n := 0
	for _, a := range p.Accounts {
		if p.Reachable(a) {
			n += a.Records
		}
	}
	return n
}

// Summary describes the plan in a line, for logs and reports.
func (p *Plan) Summary() string {
	var down, flaky, limited, inactive, migrated, largest int
	for _, h := range p.Hosts {
		switch {
		case h.Fault == Down:
			down++
		case h.Fault == Flaky:
			flaky++
		}
		if h.RateLimit > 0 {
			limited++
		}
	}
	for _, a := range p.Accounts {
		if a.Status != Active {
			inactive++
		}
		if a.Former >= 0 {
			migrated++
		}
		largest = max(largest, a.Records)
	}
	return fmt.Sprintf("seed %d: %d hosts (%d down, %d flaky, %d rate-limited), %d accounts (%d inactive, %d migrated), %d records reachable, largest repository %d",
		p.Spec.Seed, len(p.Hosts), down, flaky, limited, len(p.Accounts), inactive, migrated, p.Records(), largest)
}

func logUniform(rng *rand.Rand, lo, hi float64) float64 {
	if hi <= lo {
		return lo
	}
	return math.Exp(math.Log(lo) + rng.Float64()*(math.Log(hi)-math.Log(lo)))
}

// plcDID draws a did:plc: 24 characters of base32 (a-z, 2-7).
func plcDID(rng *rand.Rand) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz234567"
	b := []byte("did:plc:")
	for range 24 {
		b = append(b, alphabet[rng.IntN(len(alphabet))])
	}
	return string(b)
}
