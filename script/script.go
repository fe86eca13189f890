// Package script defines how Lexview runs operator scripts: an Engine
// compiles source into a Program, and a Program runs one invocation (an
// XRPC query or procedure, or a record event) against a Host, which gives
// the script its reach into Lexview (the record index, the PDS write path,
// script variables, the event log, outbound HTTP). The default engine,
// gopher-lua with a sandbox and an exact instruction budget, lives in
// script/luascript; a library user can plug another runtime by
// implementing Engine.
package script

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/lexview/lexview/storage"
)

// Trigger kinds: a trigger is "<kind>:<nsid>".
const (
	KindQuery     = "xrpc.query"
	KindProcedure = "xrpc.procedure"
	KindIndex     = "record.index" // every record event of a collection
	KindCreate    = "record.create"
	KindUpdate    = "record.update"
	KindDelete    = "record.delete"
	// KindLabel runs for labels arriving from a labeler: its trigger is
	// "label.arrive:<value>" for one label value, or "label.arrive:*" for
	// every value without a script of its own.
	KindLabel = "label.arrive"
)

// TimeLayout is how scripts see times: atproto datetimes in UTC, with
// milliseconds.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// AnyLabel is the label value of the trigger that runs for every label.
const AnyLabel = "*"

// Kinds lists the trigger kinds.
func Kinds() []string {
	return []string{KindQuery, KindProcedure, KindIndex, KindCreate, KindUpdate, KindDelete, KindLabel}
}

// Trigger names the trigger of kind for nsid (for KindLabel, a label
// value or AnyLabel).
func Trigger(kind, nsid string) string { return kind + ":" + nsid }

// ParseTrigger splits a trigger into its kind and NSID, checking the kind.
func ParseTrigger(t string) (kind, nsid string, err error) {
	kind, nsid, ok := strings.Cut(t, ":")
	if !ok || nsid == "" {
		return "", "", fmt.Errorf("trigger %q is not <kind>:<nsid>", t)
	}
	for _, k := range Kinds() {
		if k == kind {
			return kind, nsid, nil
		}
	}
	return "", "", fmt.Errorf("unknown trigger kind %q (want one of %s)", kind, strings.Join(Kinds(), ", "))
}

// Engine compiles scripts. Implementations must be safe for concurrent use.
type Engine interface {
	// Compile parses source once; the Program runs it any number of times,
	// concurrently. A syntax error is an *Error of kind ErrSyntax.
	Compile(name, source string) (Program, error)
}

// Program is a compiled script.
type Program interface {
	// Run calls the script's handle() for one invocation and returns its
	// result as JSON ("null" when it returned nil). Failures are *Error.
	Run(ctx context.Context, inv *Invocation) (json.RawMessage, error)
}

// AppendProgram is a Program that can write its result into a buffer its
// caller owns, which spares a copy of every answer on a server's hot path.
// Hosts use AppendRun when a Program has it.
type AppendProgram interface {
	Program
	// AppendRun is Run with the result appended to dst; it returns the
	// extended buffer (on failure, nil and the *Error).
	AppendRun(ctx context.Context, inv *Invocation, dst []byte) ([]byte, error)
}

// Invocation is what one run of a script sees.
type Invocation struct {
	Host Host
	// Kind is the trigger kind (KindQuery, KindProcedure, KindIndex, ...).
	Kind string
	// Method is the NSID of the XRPC method, or of the collection for
	// record events.
	Method string
	// Params are the query-string parameters (first value of each).
	Params url.Values
	// Collection is the lexicon's target collection; "" for none.
	Collection string
	// Caller is the authenticated user; nil when anonymous.
	Caller *Caller
	// Input is the procedure's JSON body; nil for queries and events.
	Input json.RawMessage
	// Event is set for record-event scripts.
	Event *RecordEvent
	// Label is set for label-arrival scripts.
	Label *LabelEvent
	// Depth counts nested xrpc.query/xrpc.procedure calls.
	Depth int
}

// Caller is the user behind a request.
type Caller struct {
	DID      string
	ClientID string // the API client, when known
	// SessionID names the user's OAuth session with their PDS; "" when
	// the caller cannot write (for example service-auth callers).
	SessionID string
}

// RecordEvent is a record change a record-event script runs for.
type RecordEvent struct {
	Action     string // create, update or delete
	URI        string
	DID        string
	Collection string
	RKey       string
	CID        string
	Rev        string
	Record     json.RawMessage // nil for deletes
}

// LabelEvent is a label a label-arrival script runs for, as the labeler
// emitted it (after its signature was verified).
type LabelEvent struct {
	Src string // the labeler's DID
	URI string // the subject: an AT URI or a DID
	CID string // "" when the label is not pinned to a record version
	Val string
	Neg bool   // a negation: the label no longer applies
	Cts string // creation time, atproto datetime (UTC)
	Exp string // expiry, atproto datetime (UTC); "" for none
}

// RecordWrite is a write through the caller's PDS session.
type RecordWrite struct {
	Delete     bool
	Collection string
	RKey       string // "" lets the PDS choose (create)
	Record     json.RawMessage
	// Update replaces the record at RKey (putRecord) instead of creating.
	Update bool
}

