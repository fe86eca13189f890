package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bluesky-social/indigo/atproto/identity"
	"github.com/coder/websocket"

	"github.com/lexview/lexview/internal/netguard"
	"github.com/lexview/lexview/storage"
)

// FirehoseName is the firehose source's name: its cursor (the relay's
// sequence number) is stored under CursorKey(FirehoseName).
const FirehoseName = "firehose"

// Reasons of a SkippedEvent that a verified source refused: the event
// decoded but could not be verified, and nothing of it was indexed.
const (
	// RefuseBadSignature: the commit's signature does not verify against
	// the author's current #atproto key, even after the DID document was
	// fetched again.
	RefuseBadSignature = "bad_signature"
	// RefuseBadCommit: the commit's blocks, operations and MST do not agree
	// (an operation's CID is not in the tree, the inverted operations do
	// not lead to prevData, the signed commit is not the one described).
	RefuseBadCommit = "bad_commit"
	// RefuseUnverifiable: the commit lacks what Sync 1.1 verification needs
	// (prevData, the previous CIDs of updates and deletes, or its blocks:
	// tooBig).
	RefuseUnverifiable = "unverifiable"
	// RefuseNoIdentity: the author's DID document, and so its key, could
	// not be resolved.
	RefuseNoIdentity = "identity_unresolved"
)

// Gap reasons of a ResyncRequest.
const (
	// GapSince: the commit's since is not the revision last applied.
	GapSince = "since_mismatch"
	// GapPrevData: the commit's prevData is not the MST root last applied.
	GapPrevData = "prev_data_mismatch"
	// GapSync: a #sync event declared a repository state other than the one
	// last applied.
	GapSync = "sync_event"
	// GapRefused: a commit of the repository was refused, so the state
	// applied is behind the repository's.
	GapRefused = "refused_commit"
	// GapReactivated: the account is active again after being inactive;
	// its records were removed meanwhile.
	GapReactivated = "account_reactivated"
)

// ResyncRequest reports a repository whose applied state no longer
// follows its history: commits were missed or refused. The repository
// should be fetched whole (com.atproto.sync.getRepo) and re-indexed.
type ResyncRequest struct {
	DID    string
	Reason string // GapSince, GapPrevData, GapSync, GapRefused, GapReactivated
	Seq    int64  // the stream position of the event that showed the gap
	// Have is the state applied before the event (zero when none); Rev is
	// the revision the event brought.
	Have storage.RepoState
	Rev  string
}

// CommitSink is the Sink of a verified source: it also stores the
// repositories' sync states with the records, and takes resync requests.
type CommitSink interface {
	Sink
	// Commit is Records for verified commits: repos are the states the
	// commits reached, stored in the same transaction as the changes and
	// the position (an older revision never replaces a stored newer one).
	Commit(ctx context.Context, changes []storage.Change, repos []storage.RepoState, cursor int64) error
	// RepoState returns the state stored for a repository (ok false when
	// none).
	RepoState(ctx context.Context, did string) (st storage.RepoState, ok bool, err error)
	// AccountState returns the account status stored for a DID (ok false
	// when none). The source keeps the statuses of the #account events it
	// hands over itself; this is read for a repository it has not seen.
	AccountState(ctx context.Context, did string) (st storage.AccountState, ok bool, err error)
	// Resync reports a repository whose history has a gap. It must not
	// block the stream for long.
	Resync(ctx context.Context, r ResyncRequest)
}

