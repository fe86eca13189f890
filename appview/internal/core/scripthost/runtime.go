// Package scripthost runs operator scripts inside Lexview: it resolves
// triggers (trigger-keyed scripts from /admin/scripts, and the legacy
// `script` and `index_hook` fields of lexicons) to compiled programs,
// serves scripted XRPC methods, runs record-event scripts in the batch
// writer with dead letters for failures, and gives scripts their host
// (the record index, the PDS write path, variables, the event log).
package scripthost

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bluesky-social/indigo/atproto/identity"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/indexer"
	"github.com/lexview/lexview/internal/netguard"
	"github.com/lexview/lexview/internal/textclip"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/oauth"
	"github.com/lexview/lexview/script"
	"github.com/lexview/lexview/storage"
)

// Store is the storage the runtime uses.
type Store interface {
	storage.ScriptStore
	storage.DeadLetterStore
	storage.ScriptRetryStore
	storage.QueryStore
	storage.SearchStore
	GetRecord(ctx context.Context, uri string) (storage.Record, error)
}

// PDSWriter writes to users' PDSes through their sessions.
type PDSWriter interface {
	CreateRecord(ctx context.Context, sessionID, collection string, record json.RawMessage, rkey string) (int, []byte, *oauth.WriteResult, error)
	PutRecord(ctx context.Context, sessionID, repo, collection, rkey string, record json.RawMessage, swapRecord string) (int, []byte, *oauth.WriteResult, error)
	DeleteRecord(ctx context.Context, sessionID, collection, rkey string) (int, []byte, string, error)
}

// Writer is the batch writer scripts' writes and retried dead letters go
// through.
type Writer interface {
	Write(ctx context.Context, source string, changes []storage.Change) (indexer.Result, error)
}

// Plugins runs script-library functions of plugins.
type Plugins interface {
	Call(ctx context.Context, id, fn string, input json.RawMessage) (json.RawMessage, error)
}

// LinkedRepos is the linked repos service as scripts use it: Write goes
// through the grant's session (the service with the instance's OAuth
// client).
type LinkedRepos interface {
	List(ctx context.Context) ([]storage.LinkedRepoGrant, error)
	// Write makes w in the linked repository w.Repo and returns the PDS's
	// answer; actorDID (the script's caller, "" without one) and trigger
	// (the script) go to the event log.
	Write(ctx context.Context, w script.LinkedWrite, actorDID, trigger string) (LinkedWritten, error)
}

// LinkedWritten is a PDS's answer to a write into a linked repository.
type LinkedWritten struct {
	URI string
	CID string // "" for deletes
	Rev string // the repository revision of the commit, when the PDS sent it
}

// Labels reads the labels that apply to subjects (storage.LabelStore).
type Labels interface {
	LabelsFor(ctx context.Context, subjects []string, now time.Time) (map[string][]storage.Label, error)
}

// Backlinks answers scripts' backlink queries (db.backlinks,
// db.backlinkCount): the backlinks service, which checks them as it
// checks the XRPC methods' queries.
type Backlinks interface {
	Backlinks(ctx context.Context, q storage.BacklinkQuery) (storage.BacklinkPage, error)
	CountBacklinks(ctx context.Context, q storage.BacklinkCountQuery) (storage.BacklinkCount, error)
}

// LocalXRPC calls a local XRPC method in-process, as the invocation's
// caller.
type LocalXRPC func(ctx context.Context, inv *script.Invocation, httpMethod, nsid string, query map[string][]string, body []byte) (int, []byte, error)

// Options configure a Runtime.
type Options struct {
	Engine     script.Engine
	Store      Store
	Lexicons   *lexicon.Registry
	Events     *eventlog.Log
	PDS        PDSWriter
	Directory  identity.Directory
	HTTPClient *http.Client // guarded outbound client for http.* and reindex
	Logger     *slog.Logger
	Now        func() time.Time
	// Retry tunes the automatic retries of failed record-event scripts.
	Retry RetryPolicy
	// Variables returns the decrypted script variables (the scripts
	// service). With an error it may return the variables that did
	// decrypt: scripts run with those, and the error is logged. Nil:
	// scripts have no variables.
	Variables func(ctx context.Context) (map[string]string, error)
	// SessionExpired reports whether a PDS write failed because the
	// caller's session could not be refreshed (the write path decides);
	// nil: never.
	SessionExpired func(err error) bool
	// Writer commits scripts' writes and retried dead letters. It is
	// called only once the runtime runs, so it may forward to a writer
	// built after the runtime (the writer itself runs the runtime's hook).
	// Nil: scripts' writes are not indexed and dead letters not retried.
	Writer Writer
	// LocalXRPC serves scripts' in-process XRPC calls; like Writer, it may
	// forward to a handler built after the runtime. Nil: such calls fail.
	LocalXRPC LocalXRPC
	// LinkedRepos serves scripts' writes into linked repositories; like
	// Writer, it may forward to a service built after the runtime. Nil:
	// such writes fail.
	LinkedRepos LinkedRepos
	// Labels serves scripts' label reads (db.labels); nil: no labels.
	Labels Labels
	// Backlinks serves scripts' backlink queries; nil: they fail.
	Backlinks Backlinks
	// Plugins runs the script-library functions of WASM plugins
	// (plugins.call); nil when the instance has none.
	Plugins Plugins
	// OnScan, when set, is told of every db.query and db.count answered
	// by scanning a collection where a value index would have served it
	// (storage.RecordQuery.OnScan): the index suggestions. It runs in the
	// script's query and must not block.
	OnScan func(storage.ScanHint)
	// HidesInvalid reports the collections whose records stored with a
	// validation error scripts' queries leave out by default (the
	// validation mode hide; script.InvalidHider); nil hides none.
	HidesInvalid func(collection string) bool
}

