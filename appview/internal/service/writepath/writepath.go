// Package writepath is the service that writes to users' PDSes through
// their device sessions. Behind procedures' default behaviour, a
// procedure's body becomes a record of its lexicon's target collection,
// written to the caller's PDS (createRecord, or putRecord when the body
// names the record's `uri`), then indexed locally through the batch
// writer, so that a read right after the write sees it, and audited
// (record.created, record.updated); uploadBlob streams a blob to the
// caller's PDS (UploadBlob). It also gives the PDS write client the device
// sessions it acts with (SessionSource), and it is the one place where a
// PDS client's failure becomes an answer (PDSError).
package writepath

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/core/caller"
	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/core/indexer"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/oauth"
	"github.com/lexview/lexview/storage"
)

// PDS writes to a user's PDS through their session (*oauth.Client).
type PDS interface {
	CreateRecord(ctx context.Context, sessionID, collection string, record json.RawMessage, rkey string) (int, []byte, *oauth.WriteResult, error)
	PutRecord(ctx context.Context, sessionID, repo, collection, rkey string, record json.RawMessage, swapRecord string) (int, []byte, *oauth.WriteResult, error)
	// Do sends a request and returns the PDS's response with its body
	// unread, streaming a body larger than it buffers.
	Do(ctx context.Context, sessionID, method, path string, query url.Values, body io.Reader, contentType string, contentLength int64) (*http.Response, error)
}

// Indexer commits a change and waits for it (the batch writer), and says
// beforehand whether it would accept a record.
type Indexer interface {
	Write(ctx context.Context, source string, changes []storage.Change) (indexer.Result, error)
	CheckRecord(collection string, record json.RawMessage) error
}

// Options are what the service works with; PDS and Indexer are required.
type Options struct {
	PDS     PDS
	Indexer Indexer
	// MaxBlobSize bounds UploadBlob's blobs; default DefaultMaxBlobSize.
	MaxBlobSize int64
	// Lexicons tells whether a collection's record declares `uri`.
	Lexicons interface{ Snapshot() *lexicon.Snapshot }
	// Records reads the index: a put the PDS made no commit for (the
	// record unchanged) is not indexed again when the index holds it.
	Records interface {
		GetRecord(ctx context.Context, uri string) (storage.Record, error)
	}
	Events *eventlog.Log
	Logger *slog.Logger
	Now    func() time.Time
}

// Service writes to users' PDSes.
type Service struct {
	opt Options
}

// New returns the service with unset options at their defaults.
func New(opt Options) *Service {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	if opt.MaxBlobSize <= 0 {
		opt.MaxBlobSize = DefaultMaxBlobSize
	}
	return &Service{opt: opt}
}

// Answer is the PDS's answer to a write, passed on unchanged.
type Answer struct {
	Status int
	Body   []byte
	// NotIndexed says why a write the PDS accepted was not indexed before
	// the answer ("" when it was).
	NotIndexed string
}

var (
	errNoSession = fail.New(fail.Unauthenticated, "procedures need a DPoP session to write to the PDS")
	errNoTarget  = fail.New(fail.Invalid, "this procedure has no target_collection")
	errBadBody   = fail.New(fail.Invalid, "invalid request body")
	errUpstream  = fail.New(fail.Upstream, "upstream PDS failure")

	// The refusals of a body's `uri` that names no record to replace, on
	// a collection whose record has no `uri` field (see target).
	errURINotATURI     = fail.New(fail.Invalid, "invalid AT URI")
	errURIByHandle     = fail.New(fail.Invalid, "invalid AT URI: name the repository by its DID")
	errURINoRecord     = fail.New(fail.Invalid, "invalid AT URI: it names no record")
	errURIOtherRepo    = fail.New(fail.Forbidden, "cannot write to another account's repository")
	errURIOtherCollect = fail.New(fail.Invalid, "uri names a record of another collection")
)

// ErrSessionExpired answers a write whose device session's tokens could
// not be refreshed: 401 `token_expired`, the user must sign in again.
var ErrSessionExpired = fail.New(fail.Unauthenticated, caller.MsgTokenExpired)

// PDSError is the one place where a failure of the PDS client becomes an
// answer: a refused token refresh (*oauth.RefreshError: the session
// expired) is ErrSessionExpired, anything else an upstream PDS failure
// (err kept as the cause). A nil err is nil.
func PDSError(err error) error {
	if err == nil {
		return nil
	}
	var re *oauth.RefreshError
	if errors.As(err, &re) {
		return ErrSessionExpired
	}
	return fail.Wrap(errUpstream.Kind, errUpstream.Message, err)
}