// Firehose follows com.atproto.sync.subscribeRepos on a relay (or a single
// PDS) and verifies every #commit before anything of it is indexed: the
// signature against the author's current #atproto key (the DID document is
// fetched again once when it fails, as the key may have rotated), and the
// operations against the MST and prevData as Sync 1.1 specifies, with
// indigo's atproto/repo. It keeps each repository's order (a commit whose
// rev is not newer than the one applied is ignored) and reports gaps
// (since or prevData not matching the state applied) to the sink.
//
// Unlike Jetstream a firehose cannot be filtered: every commit is read and
// verified (a repository's state must follow all of them), and the changes
// of the wanted collections only are handed over. The wanted set is
// re-read when it changes, without reconnecting.
//
// It needs a CommitSink; Run fails with any other Sink.
type Firehose struct {
	// URL is the relay or PDS: https://host (the subscribeRepos path is
	// added), or the full wss:// URL of the endpoint.
	URL string
	// Directory resolves the authors' DID documents (their #atproto keys).
	// Required.
	Directory identity.Directory
	// HTTPClient dials the WebSocket; nil means a client that refuses
	// private and loopback addresses other than the URL's own origin.
	HTTPClient *http.Client
	// MinBackoff and MaxBackoff bound reconnect delays; defaults 500ms, 30s.
	MinBackoff, MaxBackoff time.Duration
	// MaxMessageSize bounds the frames decoded; default 8 MiB (relays
	// bound a commit's blocks to 2 MiB). A larger frame is read through
	// without being kept, and skipped.
	MaxMessageSize int64
	// MaxSkipSize bounds the bytes read of a frame skipped for its size;
	// default 64 MiB. A larger frame ends the connection.
	MaxSkipSize int64
	// RepoCache bounds the repository states kept in memory; default
	// 200,000. States are read from the sink on a miss.
	RepoCache int
	// Workers is the number of goroutines verifying commits (frames are
	// still applied in stream order); default GOMAXPROCS.
	Workers int
	Logger  *slog.Logger
	Now     func() time.Time

	status  tracker
	mu      sync.Mutex // guards counts and refused
	counts  FirehoseCounts
	refused map[string]int64
	wanted  atomic.Pointer[[]string]
}

// FirehoseCounts are the firehose's event counts since start.
type FirehoseCounts struct {
	Verified int64 `json:"commits_verified"` // commits verified (applied or not)
	Stale    int64 `json:"commits_stale"`    // commits ignored: rev not newer than the one applied
	Inactive int64 `json:"commits_inactive"` // commits and #sync events skipped: the account is inactive
	Refused  int64 `json:"events_refused"`   // events refused (see RefusedBy)
	Resyncs  int64 `json:"resyncs_requested"`
	// RefusedBy counts refused events by reason (RefuseBadSignature, ...).
	RefusedBy map[string]int64 `json:"refused_by_reason,omitempty"`
}

// Name implements Source.
func (f *Firehose) Name() string { return FirehoseName }

// Status implements Source.
func (f *Firehose) Status() Status {
	st := f.status.snapshot(f.now())
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.counts
	c.RefusedBy = maps.Clone(f.refused)
	st.Verification = &c
	return st
}

// Counts returns the firehose's event counts since start.
func (f *Firehose) Counts() FirehoseCounts { return *f.Status().Verification }

func (f *Firehose) defaults() {
	if f.MinBackoff <= 0 {
		f.MinBackoff = 500 * time.Millisecond
	}
	if f.MaxBackoff <= 0 {
		f.MaxBackoff = 30 * time.Second
	}
	if f.MaxMessageSize <= 0 {
		f.MaxMessageSize = 8 << 20
	}
	if f.MaxSkipSize <= 0 {
		f.MaxSkipSize = 64 << 20
	}
	f.MaxSkipSize = max(f.MaxSkipSize, f.MaxMessageSize)
	if f.Workers <= 0 {
		f.Workers = runtime.GOMAXPROCS(0)
	}
	if f.RepoCache <= 0 {
		f.RepoCache = 200_000
	}
	if f.Logger == nil {
		f.Logger = slog.Default()
	}
	if f.HTTPClient == nil {
		// The operator chose the URL; its host may be on a private network.
		f.HTTPClient = netguard.NewClient(netguard.Options{AllowOrigins: []string{f.URL}}, 0)
	}
}

