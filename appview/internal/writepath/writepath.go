// Package writepath is the service behind procedures' default behaviour:
// a procedure's body becomes a record of its lexicon's target collection,
// written to the caller's PDS through their device session (createRecord,
// or putRecord when the body names the record's `uri`), then indexed
// locally through the batch writer, so that a read right after the write
// sees it. It also gives the PDS write client the device sessions it acts
// with (SessionSource).
package writepath

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/fail"
	"github.com/lexview/lexview/appview/internal/indexer"
	"github.com/lexview/lexview/appview/internal/userauth"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/oauth"
	"github.com/lexview/lexview/storage"
)

// PDSWriter writes records to a user's PDS through their session.
type PDSWriter interface {
	CreateRecord(ctx context.Context, sessionID, collection string, record json.RawMessage, rkey string) (int, []byte, *oauth.WriteResult, error)
	PutRecord(ctx context.Context, sessionID, repo, collection, rkey string, record json.RawMessage, swapRecord string) (int, []byte, *oauth.WriteResult, error)
}

// Indexer commits a change and waits for it (the batch writer).
type Indexer interface {
	Write(ctx context.Context, source string, changes []storage.Change) (indexer.Result, error)
}

// Service writes procedure records to users' PDSes.
type Service struct {
	pds     PDSWriter
	indexer Indexer
	log     *slog.Logger
}

// New returns the service.
func New(pds PDSWriter, idx Indexer, log *slog.Logger) *Service {
	return &Service{pds: pds, indexer: idx, log: log}
}

// Answer is the PDS's answer to a write, passed on unchanged.
type Answer struct {
	Status int
	Body   []byte
}

var (
	errNoSession     = fail.New(fail.Unauthenticated, "procedures need a DPoP session to write to the PDS")
	errNoTarget      = fail.New(fail.Invalid, "this procedure has no target_collection")
	errBadBody       = fail.New(fail.Invalid, "invalid request body")
	errBadURI        = fail.New(fail.Invalid, "invalid AT URI")
	errNotYours      = fail.New(fail.Forbidden, "the record is not in the caller's repository and collection")
	errTokenExpired  = fail.New(fail.Unauthenticated, userauth.MsgTokenExpired)
	errUpstreamWrite = fail.New(fail.BadGateway, "upstream PDS failure")
)

// Write makes body (a JSON object) a record of collection in the caller's
// repository: created, or, when body names its `uri`, replaced. It returns
// the PDS's answer; a PDS that answers with an error status is an Answer
// too, not an error.
func (s *Service) Write(ctx context.Context, caller *userauth.Caller, collection string, body []byte) (Answer, error) {
	if caller == nil || caller.Session == nil {
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
	rawURI, hasURI := fields["uri"]
	delete(fields, "uri")
	fields["$type"], _ = json.Marshal(collection)
	record, _ := json.Marshal(fields)

	var (
		status int
		resp   []byte
		res    *oauth.WriteResult
		err    error
	)
	op := storage.OpCreate
	if hasURI {
		var raw string
		if json.Unmarshal(rawURI, &raw) != nil {
			return Answer{}, errBadURI
		}
		uri, perr := syntax.ParseATURI(raw)
		if perr != nil || uri.RecordKey() == "" {
			return Answer{}, errBadURI
		}
		if uri.Authority().String() != caller.DID || uri.Collection().String() != collection {
			return Answer{}, errNotYours
		}
		op = storage.OpUpdate
		status, resp, res, err = s.pds.PutRecord(ctx, caller.Session.ID, caller.DID, collection, uri.RecordKey().String(), record, "")
	} else {
		status, resp, res, err = s.pds.CreateRecord(ctx, caller.Session.ID, collection, record, "")
	}
	if err != nil {
		var re *oauth.RefreshError
		if errors.As(err, &re) {
			return Answer{}, errTokenExpired
		}
		s.log.ErrorContext(ctx, "proxying a procedure failed", "err", err)
		return Answer{}, fail.Wrap(fail.BadGateway, errUpstreamWrite.Message, err)
	}
	if status == http.StatusOK && res != nil {
		s.index(ctx, caller.DID, collection, op, res, record)
	}
	return Answer{Status: status, Body: resp}, nil
}

// index commits the written record so a read right after the write sees
// it; a failure is logged (the PDS has the record; the stream will bring
// it too).
func (s *Service) index(ctx context.Context, did, collection string, op storage.ChangeOp, res *oauth.WriteResult, record []byte) {
	uri, err := syntax.ParseATURI(res.URI)
	if err != nil {
		s.log.WarnContext(ctx, "PDS returned an unusable record URI", "uri", res.URI)
		return
	}
	change := storage.Change{Op: op, DID: did, Collection: collection, RKey: uri.RecordKey().String(), CID: res.CID,
		Rev: res.Rev, Record: bytes.Clone(record)}
	result, err := s.indexer.Write(ctx, "procedure", []storage.Change{change})
	if err != nil || len(result.Rejected) > 0 {
		s.log.WarnContext(ctx, "indexing a written record failed", "uri", res.URI, "err", err, "rejected", len(result.Rejected))
	}
}
