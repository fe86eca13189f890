package xrpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"

	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/indexer"
	"github.com/lexview/lexview/appview/internal/respond"
	"github.com/lexview/lexview/appview/internal/userauth"
	"github.com/lexview/lexview/oauth"
	"github.com/lexview/lexview/storage"
)

// MaxProcedureBody bounds a procedure's JSON body.
const MaxProcedureBody = 1 << 20

// PDSWriter writes records to a user's PDS through their session.
type PDSWriter interface {
	CreateRecord(ctx context.Context, sessionID, collection string, record json.RawMessage, rkey string) (int, []byte, *oauth.WriteResult, error)
	PutRecord(ctx context.Context, sessionID, repo, collection, rkey string, record json.RawMessage, swapRecord string) (int, []byte, *oauth.WriteResult, error)
}

// Indexer commits a change and waits for it.
type Indexer interface {
	Write(ctx context.Context, source string, changes []storage.Change) (indexer.Result, error)
}

// Proxy is the default procedure behaviour: the body becomes a record of
// the lexicon's target collection, written to the caller's PDS with
// createRecord (no `uri`) or putRecord (`uri` given), then indexed locally
// before the PDS's answer is returned unchanged.
type Proxy struct {
	PDS     PDSWriter
	Indexer Indexer
	Logger  *slog.Logger
}

// ServeHTTP implements http.Handler for routed procedure requests.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	caller := userauth.FromContext(r.Context())
	lex, _ := LexiconFromContext(r.Context())
	if caller == nil || caller.Session == nil {
		respond.Error(w, http.StatusUnauthorized, "procedures need a DPoP session to write to the PDS")
		return
	}
	if lex.TargetCollection == "" {
		respond.Error(w, http.StatusBadRequest, "this procedure has no target_collection")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxProcedureBody))
	if err != nil {
		respond.Error(w, http.StatusRequestEntityTooLarge, "request body too large")
		return
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		respond.Error(w, http.StatusBadRequest, "invalid request body")
		return
	}
	collection := lex.TargetCollection
	rawURI, hasURI := fields["uri"]
	delete(fields, "uri")
	fields["$type"], _ = json.Marshal(collection)
	record, _ := json.Marshal(fields)

	ctx := r.Context()
	var status int
	var resp []byte
	var res *oauth.WriteResult
	op := storage.OpCreate
	if hasURI {
		var s string
		if json.Unmarshal(rawURI, &s) != nil {
			respond.Error(w, http.StatusBadRequest, "invalid AT URI")
			return
		}
		uri, perr := syntax.ParseATURI(s)
		if perr != nil || uri.RecordKey() == "" {
			respond.Error(w, http.StatusBadRequest, "invalid AT URI")
			return
		}
		if uri.Authority().String() != caller.DID || uri.Collection().String() != collection {
			respond.Error(w, http.StatusForbidden, "the record is not in the caller's repository and collection")
			return
		}
		op = storage.OpUpdate
		status, resp, res, err = p.PDS.PutRecord(ctx, caller.Session.ID, caller.DID, collection, uri.RecordKey().String(), record, "")
	} else {
		status, resp, res, err = p.PDS.CreateRecord(ctx, caller.Session.ID, collection, record, "")
	}
	if err != nil {
		var re *oauth.RefreshError
		if errors.As(err, &re) {
			respond.Error(w, http.StatusUnauthorized, userauth.MsgTokenExpired)
			return
		}
		p.log().ErrorContext(ctx, "proxying a procedure failed", "err", err)
		respond.Error(w, http.StatusBadGateway, "upstream PDS failure")
		return
	}
	if status == http.StatusOK && res != nil {
		p.index(ctx, caller.DID, collection, op, res, record)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(resp)
}

// index commits the written record so a read right after the write sees
// it; a failure is logged (the PDS has the record; the stream will bring
// it too).
func (p *Proxy) index(ctx context.Context, did, collection string, op storage.ChangeOp, res *oauth.WriteResult, record []byte) {
	uri, err := syntax.ParseATURI(res.URI)
	if err != nil {
		p.log().WarnContext(ctx, "PDS returned an unusable record URI", "uri", res.URI)
		return
	}
	change := storage.Change{Op: op, DID: did, Collection: collection, RKey: uri.RecordKey().String(), CID: res.CID,
		Rev: res.Rev, Record: bytes.Clone(record)}
	result, err := p.Indexer.Write(ctx, "procedure", []storage.Change{change})
	if err != nil || len(result.Rejected) > 0 {
		p.log().WarnContext(ctx, "indexing a written record failed", "uri", res.URI, "err", err, "rejected", len(result.Rejected))
	}
}

func (p *Proxy) log() *slog.Logger {
	if p.Logger != nil {
		return p.Logger
	}
	return slog.Default()
}