// SessionExpired reports whether a PDS client's failure is the expired
// session PDSError makes of it, for callers that answer in their own
// words (scripts' writes).
func SessionExpired(err error) bool { return errors.Is(PDSError(err), ErrSessionExpired) }

// Write makes body (a JSON object) a record of collection in the caller's
// repository: created, or replaced when body's `uri` is the AT URI of a
// record of collection in the caller's repository. Any other `uri` is a
// field of the record when the collection's record declares one, and
// refused otherwise (see target): nothing reaches the PDS then. The record
// is validated first, as indexing it will be: an invalid one never
// reaches the PDS. It returns the PDS's answer; a PDS that answers with an
// error status is an Answer too, not an error. A write the PDS accepts is
// audited (record.created, record.updated).
func (s *Service) Write(ctx context.Context, user *caller.User, collection string, body []byte) (Answer, error) {
	if user == nil || user.SessionID == "" {
		return Answer{}, errNoSession
	}
	if collection == "" {
		return Answer{}, errNoTarget
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		return Answer{}, errBadBody
	}
	if lexicon.CheckRecordText(body) != nil {
		return Answer{}, errBadBody // not storable text: refused before the PDS sees it
	}
	rkey, err := s.target(fields, user.DID, collection)
	if err != nil {
		return Answer{}, err
	}
	if rkey != "" {
		delete(fields, "uri")
	}
	return s.write(ctx, user, collection, rkey, fields, viaProcedure)
}

// WriteRecord writes record (a JSON object) as the record collection/rkey
// of the caller's repository: created (rkey "": the PDS picks the key) or
// created or replaced at rkey (putRecord). Unlike Write, a `uri` field is
// a field like any other. It validates, writes and indexes like Write,
// and is not audited (the plugin syncs calling it audit themselves).
func (s *Service) WriteRecord(ctx context.Context, user *caller.User, collection, rkey string, record json.RawMessage) (Answer, error) {
	if user == nil || user.SessionID == "" {
		return Answer{}, errNoSession
	}
	if collection == "" {
		return Answer{}, errNoTarget
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(record, &fields); err != nil || fields == nil {
		return Answer{}, errBadBody
	}
	if lexicon.CheckRecordText(record) != nil {
		return Answer{}, errBadBody
	}
	if rkey != "" {
		if _, err := syntax.ParseRecordKey(rkey); err != nil {
			return Answer{}, fail.Newf(fail.Invalid, "invalid record key %q", rkey)
		}
	}
	return s.write(ctx, user, collection, rkey, fields, viaPlugin)
}

// What made a write, as its audit entries say (`via`). Only procedures'
// writes are audited; a skipped put is recorded for both (verbose only).
const (
	viaProcedure = "procedure"
	viaPlugin    = "plugin"
)

// write validates fields as a record of collection and writes it on
// behalf of via.
func (s *Service) write(ctx context.Context, user *caller.User, collection, rkey string, fields map[string]json.RawMessage, via string) (Answer, error) {
	fields["$type"], _ = json.Marshal(collection)
	record, _ := json.Marshal(fields)
	if err := s.opt.Indexer.CheckRecord(collection, record); err != nil {
		return Answer{}, fail.Wrap(fail.Invalid, "invalid record: "+err.Error(), err)
	}

	var (
		status int
		resp   []byte
		res    *oauth.WriteResult
		err    error
	)
	op := storage.OpCreate
	if rkey != "" {
		op = storage.OpUpdate
		status, resp, res, err = s.opt.PDS.PutRecord(ctx, user.SessionID, user.DID, collection, rkey, record, "")
	} else {
		status, resp, res, err = s.opt.PDS.CreateRecord(ctx, user.SessionID, collection, record, "")
	}
	if err != nil {
		err = PDSError(err)
		if !errors.Is(err, ErrSessionExpired) {
			s.opt.Logger.ErrorContext(ctx, "proxying a procedure failed", "err", err)
		}
		return Answer{}, err
	}
	ans := Answer{Status: status, Body: resp}
	if status != http.StatusOK || res == nil {
		return ans, nil
	}
	if op == storage.OpUpdate && res.NoCommit() {
		uri := "at://" + user.DID + "/" + collection + "/" + rkey
		if s.indexed(ctx, uri, res.CID) {
			s.opt.Events.RecordVerbose(ctx, eventlog.PutSkipped(user.DID, uri, res.CID, via))
			return ans, nil
		}
	}
	if via == viaProcedure {
		s.opt.Events.Record(ctx, eventlog.RecordOp(op, user.DID, res.URI, res.CID, res.Rev, via))
	}
	ans.NotIndexed = s.index(ctx, user.DID, collection, rkey, op, res, record)
	return ans, nil
}

// indexed reports whether the index holds the record at uri with cid.
func (s *Service) indexed(ctx context.Context, uri, cid string) bool {
	rec, err := s.opt.Records.GetRecord(ctx, uri)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		s.opt.Logger.WarnContext(ctx, "reading a record to be replaced failed", "uri", uri, "err", err)
	}
	return err == nil && rec.CID == cid
}