// subscribeURL is the endpoint URL from cursor (resume false: live).
func (f *Firehose) subscribeURL(cursor int64, resume bool) (string, error) {
	u, err := url.Parse(f.URL)
	if err != nil {
		return "", fmt.Errorf("firehose URL: %w", err)
	}
	switch u.Scheme {
	case "https":
		u.Scheme = "wss"
	case "http":
		u.Scheme = "ws"
	case "wss", "ws":
	default:
		return "", fmt.Errorf("firehose URL %q: scheme must be https, http, wss or ws", f.URL)
	}
	const endpoint = "/xrpc/com.atproto.sync.subscribeRepos"
	if !strings.HasSuffix(u.Path, endpoint) {
		u.Path = strings.TrimRight(u.Path, "/") + endpoint
	}
	q := u.Query()
	q.Del("cursor")
	if resume {
		q.Set("cursor", strconv.FormatInt(cursor, 10))
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// Run implements Source.
func (f *Firehose) Run(ctx context.Context, wanted func() []string, changed <-chan struct{}, sink Sink) error {
	cs, ok := sink.(CommitSink)
	if !ok {
		return errors.New("firehose: the sink does not keep repository states (ingest.CommitSink)")
	}
	if f.Directory == nil {
		return errors.New("firehose: no identity directory to verify signatures with")
	}
	f.defaults()
	st := &streamState{repos: newRepoCache(f.RepoCache)}
	if c, ok, err := sink.Resume(ctx); err != nil {
		return fmt.Errorf("firehose: read stored cursor: %w", err)
	} else if ok {
		st.cursor, st.resume = c, true
	}
	f.setWanted(wanted())
	go func() {
		for {
			select {
			case <-changed:
				f.setWanted(wanted())
			case <-ctx.Done():
				return
			}
		}
	}()
	backoff := f.MinBackoff
	for ctx.Err() == nil {
		if len(f.wantedNow()) == 0 {
			// Nothing to index: do not read the whole network for nothing.
			f.status.state(StateIdle, f.URL, nil, 0)
			select {
			case <-changed:
				f.setWanted(wanted())
				continue
			case <-ctx.Done():
				return nil
			}
		}
		started := f.now()
		err := f.connect(ctx, st, cs)
		if ctx.Err() != nil {
			return nil
		}
		if f.now().Sub(started) > time.Minute {
			backoff = f.MinBackoff
		}
		wait := jitter(backoff)
		now := f.now()
		f.status.failed(err, now, now.Add(wait))
		f.Logger.Warn("firehose connection lost; reconnecting", "err", err, "retry_in", wait.Round(time.Millisecond).String())
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil
		}
		backoff = min(backoff*2, f.MaxBackoff)
	}
	return nil
}

func (f *Firehose) setWanted(cols []string) {
	cols = slices.Clone(cols)
	slices.Sort(cols)
	f.wanted.Store(&cols)
	f.status.collections(cols)
}

func (f *Firehose) wantedNow() []string {
	if p := f.wanted.Load(); p != nil {
		return *p
	}
	return nil
}

// connect runs one connection until it fails or ctx ends.
func (f *Firehose) connect(ctx context.Context, st *streamState, sink CommitSink) error {
	target, err := f.subscribeURL(st.cursor, st.resume)
	if err != nil {
		return err
	}
	f.status.state(StateConnecting, f.URL, nil, 0)
	dialCtx, cancelDial := context.WithTimeout(ctx, 15*time.Second)
	conn, _, err := websocket.Dial(dialCtx, target, &websocket.DialOptions{HTTPClient: f.HTTPClient})
	cancelDial()
	if err != nil {
		f.status.state(StateWaiting, f.URL, nil, 0)
		return fmt.Errorf("dial: %w", err)
	}
	defer conn.CloseNow()
	conn.SetReadLimit(f.MaxSkipSize)
	f.status.state(StateConnected, f.URL, nil, st.cursor)
	sink.StateChanged(ctx, true, map[string]any{"url": f.URL, "cursor": st.cursor})
	f.Logger.Info("connected to the firehose", "url", f.URL, "cursor", st.cursor)
	err = f.read(ctx, conn, st, sink)
	f.status.state(StateWaiting, f.URL, nil, 0)
	sink.StateChanged(context.WithoutCancel(ctx), false, map[string]any{"url": f.URL, "cursor": st.cursor, "reason": errString(err)})
	return err
}

// count updates the verification counts under the lock.
func (f *Firehose) count(fn func(c *FirehoseCounts)) {
	f.mu.Lock()
	fn(&f.counts)
	f.mu.Unlock()
}

func (f *Firehose) countRefused(reason string) {
	f.mu.Lock()
	if f.refused == nil {
		f.refused = map[string]int64{}
	}
	f.refused[reason]++
	f.counts.Refused++
	f.mu.Unlock()
}

// now reads Now, or the system clock when Now is nil (see Jetstream.now).
func (f *Firehose) now() time.Time { return clock(f.Now) }
