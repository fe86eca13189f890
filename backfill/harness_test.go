package backfill_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/bluesky-social/indigo/atproto/identity"

	"github.com/lexview/lexview/backfill"
	"github.com/lexview/lexview/internal/backfilltest"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
)

const (
	postNSID = "app.test.post"
	likeNSID = "app.test.like"
)

func recordLexicon(id string) string {
	return fmt.Sprintf(`{"lexicon":1,"id":%q,"defs":{"main":{"type":"record","key":"tid","record":{"type":"object","required":["text"],"properties":{"text":{"type":"string"}}}}}}`, id)
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// harness runs a writer and a Manager on a store, as an App would.
type harness struct {
	t        testing.TB
	store    storage.Store
	lexicons *lexicon.Registry
	plc      *backfilltest.PLC
	dir      identity.Directory // resolves DIDs; plc's when nil
	relayURL string
	tune     func(*backfill.Options)
	patience time.Duration // how long waitJob waits; 60s when zero

	mgr    *backfill.Manager
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newHarness(t testing.TB, store storage.Store, p *backfilltest.PLC, relayURL string) *harness {
	t.Helper()
	reg := lexicon.NewRegistry(store)
	if err := reg.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{postNSID, likeNSID} {
		if _, _, err := reg.Put(context.Background(), lexicon.Upload{Document: json.RawMessage(recordLexicon(id))}); err != nil {
			t.Fatal(err)
		}
	}
	return &harness{t: t, store: store, lexicons: reg, plc: p, relayURL: relayURL}
}

func (h *harness) directory() identity.Directory {
	if h.dir != nil {
		return h.dir
	}
	return h.plc.Directory()
}

// start builds a fresh writer and Manager and runs them.
func (h *harness) start() *backfill.Manager {
	h.t.Helper()
	h.run(h.build())
	return h.mgr
}

// build builds a fresh Manager without running it: jobs created on it wait
// until run.
func (h *harness) build() *backfill.Manager {
	h.t.Helper()
	return h.buildOn(h.store, h.store, nil)
}

// buildOn builds a Manager whose job store is jobs and whose writer and
// event log are db's, tuned by h.tune then tune.
func (h *harness) buildOn(jobs backfill.Store, db storage.Store, tune func(*backfill.Options)) *backfill.Manager {
	h.t.Helper()
	cfg := backfill.Options{
		Store: jobs, Writer: storeWriter{db}, Lexicons: h.lexicons, Directory: h.directory(), RelayURL: h.relayURL,
		HTTPClient: http.DefaultClient, Events: storeAudit{db}, Logger: quiet,
		PageSize: 3, DiscoveryPageSize: 2, RequestTimeout: 5 * time.Second, Retries: 3,
		RetryBackoff: 10 * time.Millisecond, MaxRateLimitWait: 2 * time.Second, PollInterval: 20 * time.Millisecond,
	}
	if h.tune != nil {
		h.tune(&cfg)
	}
	if tune != nil {
		tune(&cfg)
	}
	mgr, err := backfill.New(cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	return mgr
}

// run runs a Manager from build until the test ends (or stop).
func (h *harness) run(mgr *backfill.Manager) {
	h.mgr = mgr
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.wg.Add(1)
	go func() { defer h.wg.Done(); h.mgr.Run(ctx) }()
	h.t.Cleanup(h.stop)
}

// stop shuts the writer and Manager down, as App.Shutdown does.
func (h *harness) stop() {
	if h.cancel != nil {
		h.cancel()
		h.wg.Wait()
		h.cancel = nil
	}
}

func (h *harness) setting(key, value string) {
	h.t.Helper()
	if err := h.store.PutSetting(context.Background(), key, value); err != nil {
		h.t.Fatal(err)
	}
}

// job reads a job.
func (h *harness) job(id string) storage.BackfillJob {
	h.t.Helper()
	j, err := h.store.GetBackfillJob(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return j
}

// waitJob polls the job until cond holds (h.patience, 60s by default:
// under a loaded machine a stale lease's retry can take more than 10s).
func (h *harness) waitJob(id, what string, cond func(storage.BackfillJob) bool) storage.BackfillJob {
	h.t.Helper()
	patience := h.patience
	if patience == 0 {
		patience = 60 * time.Second
	}
	deadline := time.Now().Add(patience)
	for {
		j := h.job(id)
		if cond(j) {
			return j
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s; job: %s", what, describe(j))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (h *harness) waitStatus(id, status string) storage.BackfillJob {
	h.t.Helper()
	return h.waitJob(id, "status "+status, func(j storage.BackfillJob) bool { return j.Status == status })
}

func (h *harness) repos(id string) map[string]storage.BackfillRepo {
	h.t.Helper()
	rows, err := h.store.ListBackfillRepos(context.Background(), id, storage.BackfillRepoFilter{Limit: 1000})
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[string]storage.BackfillRepo{}
	for _, r := range rows {
		out[r.DID] = r
	}
	return out
}

func (h *harness) count(collection string) int64 {
	h.t.Helper()
	n, err := h.store.CountRecords(context.Background(), collection)
	if err != nil {
		h.t.Fatal(err)
	}
	return n
}

// audit waits for event-log entries of a type (the worker records them
// just after finishing a job).
func (h *harness) audit(eventType string) []storage.Event {
	h.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		events, _, err := h.store.ListEvents(context.Background(), storage.EventFilter{Type: eventType, Limit: 10})
		if err != nil {
			h.t.Fatal(err)
		}
		if len(events) > 0 {
			return events
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("no %s event recorded", eventType)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func num(p *int64) int64 {
	if p == nil {
		return -1
	}
	return *p
}

// counters formats total/resolved/processed/records.
func counters(j storage.BackfillJob) string {
	return fmt.Sprintf("%d/%d/%d/%d", num(j.TotalRepos), num(j.ResolvedRepos), num(j.ProcessedRepos), num(j.TotalRecords))
}

func describe(j storage.BackfillJob) string {
	return fmt.Sprintf("status=%s stage=%s counters=%s error=%q", j.Status, j.Stage, counters(j), j.Error)
}

func did(i int) string { return fmt.Sprintf("did:plc:acct%04d", i) }

// storeWriter writes each submission straight to the store in one
// transaction: the App's batch writer (validation, hooks, batching across
// submissions) is tested in its own package.
type storeWriter struct{ store storage.Store }

func (w storeWriter) WriteBulk(ctx context.Context, _ string, changes []storage.Change) error {
	b := storage.Batch{Ops: make([]storage.RecordOp, len(changes))}
	for i, c := range changes {
		b.Ops[i] = storage.RecordOp{Delete: c.Op == storage.OpDelete, Record: storage.Record{
			URI: c.URI(), DID: c.DID, Collection: c.Collection, RKey: c.RKey, CID: c.CID, Rev: c.Rev, Value: c.Record,
			IndexedAt: time.Now(),
		}}
	}
	return w.store.ApplyBatch(ctx, b)
}

// storeAudit appends audit entries to the store's event log.
type storeAudit struct{ store storage.Store }

func (a storeAudit) Record(ctx context.Context, e backfill.AuditEntry) {
	detail, _ := json.Marshal(e.Detail)
	if e.Detail == nil {
		detail = []byte("{}")
	}
	severity := e.Severity
	if severity == "" {
		severity = "info"
	}
	_ = a.store.AppendEvents(ctx, []storage.Event{{
		Type: e.Type, Severity: severity, ActorDID: e.ActorDID, Subject: e.Subject, Detail: detail, CreatedAt: time.Now(),
	}})
}
