package ingest_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	comatproto "github.com/bluesky-social/indigo/api/atproto"

	"github.com/lexview/lexview/appview/ingest"
	"github.com/lexview/lexview/appview/internal/testing/firehosetest"
	"github.com/lexview/lexview/storage"
)

// memSink is an in-memory ingest.CommitSink.
type memSink struct {
	mu         sync.Mutex
	changes    []storage.Change
	cursor     int64
	stored     bool
	repos      map[string]storage.RepoState
	skipped    []ingest.SkippedEvent
	resyncs    []ingest.ResyncRequest
	identities []ingest.IdentityEvent
	accounts   []ingest.AccountEvent
	// statuses are the stored account states AccountState reads (the
	// events are not stored: an App's sink stores them through its writer).
	statuses map[string]storage.AccountState
}

func newMemSink() *memSink {
	return &memSink{repos: map[string]storage.RepoState{}, statuses: map[string]storage.AccountState{}}
}

func (s *memSink) Records(ctx context.Context, changes []storage.Change, cursor int64) error {
	return s.Commit(ctx, changes, nil, cursor)
}

func (s *memSink) Commit(_ context.Context, changes []storage.Change, repos []storage.RepoState, cursor int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.changes = append(s.changes, changes...)
	for _, r := range repos {
		if r.Rev > s.repos[r.DID].Rev {
			s.repos[r.DID] = r
		}
	}
	s.cursor, s.stored = cursor, true
	return nil
}

func (s *memSink) RepoState(_ context.Context, did string) (storage.RepoState, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.repos[did]
	return st, ok, nil
}

func (s *memSink) AccountState(_ context.Context, did string) (storage.AccountState, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.statuses[did]
	return st, ok, nil
}

func (s *memSink) Resync(_ context.Context, r ingest.ResyncRequest) {
	s.mu.Lock()
	s.resyncs = append(s.resyncs, r)
	s.mu.Unlock()
}

func (s *memSink) Identity(_ context.Context, e ingest.IdentityEvent) {
	s.mu.Lock()
	s.identities = append(s.identities, e)
	s.mu.Unlock()
}

func (s *memSink) Account(_ context.Context, e ingest.AccountEvent) {
	s.mu.Lock()
	s.accounts = append(s.accounts, e)
	s.mu.Unlock()
}

func (s *memSink) Resume(context.Context) (int64, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cursor, s.stored, nil
}

func (s *memSink) StateChanged(context.Context, bool, map[string]any) {}

func (s *memSink) Skipped(_ context.Context, e ingest.SkippedEvent) {
	s.mu.Lock()
	s.skipped = append(s.skipped, e)
	s.mu.Unlock()
}

func (s *memSink) at() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cursor
}

func (s *memSink) snapshot() memSink {
	s.mu.Lock()
	defer s.mu.Unlock()
	return memSink{changes: slices.Clone(s.changes), cursor: s.cursor, skipped: slices.Clone(s.skipped),
		resyncs: slices.Clone(s.resyncs), identities: slices.Clone(s.identities), accounts: slices.Clone(s.accounts)}
}

// firehoseEnv is a stand-in firehose, a directory and a running source.
type firehoseEnv struct {
	t      *testing.T
	server *firehosetest.Server
	dir    *firehosetest.Directory
	src    *ingest.Firehose
	sink   *memSink

	mu      sync.Mutex
	wanted  []string
	changed chan struct{}
	stop    func()
}

func newFirehoseEnv(t *testing.T, wanted ...string) *firehoseEnv {
	t.Helper()
	e := &firehoseEnv{t: t, server: firehosetest.NewServer(), dir: firehosetest.NewDirectory(), sink: newMemSink(),
		wanted: wanted, changed: make(chan struct{}, 1)}
	t.Cleanup(e.server.Close)
	return e
}

// start runs a new Firehose source until the test ends or stop.
func (e *firehoseEnv) start() { e.startWith(0) }

// startWith is start with a MaxMessageSize (0: the default).
func (e *firehoseEnv) startWith(maxMessage int64) {
	e.src = &ingest.Firehose{URL: e.server.URL, Directory: e.dir, HTTPClient: e.server.Client(),
		MaxMessageSize: maxMessage, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	subs := len(e.server.Cursors())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := e.src.Run(ctx, e.wantedNow, e.changed, e.sink); err != nil {
			e.t.Errorf("Run: %v", err)
		}
	}()
	e.stop = func() { cancel(); <-done }
	e.t.Cleanup(e.stop)
	eventually(e.t, "the subscription", func() bool { return len(e.server.Cursors()) > subs })
}

func (e *firehoseEnv) wantedNow() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.wanted)
}

