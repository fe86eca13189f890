package backfilljobs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/bluesky-social/indigo/atproto/identity"
	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/ingest"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/backfill"
	"github.com/lexview/lexview/internal/backfilltest"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
)

const postNSID = "app.test.post"

func recordLexicon(id string) string {
	return fmt.Sprintf(`{"lexicon":1,"id":%q,"defs":{"main":{"type":"record","key":"tid","record":{"type":"object","required":["text"],"properties":{"text":{"type":"string"}}}}}}`, id)
}

// directory resolves DIDs through the PLC stand-in and handles from a
// table: a stand-in for DNS and /.well-known/atproto-did, which tests must
// not reach.
type directory struct {
	base    identity.Directory
	mu      sync.Mutex
	handles map[string]syntax.DID
}

func (d *directory) setHandle(handle string, did syntax.DID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.handles[handle] = did
}

func (d *directory) LookupHandle(ctx context.Context, h syntax.Handle) (*identity.Identity, error) {
	d.mu.Lock()
	did, ok := d.handles[h.Normalize().String()]
	d.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%w: %s", identity.ErrHandleNotFound, h)
	}
	ident, err := d.base.LookupDID(ctx, did)
	if err != nil {
		return nil, err
	}
	ident.Handle = h.Normalize()
	return ident, nil
}

func (d *directory) LookupDID(ctx context.Context, did syntax.DID) (*identity.Identity, error) {
	return d.base.LookupDID(ctx, did)
}

func (d *directory) Lookup(ctx context.Context, a syntax.AtIdentifier) (*identity.Identity, error) {
	if did, err := a.AsDID(); err == nil {
		return d.LookupDID(ctx, did)
	}
	h, err := a.AsHandle()
	if err != nil {
		return nil, err
	}
	return d.LookupHandle(ctx, h)
}

func (d *directory) Purge(context.Context, syntax.AtIdentifier) error { return nil }

// quietSource is a live event source that delivers nothing: an instance
// with it follows a live stream, as one with Jetstream does.
type quietSource struct{}

func (quietSource) Name() string          { return "quiet" }
func (quietSource) Status() ingest.Status { return ingest.Status{} }
func (quietSource) Run(ctx context.Context, _ func() []string, _ <-chan struct{}, _ ingest.Sink) error {
	<-ctx.Done()
	return ctx.Err()
}

// world is a started instance with a PDS stand-in and a super user.
type world struct {
	env *testenv.Env
	su  *testenv.Admin
	pds *backfilltest.PDS
	dir *directory
}

// setup starts an instance on store whose relay is relayURL ("" for the
// PDS stand-in itself), with the record lexicon app.test.post.
func setup(t *testing.T, store storage.Store, relayURL string) *world {
	t.Helper()
	return setupWith(t, store, relayURL, appview.Config{})
}

// setupWith is setup with extra configuration.
func setupWith(t *testing.T, store storage.Store, relayURL string, cfg appview.Config) *world {
	t.Helper()
	pds := backfilltest.NewPDS(t)
	if relayURL == "" {
		relayURL = pds.URL()
	}
	plc := testenv.NewPLC(t)
	dir := &directory{
		base:    &identity.BaseDirectory{PLCURL: plc.URL, SkipHandleVerification: true},
		handles: map[string]syntax.DID{},
	}
	cfg.Network.PLCURL, cfg.Network.Directory, cfg.Ingest.RelayURL = plc.URL, dir, relayURL
	env := testenv.NewUnstarted(t, store, cfg)
	env.PLC = plc // the directory resolves through this PLC
	if err := env.App.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := env.App.Lexicons().Put(context.Background(), lexicon.Upload{Document: json.RawMessage(recordLexicon(postNSID)), Backfill: new(false)}); err != nil {
		t.Fatal(err)
	}
	return &world{env: env, su: env.Bootstrap(t), pds: pds, dir: dir}
}

// account registers an account on the PDS stand-in with n posts.
func (w *world) account(t *testing.T, n int) string {
	t.Helper()
	did := w.env.PLC.NewAccount(t, false, w.pds.URL()).DID.String()
	w.pds.AddRepo(did, postNSID, n, "3kaaaaaaaaaa2")
	return did
}

// jobJSON is the Backfill job resource.
type jobJSON struct {
	ID             string  `json:"id"`
	Collection     *string `json:"collection"`
	DID            *string `json:"did"`
	Scope          string  `json:"scope"`
	Status         string  `json:"status"`
	Stage          string  `json:"stage"`
	TotalRepos     *int64  `json:"total_repos"`
	ResolvedRepos  *int64  `json:"resolved_repos"`
	ProcessedRepos *int64  `json:"processed_repos"`
	TotalRecords   *int64  `json:"total_records"`
	Error          *string `json:"error"`
	StartedAt      *string `json:"started_at"`
	CompletedAt    *string `json:"completed_at"`
	CreatedAt      string  `json:"created_at"`
}

func (w *world) jobs(t *testing.T) []jobJSON {
	t.Helper()
	r := w.su.Do(t, "GET", "/admin/backfill/status", nil)
	if r.Status != 200 {
		t.Fatalf("status: %d %s", r.Status, r.Raw)
	}
	var out []jobJSON
	r.JSON(t, &out)
	return out
}

func (w *world) job(t *testing.T, id string) jobJSON {
	t.Helper()
	for _, j := range w.jobs(t) {
		if j.ID == id {
			return j
		}
	}
	t.Fatalf("job %s not listed", id)
	return jobJSON{}
}

// wait polls the job until it has status (60 s at most).
func (w *world) wait(t *testing.T, id, status string) jobJSON {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		j := w.job(t, id)
		if j.Status == status {
			return j
		}
		if time.Now().After(deadline) {
			msg := ""
			if j.Error != nil {
				msg = *j.Error
			}
			t.Fatalf("job %s: status %s stage %s error %q, want status %s", id, j.Status, j.Stage, msg, status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// create posts a backfill request expecting 201 and returns the job ID.
func (w *world) create(t *testing.T, body map[string]any) string {
	t.Helper()
	r := w.su.Do(t, "POST", "/admin/backfill", body)
	if r.Status != 201 {
		t.Fatalf("create %v: %d %s", body, r.Status, r.Raw)
	}
	m := r.Object(t)
	if m["status"] != "running" || len(m) != 2 {
		t.Fatalf("create answer: %s", r.Raw)
	}
	return m["id"].(string)
}

func (w *world) setting(t *testing.T, key, value string) {
	t.Helper()
	if err := w.env.Store.PutSetting(context.Background(), key, value); err != nil {
		t.Fatal(err)
	}
}

// slow makes the PDS answer slowly and the worker fetch one repository at
// a time, so jobs can be caught running.
func (w *world) slow(t *testing.T) {
	w.pds.SetDelay(20 * time.Millisecond)
	w.setting(t, backfill.SettingConcurrency, "1")
}

func n(p *int64) int64 {
	if p == nil {
		return -1
	}
	return *p
}