// WriteResult is the PDS's answer to a write.
type WriteResult struct {
	URI string
	CID string
}

// LinkedRepo is a linked account as scripts see it: a linked repo grant
// bound to an account, through which the instance writes into the
// account's repository.
type LinkedRepo struct {
	DID string
	// Handle is the handle or DID the grant was pinned to; "" for a grant
	// taken through an open invite.
	Handle string
	// Scopes is the grant's OAuth scope string.
	Scopes string
	// Status is "active" or "needs_reauth"; only active grants write.
	Status string
}

// LinkedWrite is a write into a linked account's repository through its
// grant's session. RecordWrite's RKey with neither Update nor Delete is a
// createRecord with a chosen key.
type LinkedWrite struct {
	// Repo is the linked account's DID.
	Repo string
	RecordWrite
}

// InvalidHider is implemented by a Host whose collections may hide the
// records stored with a validation error (storage.Record.Invalid; the
// validation mode hide): db.query, db.count, db.search and db.get leave a
// hidden collection's flagged records out unless the script asks for them
// (includeInvalid). A Host without it hides nothing.
type InvalidHider interface {
	// HidesInvalid reports whether collection's flagged records are left
	// out by default.
	HidesInvalid(collection string) bool
}

// Host is Lexview as a script sees it. Every method takes the request's
// context, not the script's budget.
type Host interface {
	storage.QueryStore
	// SearchRecords runs a full-text search (db.search).
	storage.SearchStore
	// GetRecord returns one indexed record or storage.ErrNotFound.
	GetRecord(ctx context.Context, uri string) (storage.Record, error)
	// Vars returns the decrypted script variables.
	Vars(ctx context.Context) (map[string]string, error)
	// Log writes message to the debug log and the event log.
	Log(ctx context.Context, inv *Invocation, message string)
	// WriteRecord writes through the caller's PDS session and indexes the
	// result.
	WriteRecord(ctx context.Context, caller *Caller, w RecordWrite) (WriteResult, error)
	// LinkedRepos lists the linked accounts (grants bound to an account).
	LinkedRepos(ctx context.Context) ([]LinkedRepo, error)
	// WriteLinkedRecord writes into a linked account's repository through
	// its grant's session and indexes the result. It is refused unless
	// the grant is active and its scopes cover the collection and action.
	WriteLinkedRecord(ctx context.Context, inv *Invocation, w LinkedWrite) (WriteResult, error)
	// Labels returns the labels that apply now to each subject (AT URIs
	// or DIDs), keyed by subject; subjects without labels are absent.
	Labels(ctx context.Context, subjects []string) (map[string][]storage.Label, error)
	// Backlinks returns a page of the records linking to q.Subject from
	// q.Source, newest first (storage.LinkStore). A refused query (a bad
	// subject, source, account, limit or cursor) is an error whose text
	// says why.
	Backlinks(ctx context.Context, q storage.BacklinkQuery) (storage.BacklinkPage, error)
	// CountBacklinks counts the records linking to q.Subject from
	// q.Source and, if q.DIDs, the distinct accounts they belong to.
	CountBacklinks(ctx context.Context, q storage.BacklinkCountQuery) (storage.BacklinkCount, error)
	// XRPC calls a local XRPC method as the invocation's caller and
	// returns the HTTP status and body.
	XRPC(ctx context.Context, inv *Invocation, httpMethod, nsid string, params url.Values, body []byte) (int, []byte, error)
	// HTTPClient makes the script's outbound requests; it must refuse
	// private addresses unless the operator allowed them.
	HTTPClient() *http.Client
	// CallPlugin calls the script-library function fn of the plugin id
	// with input (JSON) and returns its answer (JSON); ctx carries the
	// script's deadline, which bounds the call.
	CallPlugin(ctx context.Context, inv *Invocation, id, fn string, input json.RawMessage) (json.RawMessage, error)
}

// ErrorKind classifies script failures.
type ErrorKind int

// Failure kinds.
const (
	ErrSyntax   ErrorKind = iota + 1 // the source does not compile
	ErrRuntime                       // the script raised an error
	ErrNoHandle                      // the script defines no handle()
	ErrBudget                        // the instruction budget or the deadline ran out
	ErrMemory                        // the memory ceiling was hit
)

// Wire messages of script failures (the specification's 500 bodies).
const (
	MsgFailed  = "script execution failed"
	MsgTimeout = "script exceeded execution time limit"
)

// Error is a script failure. Msg is for logs and operators, never for
// clients: clients get PublicMessage.
type Error struct {
	Kind ErrorKind
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// PublicMessage is what a client is told.
func (e *Error) PublicMessage() string {
	if e.Kind == ErrBudget {
		return MsgTimeout
	}
	return MsgFailed
}

// PublicMessage returns the client-facing message of any script error.
func PublicMessage(err error) string {
	var se *Error
	if errors.As(err, &se) {
		return se.PublicMessage()
	}
	return MsgFailed
}