func (e *firehoseEnv) setWanted(cols ...string) {
	e.mu.Lock()
	e.wanted = cols
	e.mu.Unlock()
	e.changed <- struct{}{}
}

func (e *firehoseEnv) repo(did string) *firehosetest.Repo {
	e.t.Helper()
	r, err := firehosetest.NewRepo(did)
	if err != nil {
		e.t.Fatal(err)
	}
	e.dir.Publish(did, r.Key)
	return r
}

func (e *firehoseEnv) commit(r *firehosetest.Repo, ops ...firehosetest.Op) *comatproto.SyncSubscribeRepos_Commit {
	e.t.Helper()
	c, err := r.Commit(ops...)
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// publish publishes events and waits until the source has handed over
// the position of the last.
func (e *firehoseEnv) publish(evts ...interface{ MarshalCBOR(io.Writer) error }) {
	e.t.Helper()
	var last int64
	for _, ev := range evts {
		last = e.server.Publish(ev)
	}
	eventually(e.t, "the source to reach the last event", func() bool { return e.sink.at() >= last })
}

func post(rkey, text string) firehosetest.Op {
	return firehosetest.Op{Collection: "app.test.post", RKey: rkey, Record: map[string]any{"$type": "app.test.post", "text": text}}
}

func TestFirehoseIndexesVerifiedCommits(t *testing.T) {
	t.Parallel()
	e := newFirehoseEnv(t, "app.test.post")
	e.start()
	alice := e.repo("did:plc:alice")
	c1 := e.commit(alice, post("a", "one"), post("b", "two"),
		firehosetest.Op{Collection: "app.test.other", RKey: "x", Record: map[string]any{"text": "not wanted"}})
	c2 := e.commit(alice, post("a", "one, edited"), firehosetest.Op{Collection: "app.test.post", RKey: "b"})
	e.publish(c1, c2)

	got := e.sink.snapshot()
	if len(got.skipped) != 0 || len(got.resyncs) != 0 {
		t.Fatalf("skipped %+v, resyncs %+v", got.skipped, got.resyncs)
	}
	type short struct{ op, rkey, text, rev string }
	var seen []short
	for _, c := range got.changes {
		var rec struct{ Text string }
		if c.Record != nil {
			if err := json.Unmarshal(c.Record, &rec); err != nil {
				t.Fatal(err)
			}
		}
		if c.DID != "did:plc:alice" || c.Collection != "app.test.post" || (c.Op != storage.OpDelete) == (c.CID == "") {
			t.Fatalf("change %+v", c)
		}
		seen = append(seen, short{string(c.Op), c.RKey, rec.Text, c.Rev})
	}
	want := []short{{"create", "a", "one", c1.Rev}, {"create", "b", "two", c1.Rev},
		{"update", "a", "one, edited", c2.Rev}, {"delete", "b", "", c2.Rev}}
	if !slices.Equal(seen, want) {
		t.Fatalf("changes %+v, want %+v", seen, want)
	}
	st, _, _ := e.sink.RepoState(context.Background(), "did:plc:alice")
	if st.Rev != c2.Rev || st.Data == "" || got.cursor != 2 {
		t.Fatalf("state %+v, cursor %d", st, got.cursor)
	}
	if n := e.src.Counts(); n.Verified != 2 || n.Refused != 0 {
		t.Fatalf("counts %+v", n)
	}
	// The status names the relay's host and dates the last event by the
	// commit's own time.
	if st := e.src.Status(); st.State != ingest.StateConnected || !strings.Contains(e.src.URL, "//"+st.Host) ||
		st.EventTime.IsZero() || st.Lag < 0 || st.Lag > 60 {
		t.Fatalf("status %+v (url %s)", st, e.src.URL)
	}
}

func TestFirehoseRefusesBadSignature(t *testing.T) {
	t.Parallel()
	e := newFirehoseEnv(t, "app.test.post")
	e.start()
	alice := e.repo("did:plc:alice")
	good := e.commit(alice, post("a", "one"))
	// Signed with a key the DID document does not hold.
	if _, err := alice.Rotate(); err != nil {
		t.Fatal(err)
	}
	forged := e.commit(alice, post("b", "forged"))
	e.publish(good, forged)

	got := e.sink.snapshot()
	if len(got.changes) != 1 || got.changes[0].RKey != "a" {
		t.Fatalf("changes %+v", got.changes)
	}
	if len(got.skipped) != 1 || got.skipped[0].Reason != ingest.RefuseBadSignature || got.skipped[0].Position != 2 {
		t.Fatalf("skipped %+v", got.skipped)
	}
	// The document was fetched again once before the refusal.
	if n := e.dir.Lookups(); n != 2 {
		t.Fatalf("DID document fetched %d times, want 2", n)
	}
	if n := e.src.Counts(); n.RefusedBy[ingest.RefuseBadSignature] != 1 || n.Verified != 1 {
		t.Fatalf("counts %+v", n)
	}
	if len(got.resyncs) != 1 || got.resyncs[0].Reason != ingest.GapRefused {
		t.Fatalf("resyncs %+v", got.resyncs)
	}
}

func TestFirehoseRefusesMismatchedTree(t *testing.T) {
	t.Parallel()
	e := newFirehoseEnv(t, "app.test.post")
	e.start()
	alice := e.repo("did:plc:alice")
	c1 := e.commit(alice, post("a", "one"))
	c2 := e.commit(alice, post("b", "two"))
	// prevData names another tree than the one the operations lead back to.
	wrong := c2.Commit
	c2.PrevData = &wrong
	// An operation claims a record the tree does not hold.
	c3 := e.commit(alice, post("c", "three"))
	other := e.commit(e.repo("did:plc:bob"), post("z", "bob's"))
	c3.Ops[0].Cid = other.Ops[0].Cid
	e.publish(c1, c2, c3)

	got := e.sink.snapshot()
	if len(got.changes) != 1 || got.changes[0].RKey != "a" {
		t.Fatalf("changes %+v", got.changes)
	}
	if len(got.skipped) != 2 || got.skipped[0].Reason != ingest.RefuseBadCommit || got.skipped[1].Reason != ingest.RefuseBadCommit {
		t.Fatalf("skipped %+v", got.skipped)
	}
	// A tampered block (bytes that do not hash to their CID) is refused too.
	c4 := e.commit(alice, post("d", "four"))
	c4.Blocks = slices.Clone(c4.Blocks)
	c4.Blocks[len(c4.Blocks)-3] ^= 0x01
	e.publish(c4)
	if got := e.sink.snapshot(); len(got.changes) != 1 || len(got.skipped) != 3 || got.skipped[2].Reason != ingest.RefuseBadCommit {
		t.Fatalf("tampered block: changes %+v skipped %+v", got.changes, got.skipped)
	}
}

func TestFirehoseOrderAndGaps(t *testing.T) {
	t.Parallel()
	e := newFirehoseEnv(t, "app.test.post")
	e.start()
	alice := e.repo("did:plc:alice")
	c1 := e.commit(alice, post("a", "one"))
	c2 := e.commit(alice, post("b", "two"))
	c3 := e.commit(alice, post("c", "three"))
	c4 := e.commit(alice, post("d", "four"))
	// c2 arrives before c1: c1's rev is older than the one applied and is
	// ignored. c3 is missed: c4's since is not c2's rev, a gap.
	e.publish(c2, c1, c4)

	got := e.sink.snapshot()
	var rkeys []string
	for _, c := range got.changes {
		rkeys = append(rkeys, c.RKey)
	}
	if !slices.Equal(rkeys, []string{"b", "d"}) {
		t.Fatalf("indexed %v, want [b d]", rkeys)
	}
	if len(got.resyncs) != 1 || got.resyncs[0].Reason != ingest.GapSince || got.resyncs[0].Have.Rev != c2.Rev ||
		got.resyncs[0].Rev != c4.Rev || got.resyncs[0].DID != "did:plc:alice" {
		t.Fatalf("resyncs %+v", got.resyncs)
	}
	if n := e.src.Counts(); n.Stale != 1 || n.Verified != 2 {
		t.Fatalf("counts %+v", n)
	}
	_ = c3
}

func TestFirehoseKeyRotation(t *testing.T) {
	t.Parallel()
	e := newFirehoseEnv(t, "app.test.post")
	e.start()
	alice := e.repo("did:plc:alice")
	e.publish(e.commit(alice, post("a", "one")))
	// The account rotates its key: the cached document is stale.
	key, err := alice.Rotate()
	if err != nil {
		t.Fatal(err)
	}
	e.dir.Publish("did:plc:alice", key)
	e.publish(e.commit(alice, post("b", "two")))

	got := e.sink.snapshot()
	if len(got.changes) != 2 || len(got.skipped) != 0 {
		t.Fatalf("changes %+v skipped %+v", got.changes, got.skipped)
	}
	if n := e.dir.Lookups(); n != 2 {
		t.Fatalf("DID document fetched %d times, want 2", n)
	}
}

func TestFirehoseSyncIdentityAccount(t *testing.T) {
	t.Parallel()
	e := newFirehoseEnv(t, "app.test.post")
	e.start()
	alice := e.repo("did:plc:alice")
	handle := "alice.test"
	status := "deactivated"
	e.publish(e.commit(alice, post("a", "one")))
	e.publish(
		&comatproto.SyncSubscribeRepos_Identity{Did: "did:plc:alice", Handle: &handle, Time: "2026-01-01T00:00:00Z"},
		// Another account's: alice's commits would be skipped once she is
		// inactive (TestFirehoseSkipsInactiveAccounts).
		&comatproto.SyncSubscribeRepos_Account{Did: "did:plc:bob", Active: false, Status: &status, Time: "2026-01-01T00:00:00Z"},
	)
	got := e.sink.snapshot()
	if len(got.identities) != 1 || got.identities[0] != (ingest.IdentityEvent{DID: "did:plc:alice", Handle: handle}) {
		t.Fatalf("identities %+v", got.identities)
	}
	if len(got.accounts) != 1 || got.accounts[0] != (ingest.AccountEvent{DID: "did:plc:bob", Status: status}) {
		t.Fatalf("accounts %+v", got.accounts)
	}
	// The identity event purged the cached document: the next event's
	// verification fetches it again.
	sync, err := alice.Sync()
	if err != nil {
		t.Fatal(err)
	}
	e.publish(sync)
	if n := e.dir.Lookups(); n != 2 {
		t.Fatalf("DID document fetched %d times, want 2", n)
	}
	// The #sync event verified and moved the repository's state (its tree
	// is unchanged, so no resync).
	st, _, _ := e.sink.RepoState(context.Background(), "did:plc:alice")
	if got := e.sink.snapshot(); st.Rev != sync.Rev || len(got.resyncs) != 0 {
		t.Fatalf("state %+v resyncs %+v", st, got.resyncs)
	}
	// A #sync whose signature does not verify is refused.
	if _, err := alice.Rotate(); err != nil {
		t.Fatal(err)
	}
	bad, err := alice.Sync()
	if err != nil {
		t.Fatal(err)
	}
	e.publish(bad)
	if got := e.sink.snapshot(); len(got.skipped) != 1 || got.skipped[0].Kind != "sync" || got.skipped[0].Reason != ingest.RefuseBadSignature {
		t.Fatalf("skipped %+v", got.skipped)
	}
}

func TestFirehoseResumesAndFollowsWantedSet(t *testing.T) {
	t.Parallel()
	e := newFirehoseEnv(t, "app.test.post")
	alice := e.repo("did:plc:alice")
	e.start()
	e.publish(e.commit(alice, post("a", "one")), e.commit(alice, post("b", "two")))
	e.stop()
	// Published while the source is down.
	e.server.Publish(e.commit(alice, post("c", "three")))
	e.start()
	eventually(t, "the missed event", func() bool { return e.sink.at() == 3 })
	if cur := e.server.Cursors(); !slices.Equal(cur, []int64{-1, 2}) {
		t.Fatalf("subscription cursors %v, want [-1 2]", cur)
	}
	// A collection wanted from now on is indexed without a reconnection.
	e.setWanted("app.test.post", "app.test.like")
	eventually(t, "the new wanted set", func() bool {
		return slices.Contains(e.src.Status().Collections, "app.test.like")
	})
	e.publish(e.commit(alice, firehosetest.Op{Collection: "app.test.like", RKey: "l", Record: map[string]any{"subject": "x"}}))
	got := e.sink.snapshot()
	var rkeys []string
	for _, c := range got.changes {
		rkeys = append(rkeys, c.RKey)
	}
	if !slices.Equal(rkeys, []string{"a", "b", "c", "l"}) || len(got.resyncs) != 0 {
		t.Fatalf("indexed %v resyncs %+v", rkeys, got.resyncs)
	}
	if n := len(e.server.Cursors()); n != 2 {
		t.Fatalf("%d subscriptions, want 2", n)
	}
}

func TestFirehoseSkipsUnreadableFrames(t *testing.T) {
	t.Parallel()
	e := newFirehoseEnv(t, "app.test.post")
	e.startWith(2048)
	alice := e.repo("did:plc:alice")
	bob := e.repo("did:plc:bob")
	big := e.commit(alice, post("big", strings.Repeat("x", 4096)))
	e.server.Publish(big)
	e.server.PublishRaw([]byte{0xa2, 0x61, 0x74}) // a cut-short header
	e.publish(e.commit(bob, post("small", "fits")))

	got := e.sink.snapshot()
	if len(got.changes) != 1 || got.changes[0].RKey != "small" {
		t.Fatalf("changes %+v", got.changes)
	}
	if len(got.skipped) != 2 || got.skipped[0].Reason != ingest.SkipTooLarge || got.skipped[0].Size <= 2048 ||
		got.skipped[1].Reason != ingest.SkipUndecodable {
		t.Fatalf("skipped %+v", got.skipped)
	}
}
