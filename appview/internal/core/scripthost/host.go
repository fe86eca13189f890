package scripthost

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/oauth"
	"github.com/lexview/lexview/script"
	"github.com/lexview/lexview/storage"
)

// host is Lexview as scripts see it.
type host struct {
	Store
	r *Runtime
}

var _ script.Host = host{}

func (r *Runtime) host() host { return host{Store: r.opt.Store, r: r} }

// QueryRecords runs a script's db.query, reporting a scan an index would
// have served to Options.OnScan.
func (h host) QueryRecords(ctx context.Context, q storage.RecordQuery) (storage.RecordQueryPage, error) {
	return h.Store.QueryRecords(ctx, h.r.withScanHint(q))
}

// CountMatching runs a script's db.count, reporting a scan an index would
// have served to Options.OnScan.
func (h host) CountMatching(ctx context.Context, q storage.RecordQuery) (int64, error) {
	return h.Store.CountMatching(ctx, h.r.withScanHint(q))
}

// HidesInvalid implements script.InvalidHider.
func (h host) HidesInvalid(collection string) bool {
	return h.r.opt.HidesInvalid != nil && h.r.opt.HidesInvalid(collection)
}

var _ script.InvalidHider = host{}

// withScanHint sets q's OnScan to Options.OnScan unless q has its own.
func (r *Runtime) withScanHint(q storage.RecordQuery) storage.RecordQuery {
	if q.OnScan == nil {
		q.OnScan = r.opt.OnScan
	}
	return q
}

// varsCache keeps the decrypted script variables for a short while, so
// that scripts reading vars do not decrypt on every request.
type varsCache struct {
	mu     sync.Mutex
	ttl    time.Duration
	at     time.Time
	values map[string]string
}

func (c *varsCache) invalidate() {
	c.mu.Lock()
	c.values = nil
	c.mu.Unlock()
}

// Vars returns the decrypted script variables.
func (h host) Vars(ctx context.Context) (map[string]string, error) {
	c := &h.r.vars
	c.mu.Lock()
	defer c.mu.Unlock()
	now := h.r.opt.Now()
	if c.values != nil && now.Sub(c.at) < c.ttl {
		return c.values, nil
	}
	if h.r.opt.Variables == nil {
		return map[string]string{}, nil
	}
	vals, err := h.r.opt.Variables(ctx)
	if err != nil {
		if vals == nil {
			return nil, err
		}
		// Variables that no longer decrypt (key rotated) are left out.
		h.r.log.Warn("some script variables could not be decrypted", "err", err)
	}
	c.values, c.at = vals, now
	return vals, nil
}

// InvalidateVars makes the next run read the variables again.
func (r *Runtime) InvalidateVars() { r.vars.invalidate() }

// Log writes a script's message to the debug log and the event log.
func (h host) Log(ctx context.Context, inv *script.Invocation, message string) {
	callerDID := ""
	if inv.Caller != nil {
		callerDID = inv.Caller.DID
	}
	h.r.log.Debug("script log", "method", inv.Method, "caller", callerDID, "message", message)
	h.r.opt.Events.Record(context.WithoutCancel(ctx), eventlog.Entry{
		Type: "script.log", Subject: script.Trigger(inv.Kind, inv.Method), ActorDID: callerDID,
		Detail: map[string]any{"message": message, "method": inv.Method},
	})
}

// HTTPClient is the guarded outbound client.
func (h host) HTTPClient() *http.Client {
	return h.r.opt.HTTPClient
}

// XRPC calls a local method in-process.
func (h host) XRPC(ctx context.Context, inv *script.Invocation, method, nsid string, params url.Values, body []byte) (int, []byte, error) {
	if h.r.xrpc == nil {
		return 0, nil, errors.New("local XRPC calls are not available")
	}
	return h.r.xrpc(ctx, inv, method, nsid, params, body)
}

// errPDS is a PDS refusal of a script's write.
type errPDS struct {
	status int
	body   []byte
}

