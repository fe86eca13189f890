package backfill

import (
	"context"
	"testing"
	"time"
)

// TestOnDemandLaneRules: a DID is queued once at a time; sign-ins and
// operators go before queries; the queue is bounded, queries filling at
// most half of it; a DID fetched or tried within the interval is not
// fetched again, and the query trigger never fetches again a DID the lane
// remembers fetching; the remembered DIDs are bounded, oldest forgotten.
func TestOnDemandLaneRules(t *testing.T) {
	started := make(chan odRequest, 16)
	od := newOnDemand(OnDemandOptions{Concurrency: 1, Interval: time.Minute, Remember: 2, Queue: 4},
		func(_ context.Context, r odRequest) { started <- r })
	od.base = t.Context()
	now := time.Unix(1_000_000, 0)
	ask := func(at time.Duration, did, trigger, want string) {
		t.Helper()
		if a := od.request(odRequest{did: "did:plc:" + did, trigger: trigger}, now.Add(at)); a.Status != want {
			t.Fatalf("%s by %s at +%s: %s, want %s", did, trigger, at, a.Status, want)
		}
	}
	next := func(want string) {
		t.Helper()
		if r := <-started; r.did != "did:plc:"+want {
			t.Fatalf("started %s, want %s", r.did, want)
		}
	}
	finish := func(did string, at time.Duration, ok bool) {
		t.Helper()
		od.finish("did:plc:"+did, now.Add(at), ok, true)
	}

	ask(0, "a", TriggerSignIn, OnDemandQueued)
	next("a")
	ask(0, "a", TriggerOperator, OnDemandPending) // being fetched
	ask(0, "b", TriggerQuery, OnDemandQueued)     // waits: the one slot is busy
	ask(0, "b", TriggerSignIn, OnDemandPending)   // waiting
	ask(0, "c", TriggerSignIn, OnDemandQueued)
	ask(0, "d", TriggerQuery, OnDemandFull) // two waiting: half the queue
	ask(0, "d", TriggerLinkedRepo, OnDemandQueued)
	ask(0, "e", TriggerOAuthSession, OnDemandQueued)
	ask(0, "f", TriggerOperator, OnDemandFull)

	finish("a", 0, true)
	next("c") // a sign-in before the earlier query
	ask(30*time.Second, "a", TriggerSignIn, OnDemandRecent)
	if a := od.request(odRequest{did: "did:plc:a", trigger: TriggerOperator}, now.Add(30*time.Second)); !a.Again.Equal(now.Add(time.Minute)) || !a.LastFetch.Equal(now) {
		t.Fatalf("recent answer: %+v", a)
	}
	ask(2*time.Minute, "a", TriggerQuery, OnDemandRecent) // fetched: never again by a query

	finish("c", 0, false)
	next("d")
	ask(30*time.Second, "c", TriggerQuery, OnDemandRecent) // tried within the interval
	finish("d", 0, true)
	next("e")
	finish("e", 0, true)
	next("b")
	finish("b", 0, true)
	// Remember is 2: a, c and d are forgotten, b and e remembered.
	if len(od.done) != 2 || od.recent.Len() != 2 || od.done["did:plc:b"] == nil || od.done["did:plc:e"] == nil {
		t.Fatalf("remembered: %v", od.done)
	}
	ask(time.Second, "e", TriggerSignIn, OnDemandRecent)
	ask(time.Second, "a", TriggerQuery, OnDemandQueued) // forgotten
	next("a")
	if len(od.busy) != 1 || od.running != 1 {
		t.Fatalf("busy %v, running %d", od.busy, od.running)
	}
}

// TestOnDemandWaitsForRun: requests made before Run wait for it.
func TestOnDemandWaitsForRun(t *testing.T) {
	started := make(chan odRequest, 1)
	od := newOnDemand(OnDemandOptions{}, func(_ context.Context, r odRequest) { started <- r })
	if a := od.request(odRequest{did: "did:plc:a", trigger: TriggerSignIn}, time.Now()); a.Status != OnDemandQueued {
		t.Fatal(a.Status)
	}
	if od.running != 0 || len(od.high) != 1 {
		t.Fatalf("before Run: %d running, %d waiting", od.running, len(od.high))
	}
	od.mu.Lock()
	od.base = t.Context()
	od.startLocked(time.Now())
	od.mu.Unlock()
	if r := <-started; r.did != "did:plc:a" {
		t.Fatal(r.did)
	}
}