// ErrNoScript is returned by RetryDeadLetter when no script is bound to
// the dead letter's collection and action.
var ErrNoScript = errors.New("no script is bound")

// RetryPolicy bounds the automatic retries of a failed record-event
// script: only once every attempt has failed is the event a dead letter,
// left for an operator. Meanwhile it is a pending retry, stored (see
// retries.go).
type RetryPolicy struct {
	Attempts int           // total attempts, the first included; default 3 (1: no retry)
	Backoff  time.Duration // wait before the second attempt, doubling; default 2s
}

// Runtime is the script machinery of an App.
type Runtime struct {
	opt    Options
	log    *slog.Logger
	writer Writer
	xrpc   LocalXRPC

	snap   atomic.Pointer[snapshot]
	reload sync.Mutex
	vars   varsCache
	errLog errorLimiter
	// wake tells the retry loop that a retry was stored.
	wake chan struct{}
}

// New returns a Runtime; call Reload before use and Run for the retries.
func New(o Options) *Runtime {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.HTTPClient == nil {
		o.HTTPClient = netguard.NewClient(netguard.Options{}, 30*time.Second)
	}
	if o.Retry.Attempts <= 0 {
		o.Retry.Attempts = 3
	}
	if o.Retry.Backoff <= 0 {
		o.Retry.Backoff = 2 * time.Second
	}
	r := &Runtime{opt: o, log: o.Logger, writer: o.Writer, xrpc: o.LocalXRPC, wake: make(chan struct{}, 1)}
	r.vars.ttl = 10 * time.Second
	r.errLog.seen = map[string]time.Time{}
	r.snap.Store(&snapshot{byTrigger: map[string]*bound{}, compiled: map[[32]byte]*compiled{}})
	return r
}

// compiled is one compiled source, shared by every trigger using it.
type compiled struct {
	program script.Program
	err     error // the syntax error, when the source does not compile
}

// bound is the script bound to a trigger.
type bound struct {
	trigger string
	source  string
	*compiled
}

// snapshot is an immutable view of every trigger's script, built from the
// stored scripts and one lexicon snapshot.
type snapshot struct {
	byTrigger map[string]*bound
	compiled  map[[32]byte]*compiled
	scripts   []storage.Script
	lexicons  *lexicon.Snapshot
}

// lookup returns the script of a trigger.
func (s *snapshot) lookup(trigger string) (*bound, bool) {
	b, ok := s.byTrigger[trigger]
	return b, ok
}

// Lookup returns the script bound to a trigger kind and NSID.
func (r *Runtime) Lookup(kind, nsid string) (*bound, bool) {
	return r.current().lookup(script.Trigger(kind, nsid))
}

// current returns the trigger table, rebuilt first when the lexicons
// changed since it was built, so that a lexicon's script or index hook
// applies from the first request after its upload.
func (r *Runtime) current() *snapshot {
	s := r.snap.Load()
	if lex := r.opt.Lexicons.Snapshot(); lex != s.lexicons {
		r.reload.Lock()
		defer r.reload.Unlock()
		if s = r.snap.Load(); s.lexicons != lex {
			s = r.build(s, s.scripts, lex)
			r.snap.Store(s)
		}
	}
	return s
}

// Check compiles source and returns its syntax error.
func (r *Runtime) Check(source string) error {
	_, err := r.opt.Engine.Compile("check", source)
	return err
}

// Reload rebuilds the trigger table from the stored scripts and the
// lexicons. Sources already compiled are reused.
func (r *Runtime) Reload(ctx context.Context) error {
	r.reload.Lock()
	defer r.reload.Unlock()
	scripts, err := r.opt.Store.ListScripts(ctx)
	if err != nil {
		return fmt.Errorf("scripting: list scripts: %w", err)
	}
	r.snap.Store(r.build(r.snap.Load(), scripts, r.opt.Lexicons.Snapshot()))
	r.vars.invalidate()
	return nil
}

