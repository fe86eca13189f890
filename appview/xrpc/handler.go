// Package xrpc serves the dynamic XRPC surface: GET /xrpc/{nsid} for query
// lexicons and POST /xrpc/{nsid} for procedure lexicons, routed through the
// lexicon registry's current snapshot.
package xrpc

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/lexview/lexview/appview/clients"
	"github.com/lexview/lexview/appview/respond"
	"github.com/lexview/lexview/appview/userauth"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
)

const msgMethodNotFound = "method not found"

// Snapshotter hands out the current lexicon snapshot.
type Snapshotter interface {
	Snapshot() *lexicon.Snapshot
}

// RecordReader is the storage the default query behaviour reads.
type RecordReader interface {
	GetRecord(ctx context.Context, uri string) (storage.Record, error)
	ListRecords(ctx context.Context, q storage.ListQuery) (storage.Page, error)
}

// Options configures a Handler.
type Options struct {
	Lexicons Snapshotter
	Records  RecordReader
	// Identities resolves handles in AT URIs and the PDS hosting blobs.
	Identities Identities
	// ClientMiddleware identifies the API client; it wraps every routed
	// request, after the method lookup.
	ClientMiddleware func(http.Handler) http.Handler
	// Users authenticates the user behind a request (DPoP session,
	// service-auth JWT, session cookie); nil treats every caller as
	// anonymous.
	Users *userauth.Authenticator
	// Procedures serves POST requests routed to procedure lexicons from an
	// authenticated user. When nil, authenticated procedure calls answer
	// 501.
	Procedures http.Handler
	Logger     *slog.Logger
}

// Handler serves /xrpc/{nsid}.
type Handler struct {
	lexicons Snapshotter
	records  RecordReader
	blobs    *blobLinker
	ids      Identities
	routed   http.Handler
	procs    http.Handler
	log      *slog.Logger
}

// New builds a Handler.
func New(o Options) *Handler {
	h := &Handler{
		lexicons: o.Lexicons, records: o.Records, ids: o.Identities,
		blobs: &blobLinker{ids: o.Identities}, procs: o.Procedures, log: o.Logger,
	}
	if h.log == nil {
		h.log = slog.Default()
	}
	if h.procs == nil {
		h.procs = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			respond.Error(w, http.StatusNotImplemented, "procedure proxying is not configured")
		})
	}
	h.routed = http.HandlerFunc(h.dispatch)
	if o.Users != nil {
		h.routed = UserMiddleware(o.Users, h.log, h.routed)
	}
	if o.ClientMiddleware != nil {
		h.routed = o.ClientMiddleware(h.routed)
	}
	return h
}

type lexiconKey struct{}

// LexiconFromContext returns the lexicon a routed request resolved to.
func LexiconFromContext(ctx context.Context) (*lexicon.Lexicon, bool) {
	l, ok := ctx.Value(lexiconKey{}).(*lexicon.Lexicon)
	return l, ok
}

// ServeHTTP implements http.Handler. It expects the NSID as the "nsid"
// path value.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	lex, ok := h.lexicons.Snapshot().Get(r.PathValue("nsid"))
	if !ok || !routable(lex.Kind, r.Method) {
		respond.Error(w, http.StatusNotFound, msgMethodNotFound)
		return
	}
	h.routed.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), lexiconKey{}, lex)))
}

// UserMiddleware authenticates the user (optional for queries; the
// dispatcher refuses anonymous procedures) and puts the caller in the
// request context. It runs after client identification, so refused
// requests have taken a rate-limit token. Fixed endpoints use it too, so
// every XRPC route authenticates users the same way.
func UserMiddleware(users *userauth.Authenticator, log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		clientID := ""
		if c, ok := clients.FromContext(r.Context()); ok {
			clientID = c.ID
		}
		caller, err := users.Authenticate(r, clientID)
		var ae *userauth.Error
		switch {
		case errors.As(err, &ae):
			respond.Error(w, ae.Status, ae.Msg)
			return
		case err != nil:
			respond.Internal(w, r, log, err)
			return
		}
		if caller != nil {
			r = r.WithContext(userauth.WithCaller(r.Context(), caller))
		}
		next.ServeHTTP(w, r)
	})
}

// routable reports whether a lexicon of kind answers method. HEAD is served
// like GET.
func routable(kind lexicon.Kind, method string) bool {
	switch kind {
	case lexicon.KindQuery:
		return method == http.MethodGet || method == http.MethodHead
	case lexicon.KindProcedure:
		return method == http.MethodPost
	}
	return false
}

func (h *Handler) dispatch(w http.ResponseWriter, r *http.Request) {
	lex, _ := LexiconFromContext(r.Context())
	if lex.Kind == lexicon.KindProcedure {
		if userauth.FromContext(r.Context()) == nil {
			// Nothing can be proxied without the user's session.
			respond.Error(w, http.StatusUnauthorized, "authentication required")
			return
		}
		h.procs.ServeHTTP(w, r)
		return
	}
	h.query(w, r, lex)
}