// target returns the record key a body's `uri` names when it is the AT
// URI of a record of collection in did's repository: the body then
// replaces that record. It returns "" when the body has no `uri` (a
// create), and when the collection's record declares a `uri` property:
// any other `uri` is then a field of the record. On a record without
// one, any other `uri` is refused, since the body cannot be what the
// caller means: 403 for another account's repository, 400 for a value
// that is not an AT URI naming a record by DID, or names one of another
// collection.
func (s *Service) target(fields map[string]json.RawMessage, did, collection string) (string, error) {
	raw, ok := fields["uri"]
	if !ok {
		return "", nil
	}
	var str string
	var uri syntax.ATURI
	err := json.Unmarshal(raw, &str)
	if err == nil {
		uri, err = syntax.ParseATURI(str)
	}
	if err == nil && uri.RecordKey() != "" && uri.Authority().String() == did && uri.Collection().String() == collection {
		return uri.RecordKey().String(), nil
	}
	if l, ok := s.opt.Lexicons.Snapshot().Get(collection); ok && l.RecordURI {
		return "", nil
	}
	switch {
	case err != nil:
		return "", errURINotATURI
	case !uri.Authority().IsDID():
		return "", errURIByHandle
	case uri.Authority().String() != did:
		return "", errURIOtherRepo
	case uri.RecordKey() == "":
		return "", errURINoRecord
	default:
		return "", errURIOtherCollect
	}
}

// maxRevAhead is how far in the future a commit's rev may be dated: a
// PDS's clock may run a little ahead of ours, never by more.
const maxRevAhead = 5 * time.Minute

// index commits the written record so a read right after the write sees
// it, and otherwise returns why not (the PDS has the record; the stream
// brings it unless it is invalid). What the PDS reports is checked against the request first: a
// PDS that misreports the record's place or dates its rev far ahead is
// not believed (the stream brings the record, if it exists).
func (s *Service) index(ctx context.Context, did, collection, rkey string, op storage.ChangeOp, res *oauth.WriteResult, record []byte) string {
	key, err := s.checkResult(did, collection, rkey, res)
	if err != nil {
		s.opt.Logger.WarnContext(ctx, "not indexing a write the PDS misreported", "did", did, "uri", res.URI, "rev", res.Rev, "err", err)
		return "the PDS's answer does not match the write: " + err.Error()
	}
	change := storage.Change{Op: op, DID: did, Collection: collection, RKey: key, CID: res.CID,
		Rev: res.Rev, Record: bytes.Clone(record)}
	result, err := s.opt.Indexer.Write(ctx, "procedure", []storage.Change{change})
	switch {
	case err != nil:
		s.opt.Logger.WarnContext(ctx, "indexing a written record failed", "uri", res.URI, "err", err)
		return "indexing failed; the event stream will bring the record"
	case len(result.Rejected) > 0:
		s.opt.Logger.WarnContext(ctx, "a written record was refused by validation", "uri", res.URI, "err", result.Rejected[0].Err)
		return "refused by validation: " + result.Rejected[0].Err.Error()
	}
	return ""
}

// checkResult returns the record key of a write's result when the result
// names a record of collection in did's repository (with key rkey, when
// the write named one), a valid CID, and a valid rev dated no later than
// maxRevAhead from now.
func (s *Service) checkResult(did, collection, rkey string, res *oauth.WriteResult) (string, error) {
	uri, err := syntax.ParseATURI(res.URI)
	if err != nil || uri.RecordKey() == "" {
		return "", fmt.Errorf("not a record URI: %q", res.URI)
	}
	if uri.Authority().String() != did || uri.Collection().String() != collection ||
		(rkey != "" && uri.RecordKey().String() != rkey) {
		return "", errors.New("the URI is not the record written")
	}
	if _, err := syntax.ParseCID(res.CID); err != nil {
		return "", fmt.Errorf("cid: %w", err)
	}
	if res.Rev != "" {
		tid, err := syntax.ParseTID(res.Rev)
		if err != nil {
			return "", fmt.Errorf("rev: %w", err)
		}
		if tid.Time().After(s.opt.Now().Add(maxRevAhead)) {
			return "", fmt.Errorf("rev is dated %s, in the future", tid.Time().UTC().Format(time.RFC3339))
		}
	}
	return uri.RecordKey().String(), nil
}