func (e *errPDS) Error() string {
	return fmt.Sprintf("the PDS answered %d: %s", e.status, truncate(string(e.body), 300))
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// viaScript is the `via` of the audit entries of scripts' writes.
const viaScript = "script"

// WriteRecord writes through the caller's PDS session, then indexes the
// result through the batch writer, where record-event scripts see it like
// any other event, and audits it (record.created, record.updated,
// record.deleted). A put the PDS makes no commit for (the record
// unchanged) is not indexed again when the index holds the record; it is
// audited as record.put_skipped under verbose logging only.
func (h host) WriteRecord(ctx context.Context, caller *script.Caller, w script.RecordWrite) (script.WriteResult, error) {
	pds := h.r.opt.PDS
	if pds == nil {
		return script.WriteResult{}, errors.New("writing to a PDS is not configured")
	}
	if w.Delete {
		status, body, rev, err := pds.DeleteRecord(ctx, caller.SessionID, w.Collection, w.RKey)
		if err != nil {
			return script.WriteResult{}, h.wrapWriteErr(err)
		}
		if status != http.StatusOK {
			return script.WriteResult{}, &errPDS{status, body}
		}
		h.index(ctx, storage.Change{Op: storage.OpDelete, DID: caller.DID, Collection: w.Collection, RKey: w.RKey, Rev: rev})
		uri := "at://" + caller.DID + "/" + w.Collection + "/" + w.RKey
		h.r.opt.Events.Record(ctx, eventlog.RecordOp(storage.OpDelete, caller.DID, uri, "", rev, viaScript))
		return script.WriteResult{URI: uri}, nil
	}
	var (
		status int
		body   []byte
		res    *oauth.WriteResult
		err    error
	)
	op := storage.OpCreate
	if w.Update {
		op = storage.OpUpdate
		status, body, res, err = pds.PutRecord(ctx, caller.SessionID, caller.DID, w.Collection, w.RKey, w.Record, "")
	} else {
		status, body, res, err = pds.CreateRecord(ctx, caller.SessionID, w.Collection, w.Record, w.RKey)
	}
	if err != nil {
		return script.WriteResult{}, h.wrapWriteErr(err)
	}
	if status != http.StatusOK || res == nil {
		return script.WriteResult{}, &errPDS{status, body}
	}
	if w.Update && res.NoCommit() {
		uri := "at://" + caller.DID + "/" + w.Collection + "/" + w.RKey
		if stored, err := h.GetRecord(ctx, uri); err == nil && stored.CID == res.CID {
			// The PDS skipped the put (the record unchanged): nothing to index.
			h.r.opt.Events.RecordVerbose(ctx, eventlog.PutSkipped(caller.DID, uri, res.CID, viaScript))
			return script.WriteResult{URI: uri, CID: res.CID}, nil
		}
	}
	h.r.opt.Events.Record(ctx, eventlog.RecordOp(op, caller.DID, res.URI, res.CID, res.Rev, viaScript))
	if u, perr := syntax.ParseATURI(res.URI); perr == nil {
		h.index(ctx, storage.Change{Op: op, DID: caller.DID, Collection: w.Collection, RKey: u.RecordKey().String(),
			CID: res.CID, Rev: res.Rev, Record: w.Record})
	}
	return script.WriteResult{URI: res.URI, CID: res.CID}, nil
}

// LinkedRepos lists the grants bound to an account.
func (h host) LinkedRepos(ctx context.Context) ([]script.LinkedRepo, error) {
	lr := h.r.opt.LinkedRepos
	if lr == nil {
		return nil, nil
	}
	grants, err := lr.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]script.LinkedRepo, 0, len(grants))
	for _, g := range grants {
		if g.DID != "" {
			out = append(out, script.LinkedRepo{DID: g.DID, Handle: g.Handle, Scopes: g.Scopes, Status: g.Status})
		}
	}
	return out, nil
}

// WriteLinkedRecord writes through a linked repo grant's session, then
// indexes the result like WriteRecord does.
func (h host) WriteLinkedRecord(ctx context.Context, inv *script.Invocation, w script.LinkedWrite) (script.WriteResult, error) {
	lr := h.r.opt.LinkedRepos
	if lr == nil {
		return script.WriteResult{}, errors.New("linked repos are not available")
	}
	op := storage.OpCreate
	switch {
	case w.Delete:
		op = storage.OpDelete
	case w.Update:
		op = storage.OpUpdate
	}
	actor := ""
	if inv.Caller != nil {
		actor = inv.Caller.DID
	}
	res, err := lr.Write(ctx, w, actor, script.Trigger(inv.Kind, inv.Method))
	if err != nil {
		return script.WriteResult{}, err
	}
	if u, perr := syntax.ParseATURI(res.URI); perr == nil {
		c := storage.Change{Op: op, DID: w.Repo, Collection: w.Collection, RKey: u.RecordKey().String(), CID: res.CID, Rev: res.Rev}
		if op != storage.OpDelete {
			c.Record = w.Record
		}
		h.index(ctx, c)
	}
	return script.WriteResult{URI: res.URI, CID: res.CID}, nil
}

// MaxLabelSubjects bounds the subjects of one label read.
const MaxLabelSubjects = 1000

// Labels returns the labels that apply now to subjects.
func (h host) Labels(ctx context.Context, subjects []string) (map[string][]storage.Label, error) {
	if len(subjects) > MaxLabelSubjects {
		return nil, fmt.Errorf("at most %d subjects", MaxLabelSubjects)
	}
	if h.r.opt.Labels == nil || len(subjects) == 0 {
		return map[string][]storage.Label{}, nil
	}
	return h.r.opt.Labels.LabelsFor(ctx, subjects, h.r.opt.Now())
}

var errNoBacklinks = errors.New("backlinks are not available on this instance")

// Backlinks returns a page of the records linking to a subject
// (Options.Backlinks).
func (h host) Backlinks(ctx context.Context, q storage.BacklinkQuery) (storage.BacklinkPage, error) {
	if h.r.opt.Backlinks == nil {
		return storage.BacklinkPage{}, errNoBacklinks
	}
	return h.r.opt.Backlinks.Backlinks(ctx, q)
}

// CountBacklinks counts the records linking to a subject and their
// accounts (Options.Backlinks).
func (h host) CountBacklinks(ctx context.Context, q storage.BacklinkCountQuery) (storage.BacklinkCount, error) {
	if h.r.opt.Backlinks == nil {
		return storage.BacklinkCount{}, errNoBacklinks
	}
	return h.r.opt.Backlinks.CountBacklinks(ctx, q)
}

// wrapWriteErr is the script's error for a PDS write that failed: the
// write path decides what a PDS client's failure means (an expired
// session, or an upstream failure).
func (h host) wrapWriteErr(err error) error {
	if h.r.opt.SessionExpired != nil && h.r.opt.SessionExpired(err) {
		return errors.New("the caller's PDS session has expired")
	}
	return fmt.Errorf("writing to the PDS failed: %w", err)
}

// index commits a written change so a read right after sees it; a failure
// is logged (the PDS has the record; the stream brings it too).
func (h host) index(ctx context.Context, c storage.Change) {
	if h.r.writer == nil {
		return
	}
	res, err := h.r.writer.Write(ctx, "script", []storage.Change{c})
	if err != nil || len(res.Rejected) > 0 {
		h.r.log.WarnContext(ctx, "indexing a script's write failed", "uri", c.URI(), "err", err, "rejected", len(res.Rejected))
	}
}
