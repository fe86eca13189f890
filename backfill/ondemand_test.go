package backfill_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/lexview/lexview/backfill"
	"github.com/lexview/lexview/internal/backfilltest"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// onDemandMetrics counts what the lane reports.
type onDemandMetrics struct {
	mu     sync.Mutex
	counts map[string]int // trigger/outcome
}

func (m *onDemandMetrics) BackfillRepo(string, string, int) {}

func (m *onDemandMetrics) BackfillOnDemand(trigger, outcome string, _ int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.counts == nil {
		m.counts = map[string]int{}
	}
	m.counts[trigger+"/"+outcome]++
}

func (m *onDemandMetrics) get(key string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.counts[key]
}

type onDemandEntry struct {
	Trigger       string  `json:"trigger"`
	Outcome       string  `json:"outcome"`
	Records       int64   `json:"records"`
	FetchMethod   *string `json:"fetch_method"`
	FailureReason *string `json:"failure_reason"`
	Error         *string `json:"error"`
}

// onDemandEntry waits for the backfill.on_demand entry of did.
func (h *harness) onDemandEntry(did string) (storage.Event, onDemandEntry) {
	h.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		events, _, err := h.store.ListEvents(context.Background(), storage.EventFilter{Type: "backfill.on_demand", Subject: did, Limit: 10})
		if err != nil {
			h.t.Fatal(err)
		}
		if len(events) > 0 {
			var d onDemandEntry
			if err := json.Unmarshal(events[0].Detail, &d); err != nil {
				h.t.Fatal(err)
			}
			return events[0], d
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("no backfill.on_demand entry for %s", did)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestOnDemandFetch: an account asked for is fetched at once, for every
// record collection, while a network job holds the worker (its PDS
// stalls); it is
// not fetched again soon after; an account being fetched is not queued
// twice; an account whose PDS fails is recorded as failed with its reason;
// each outcome is in the event log and the metrics.
func TestOnDemandFetch(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		p := backfilltest.NewPLC(t)
		car, stalled, slow, failing := backfilltest.NewPDS(t), backfilltest.NewPDS(t), backfilltest.NewPDS(t), backfilltest.NewPDS(t)
		key, pub := signingKey(t)
		p.AddKey(did(0), car.URL(), pub)
		car.ServeRepo(did(0), key)
		car.AddRepo(did(0), postNSID, 5, "3kaaaaaaaaaa2")
		car.AddRepo(did(0), likeNSID, 2, "3kaaaaaaaaaa2")
		// The network job's one repository (did(1), on the relay's PDS)
		// and did(2) stall until released.
		gate, listing := make(chan struct{}), make(chan string, 16)
		for i, pds := range []*backfilltest.PDS{stalled, slow} {
			p.Add(did(i+1), pds.URL())
			pds.AddRepo(did(i+1), postNSID, 2, "3kaaaaaaaaab2")
			pds.OnListRecords(func(d, _, _ string) {
				listing <- d
				<-gate
			})
		}
		release := sync.OnceFunc(func() { close(gate) })
		t.Cleanup(release)
		p.Add(did(9), failing.URL())
		failing.AddRepo(did(9), postNSID, 1, "3kaaaaaaaaac2")
		failing.SetFailing(did(9))

		h := newHarness(t, open(t), p, stalled.URL())
		metrics := &onDemandMetrics{}
		h.tune = func(o *backfill.Options) { o.Metrics = metrics }
		mgr := h.start()
		job, err := mgr.Create(t.Context(), backfill.Request{Collection: postNSID})
		if err != nil {
			t.Fatal(err)
		}
		if d := <-listing; d != did(1) {
			t.Fatalf("listing %s", d)
		}

		// Ahead of the running job.
		if a, err := mgr.FetchAccount(did(0), backfill.TriggerSignIn, ""); err != nil || a.Status != backfill.OnDemandQueued {
			t.Fatalf("%+v %v", a, err)
		}
		ev, d := h.onDemandEntry(did(0))
		if d.Trigger != backfill.TriggerSignIn || d.Outcome != backfill.OnDemandFetched || d.Records != 7 ||
			d.FetchMethod == nil || *d.FetchMethod != storage.FetchCAR || ev.Severity != "info" {
			t.Fatalf("entry: %s %s", ev.Severity, ev.Detail)
		}
		if n := h.count(postNSID); n != 5 {
			t.Fatalf("%d posts indexed", n)
		}
		if n := h.count(likeNSID); n != 2 {
			t.Fatalf("%d likes indexed", n)
		}
		if j := h.job(job.ID); j.Scope != storage.ScopeNetwork || j.Status != storage.BackfillRunning || num(j.ProcessedRepos) != 0 {
			t.Fatalf("job: %s", describe(j))
		}
		// Fetched lately: not again.
		if a, _ := mgr.FetchAccount(did(0), backfill.TriggerOperator, ""); a.Status != backfill.OnDemandRecent || a.LastFetch.IsZero() {
			t.Fatalf("again: %+v", a)
		}

		// Being fetched: not queued twice.
		if a, _ := mgr.FetchAccount(did(2), backfill.TriggerLinkedRepo, ""); a.Status != backfill.OnDemandQueued {
			t.Fatalf("%+v", a)
		}
		if d := <-listing; d != did(2) {
			t.Fatalf("listing %s", d)
		}
		if a, _ := mgr.FetchAccount(did(2), backfill.TriggerOAuthSession, ""); a.Status != backfill.OnDemandPending {
			t.Fatalf("while fetched: %+v", a)
		}
		if st := mgr.OnDemand(); len(st.Items) != 1 || st.Items[0].DID != did(2) || st.Items[0].Trigger != backfill.TriggerLinkedRepo ||
			st.Items[0].Started.IsZero() || st.Remembered != 1 {
			t.Fatalf("lane: %+v", st)
		}

		// A failing PDS.
		if a, _ := mgr.FetchAccount(did(9), backfill.TriggerOperator, "did:plc:admin"); a.Status != backfill.OnDemandQueued {
			t.Fatalf("%+v", a)
		}
		ev, d = h.onDemandEntry(did(9))
		if d.Outcome != backfill.OnDemandFailed || ev.ActorDID != "did:plc:admin" || d.FailureReason == nil || *d.FailureReason != backfill.ReasonUnreachable ||
			d.Error == nil || ev.Severity != "warn" {
			t.Fatalf("failed entry: %s %s", ev.Severity, ev.Detail)
		}
		if a, _ := mgr.FetchAccount(did(9), backfill.TriggerOperator, ""); a.Status != backfill.OnDemandRecent {
			t.Fatalf("after a failure: %+v", a)
		}

		release()
		h.waitStatus(job.ID, storage.BackfillCompleted)
		if _, d := h.onDemandEntry(did(2)); d.Outcome != backfill.OnDemandFetched || d.Records != 2 {
			t.Fatalf("did(2): %+v", d)
		}
		for key, want := range map[string]int{
			"sign_in/fetched": 1, "operator/recent": 2, "linked_repo/fetched": 1, "oauth_session/pending": 1, "operator/failed": 1,
		} {
			if got := metrics.get(key); got != want {
				t.Errorf("metric %s: %d, want %d", key, got, want)
			}
		}
		if _, err := mgr.FetchAccount("alice.test", backfill.TriggerOperator, ""); !errors.As(err, new(*backfill.RequestError)) {
			t.Fatalf("a handle: %v", err)
		}
	})
}

