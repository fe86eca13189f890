// Package xrpc serves the dynamic XRPC surface: GET /xrpc/{nsid} for query
// lexicons and POST /xrpc/{nsid} for procedure lexicons, routed through the
// lexicon registry's current snapshot.
package xrpc

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/url"

	"github.com/lexview/lexview/appview/internal/core/caller"
	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/service/reads"
	"github.com/lexview/lexview/appview/internal/web/respond"
	"github.com/lexview/lexview/appview/internal/web/userauth"
	"github.com/lexview/lexview/lexicon"
)

const msgMethodNotFound = "method not found"

// Snapshotter hands out the current lexicon snapshot.
type Snapshotter interface {
	Snapshot() *lexicon.Snapshot
}

// Options configures a Handler.
type Options struct {
	Lexicons Snapshotter
	// Reads serves the default query behaviour (list and get).
	Reads *reads.Service
	// Identities resolves the PDS hosting blobs.
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
	// Scripts runs methods that have a script bound; nil runs every
	// method with the default behaviour.
	Scripts Scripts
	// Methods are Go handlers by method NSID: one answers its method
	// instead of a script or the default behaviour (the method still
	// needs its lexicon, which gives it its route).
	Methods map[string]http.Handler
	// Proxied admits or refuses calls proxied by a PDS (service-auth
	// callers) by the service entries of their method; nil admits them all.
	Proxied ProxiedGate
	// Labels lets default answers carry labels (see selectLabelers); nil:
	// they never do.
	Labels LabelSource
	// Forward answers calls for NSIDs without a local lexicon (the XRPC
	// proxy); nil answers them 404 `method not found`.
	Forward http.Handler
	Logger  *slog.Logger
}

// ProxiedGate decides whether a call proxied by a PDS, from the caller DID
// (the token's issuer) to the audience aud, may reach the method nsid. Its
// error is answered as is.
type ProxiedGate interface {
	Admit(ctx context.Context, nsid, caller, aud string) error
}

// Handler serves /xrpc/{nsid}.
type Handler struct {
	lexicons Snapshotter
	reads    *reads.Service
	blobs    *blobLinker
	bodies   bodies
	routed   http.Handler
	procs    http.Handler
	scripts  Scripts
	methods  map[string]http.Handler
	labels   LabelSource
	forward  http.Handler
	log      *slog.Logger
}

// New builds a Handler.
func New(o Options) *Handler {
	h := &Handler{
		lexicons: o.Lexicons, reads: o.Reads,
		blobs: &blobLinker{ids: o.Identities}, procs: o.Procedures, scripts: o.Scripts, methods: o.Methods, labels: o.Labels, forward: o.Forward, log: o.Logger,
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
	if o.Proxied != nil {
		h.routed = proxiedMiddleware(o.Proxied, h.log, h.routed)
	}
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
	if !ok && h.forward != nil {
		h.forward.ServeHTTP(w, r)
		return
	}
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
		if c, ok := apiclients.FromContext(r.Context()); ok {
			clientID = c.ID
		}
		user, err := users.Authenticate(r, clientID)
		if err != nil {
			respond.Fail(w, r, log, err)
			return
		}
		if user != nil {
			r = r.WithContext(caller.WithUser(r.Context(), user))
		}
		next.ServeHTTP(w, r)
	})
}

// proxiedMiddleware puts service-auth callers (calls proxied by a PDS)
// through gate, for the routed method. Other callers pass.
func proxiedMiddleware(gate ProxiedGate, log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c := caller.UserFrom(r.Context()); c != nil && c.Via == caller.ViaServiceAuth {
			lex, _ := LexiconFromContext(r.Context())
			if err := gate.Admit(r.Context(), lex.ID, c.DID, c.Audience); err != nil {
				respond.Fail(w, r, log, err)
				return
			}
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
		if caller.UserFrom(r.Context()) == nil {
			// Nothing can be proxied without the user's session.
			respond.Error(w, http.StatusUnauthorized, "authentication required")
			return
		}
	}
	if m, ok := h.methods[lex.ID]; ok {
		m.ServeHTTP(w, r)
		return
	}
	if h.serveScript(w, r, lex) {
		return
	}
	if lex.Kind == lexicon.KindProcedure {
		h.procs.ServeHTTP(w, r)
		return
	}
	h.query(w, r, lex)
}

// Call runs a local method in-process, as the caller already in ctx (no
// client identification or user authentication is repeated), and returns
// the status and body. Scripts use it for xrpc.query and xrpc.procedure.
func (h *Handler) Call(ctx context.Context, method, nsid string, query url.Values, body []byte) (int, []byte) {
	lex, ok := h.lexicons.Snapshot().Get(nsid)
	if !ok || !routable(lex.Kind, method) {
		return http.StatusNotFound, []byte(`{"error":"` + msgMethodNotFound + `"}`)
	}
	target := "/xrpc/" + nsid
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(context.WithValue(ctx, lexiconKey{}, lex), method, target, bytes.NewReader(body))
	if err != nil {
		return http.StatusBadRequest, []byte(`{"error":"invalid request"}`)
	}
	req.SetPathValue("nsid", nsid)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := &bufferedResponse{header: http.Header{}, status: http.StatusOK}
	h.dispatch(rec, req)
	return rec.status, rec.body.Bytes()
}

// bufferedResponse collects an in-process response.
type bufferedResponse struct {
	header http.Header
	status int
	wrote  bool
	body   bytes.Buffer
}

func (b *bufferedResponse) Header() http.Header { return b.header }

func (b *bufferedResponse) WriteHeader(status int) {
	if !b.wrote {
		b.status, b.wrote = status, true
	}
}

func (b *bufferedResponse) Write(p []byte) (int, error) {
	b.wrote = true
	return b.body.Write(p)
}
