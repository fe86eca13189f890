// Package xrpcmethods runs the XRPC methods of the lexicons in-process:
// a method's Lua script when one is bound, otherwise the default
// behaviour (a query lists or gets records of its target collection, a
// procedure writes a record to the caller's PDS through the write path).
// The HTTP front end (web/xrpc) and scripts' xrpc.query and
// xrpc.procedure both call a method through Dispatcher.Call: a call is
// plain values (the method's lexicon, its parameters, its input, the
// user), never an HTTP request.
package xrpcmethods

import (
	"context"
	"log/slog"
	"net/url"
	"time"

	"github.com/lexview/lexview/appview/internal/core/caller"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/service/reads"
	"github.com/lexview/lexview/appview/internal/service/writepath"
	"github.com/lexview/lexview/lexicon"
)

// MaxInput bounds a procedure's JSON input; front ends refuse a larger
// body (413) before calling.
const MaxInput = 1 << 20

// Writer writes a procedure's record to the caller's PDS (the write-path
// service).
type Writer interface {
	Write(ctx context.Context, user *caller.User, collection string, body []byte) (writepath.Answer, error)
}

// Options configure a Dispatcher; Reads is required.
type Options struct {
	// Reads serves the default query behaviour (list and get).
	Reads *reads.Service
	// Writes serves the default procedure behaviour; nil answers
	// procedures without a script as unavailable (503).
	Writes Writer
	// Scripts runs methods that have a script bound; nil runs every
	// method with the default behaviour.
	Scripts Scripts
	// Identities resolves the PDS hosting blobs, for blob URLs in
	// default answers; nil: blobs get no URL.
	Identities Identities
	// Labels lets default answers carry labels (see selectLabelers); nil:
	// they never do.
	Labels LabelSource
	Now    func() time.Time
	Logger *slog.Logger
}

// Dispatcher runs XRPC methods.
type Dispatcher struct {
	reads   *reads.Service
	writes  Writer
	scripts Scripts
	blobs   *blobLinker
	labels  LabelSource
	now     func() time.Time
	log     *slog.Logger
}

// New returns a Dispatcher with unset options at their defaults.
func New(o Options) *Dispatcher {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Dispatcher{reads: o.Reads, writes: o.Writes, scripts: o.Scripts, blobs: &blobLinker{ids: o.Identities},
		labels: o.Labels, now: o.Now, log: o.Logger}
}

// Call is one call of an XRPC method.
type Call struct {
	// Lexicon is the method's lexicon, a query or a procedure.
	Lexicon *lexicon.Lexicon
	// Params are the query parameters, without the client key.
	Params url.Values
	// Input is a procedure's JSON body (at most MaxInput bytes); nil for
	// queries and empty bodies.
	Input []byte
	// User is the authenticated user; nil for an anonymous call.
	User *caller.User
	// ClientID is the calling API client ("" when unknown).
	ClientID string
	// AcceptLabelers are the labelers the caller asks labels of, as the
	// Atproto-Accept-Labelers header lists them (`did[;redact]`, comma
	// separated); nil asks none.
	AcceptLabelers []string
}

// Answer is a method's answer: a JSON body with its status.
type Answer struct {
	Status int
	Body   []byte
	// NotIndexed, on a procedure's successful answer, says why the record
	// the PDS accepted is not indexed yet ("" when it is).
	NotIndexed string
	// Labeled is set when the answer carries the labels of
	// ContentLabelers (Atproto-Content-Labelers).
	Labeled         bool
	ContentLabelers []string
}

var (
	// ErrAuthRequired refuses an anonymous call of a procedure.
	ErrAuthRequired   = fail.New(fail.Unauthenticated, "authentication required")
	errNoWriter       = fail.New(fail.Unavailable, "procedure proxying is not configured")
	errInvalidInput   = fail.New(fail.Invalid, "invalid request body")
	errMethodNotFound = fail.New(fail.NotFound, "method not found")
)

// Admit refuses (ErrAuthRequired) an anonymous call of a procedure:
// nothing can be written without the user's session. Call applies it; a
// front end that answers some methods itself applies it first.
func Admit(lex *lexicon.Lexicon, user *caller.User) error {
	if lex.Kind == lexicon.KindProcedure && user == nil {
		return ErrAuthRequired
	}
	return nil
}

// Call runs c's method: its script when one is bound, otherwise the
// default query or procedure. The parameters are checked against the
// lexicon's first (checkParams): a refused call runs nothing. Answers
// Lexview composes (a script's, a default query's) are appended to dst, a
// buffer the caller may reuse once the answer is sent; a procedure's PDS
// answer is returned as the PDS sent it. A refusal is a *fail.Error the
// front end answers.
func (d *Dispatcher) Call(ctx context.Context, c Call, dst []byte) (Answer, error) {
	if err := Admit(c.Lexicon, c.User); err != nil {
		return Answer{}, err
	}
	ms, scripted := d.methodScript(c.Lexicon)
	if err := checkParams(c, scripted); err != nil {
		return Answer{}, err
	}
	if scripted {
		return d.runScript(ctx, ms, c, dst)
	}
	switch c.Lexicon.Kind {
	case lexicon.KindProcedure:
		if d.writes == nil {
			return Answer{}, errNoWriter
		}
		w, err := d.writes.Write(ctx, c.User, c.Lexicon.TargetCollection, c.Input)
		if err != nil {
			return Answer{}, err
		}
		return Answer{Status: w.Status, Body: w.Body, NotIndexed: w.NotIndexed}, nil
	case lexicon.KindQuery:
		return d.query(ctx, c, dst)
	}
	return Answer{}, errMethodNotFound
}

// defaultQueryParams are the default query's own parameters. Its answers
// to them are the interface specification's (`limit` from 1 to 100, an
// opaque `cursor`, ...), whatever a lexicon declares of them, so they are
// left to it.
var defaultQueryParams = []string{"limit", "cursor", "did", "uri"}

// checkParams refuses (400) a call whose parameters its lexicon's declared
// `parameters` refuse; undeclared parameters pass. A query answered by the
// default behaviour leaves that behaviour's own parameters unchecked.
func checkParams(c Call, scripted bool) error {
	var except []string
	if !scripted && c.Lexicon.Kind == lexicon.KindQuery {
		except = defaultQueryParams
	}
	if err := c.Lexicon.Params.Validate(c.Params, except...); err != nil {
		return fail.Wrap(fail.Invalid, err.Error(), err)
	}
	return nil
}