// TestOnDemandQueries: the query trigger is off by default; on, a DID the
// lane does not remember fetching is fetched once.
func TestOnDemandQueries(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		p, pds := backfilltest.NewPLC(t), backfilltest.NewPDS(t)
		p.Add(did(0), pds.URL())
		pds.AddRepo(did(0), postNSID, 3, "3kaaaaaaaaaa2")
		h := newHarness(t, open(t), p, "")
		metrics := &onDemandMetrics{}
		h.tune = func(o *backfill.Options) { o.Metrics = metrics }
		mgr := h.start()
		if a := mgr.AccountQueried(did(0)); a.Status != "" {
			t.Fatalf("the query trigger is off by default: %+v", a)
		}
		mgr.SetOnDemandQueries(true)
		if a := mgr.AccountQueried("not a did"); a.Status != "" {
			t.Fatalf("not a DID: %+v", a)
		}
		if a := mgr.AccountQueried(did(0)); a.Status != backfill.OnDemandQueued {
			t.Fatalf("%+v", a)
		}
		if _, d := h.onDemandEntry(did(0)); d.Trigger != backfill.TriggerQuery || d.Records != 3 {
			t.Fatalf("%+v", d)
		}
		if a := mgr.AccountQueried(did(0)); a.Status != backfill.OnDemandRecent {
			t.Fatalf("again: %+v", a)
		}
		if metrics.get("query/recent") != 1 || pds.FirstPages(did(0), postNSID) != 1 {
			t.Fatalf("fetched again: %v", metrics.counts)
		}
	})
}