// build makes the trigger table of scripts and lexicons, reusing the
// programs old already compiled.
func (r *Runtime) build(old *snapshot, scripts []storage.Script, lexicons *lexicon.Snapshot) *snapshot {
	next := &snapshot{byTrigger: map[string]*bound{}, compiled: map[[32]byte]*compiled{}, scripts: scripts, lexicons: lexicons}
	bind := func(trigger, source string) {
		// Keyed by trigger too: the trigger names the chunk in error
		// messages.
		key := sha256.Sum256([]byte(trigger + "\x00" + source))
		c, ok := next.compiled[key]
		if !ok {
			if c, ok = old.compiled[key]; !ok {
				prog, err := r.opt.Engine.Compile(trigger, source)
				c = &compiled{program: prog, err: err}
			}
			next.compiled[key] = c
		}
		next.byTrigger[trigger] = &bound{trigger: trigger, source: source, compiled: c}
	}
	// Legacy lexicon fields first, so that a trigger-keyed script wins.
	for _, l := range lexicons.All() {
		if l.Script != "" {
			switch l.Kind {
			case lexicon.KindQuery:
				bind(script.Trigger(script.KindQuery, l.ID), l.Script)
			case lexicon.KindProcedure:
				bind(script.Trigger(script.KindProcedure, l.ID), l.Script)
			}
		}
		if l.IndexHook != "" {
			collection := l.ID
			if l.Kind != lexicon.KindRecord && l.TargetCollection != "" {
				collection = l.TargetCollection
			}
			bind(script.Trigger(script.KindIndex, collection), l.IndexHook)
		}
	}
	for _, s := range scripts {
		bind(s.Trigger, s.Source)
	}
	return next
}

// Run keeps the trigger table fresh (lexicon changes at once, other
// instances' script changes within refresh) and makes the automatic
// retries of failed record-event scripts (retryLoop), until ctx ends.
func (r *Runtime) Run(ctx context.Context, refresh time.Duration) {
	changed, unsubscribe := r.opt.Lexicons.Subscribe()
	defer unsubscribe()
	go r.retryLoop(ctx)
	t := time.NewTicker(refresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-t.C:
		}
		if err := r.Reload(ctx); err != nil && ctx.Err() == nil {
			r.log.Warn("reloading scripts failed", "err", err)
		}
	}
}

// errorLimiter keeps script.error events from flooding the event log: at
// most one entry per trigger every errorEvery, counting the rest.
type errorLimiter struct {
	mu         sync.Mutex
	seen       map[string]time.Time
	suppressed map[string]int
}

const errorEvery = 10 * time.Second

// allow reports whether an error of trigger may be logged now, and how
// many were suppressed since the last one.
func (l *errorLimiter) allow(trigger string, now time.Time) (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.suppressed == nil {
		l.suppressed = map[string]int{}
	}
	if last, ok := l.seen[trigger]; ok && now.Sub(last) < errorEvery {
		l.suppressed[trigger]++
		return false, 0
	}
	l.seen[trigger] = now
	n := l.suppressed[trigger]
	delete(l.suppressed, trigger)
	return true, n
}

// maxDetailInput bounds the input copied into a script.error event, and
// maxErrorText the error text copied into the log and the event: a script
// chooses its error's text and must not fill the log with it.
const (
	maxDetailInput = 4 << 10
	maxErrorText   = 4 << 10
)

// clip cuts s to at most n bytes (on a UTF-8 boundary), marking the cut.
func clip(s string, n int) string { return textclip.Clip(s, n) }

// recordError logs a script failure and appends a script.error event.
func (r *Runtime) recordError(ctx context.Context, b *bound, inv *script.Invocation, input string, err error) {
	callerDID := ""
	if inv.Caller != nil {
		callerDID = inv.Caller.DID
	}
	msg := clip(err.Error(), maxErrorText)
	r.log.Warn("script failed", "trigger", b.trigger, "method", inv.Method, "caller", callerDID, "err", msg)
	ok, suppressed := r.errLog.allow(b.trigger, r.opt.Now())
	if !ok {
		return
	}
	input = clip(input, maxDetailInput)
	detail := map[string]any{
		"error": msg, "script_source": b.source, "input": input, "caller_did": callerDID, "method": inv.Method,
		"trigger": b.trigger,
	}
	if suppressed > 0 {
		detail["suppressed_since_last"] = suppressed
	}
	r.opt.Events.Record(context.WithoutCancel(ctx), eventlog.Entry{
		Type: "script.error", Severity: eventlog.Error, Subject: b.trigger, ActorDID: callerDID, Detail: detail,
	})
}

// execute runs a bound script; a syntax error of the source is reported
// like a runtime failure.
func (b *bound) execute(ctx context.Context, inv *script.Invocation) ([]byte, error) {
	return b.executeAppend(ctx, inv, nil)
}

// executeAppend is execute with the result appended to dst.
func (b *bound) executeAppend(ctx context.Context, inv *script.Invocation, dst []byte) ([]byte, error) {
	if b.err != nil {
		return nil, b.err
	}
	if p, ok := b.program.(script.AppendProgram); ok {
		return p.AppendRun(ctx, inv, dst)
	}
	out, err := b.program.Run(ctx, inv)
	if err != nil {
		return nil, err
	}
	return append(dst, out...), nil
}
