// Package xrpc serves the dynamic XRPC surface: GET /xrpc/{nsid} for query
// lexicons and POST /xrpc/{nsid} for procedure lexicons, routed through the
// lexicon registry's current snapshot. It reads a call from the request
// (after API client identification and user authentication), runs it
// through the xrpcmethods dispatcher, and renders the answer; Go method
// handlers (Options.Methods) answer their methods themselves.
package xrpc

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/lexview/lexview/appview/internal/core/caller"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/service/xrpcmethods"
	"github.com/lexview/lexview/appview/internal/web/respond"
	"github.com/lexview/lexview/appview/internal/web/userauth"
	"github.com/lexview/lexview/internal/textclip"
	"github.com/lexview/lexview/lexicon"
)

const msgMethodNotFound = "method not found"

// NotIndexedHeader, on a procedure's successful answer, says why the
// record the PDS accepted is not indexed yet (it is absent when it is).
const NotIndexedHeader = "Lexview-Not-Indexed"

// Header names of atproto's label negotiation.
const (
	headerAcceptLabelers  = "Atproto-Accept-Labelers"
	headerContentLabelers = "Atproto-Content-Labelers"
)

// Snapshotter hands out the current lexicon snapshot.
type Snapshotter interface {
	Snapshot() *lexicon.Snapshot
}

// Options configures a Handler.
type Options struct {
	Lexicons Snapshotter
	// Calls runs the methods (scripts and the default behaviour).
	Calls *xrpcmethods.Dispatcher
	// ClientMiddleware identifies the API client; it wraps every routed
	// request, after the method lookup.
	ClientMiddleware func(http.Handler) http.Handler
	// Users authenticates the user behind a request (DPoP session,
	// service-auth JWT, session cookie); nil treats every caller as
	// anonymous.
	Users *userauth.Authenticator
	// Methods are Go handlers by method NSID: one answers its method
	// instead of a script or the default behaviour (the method still
	// needs its lexicon, which gives it its route).
	Methods map[string]http.Handler
	// Proxied admits or refuses calls proxied by a PDS (service-auth
	// callers) by the service entries of their method; nil admits them all.
	Proxied ProxiedGate
	// Forward answers calls for NSIDs without a local lexicon (the XRPC
	// proxy); nil answers them 404 `method not found`.
	Forward http.Handler
	// Observer counts the calls of the methods routed (those with a
	// local lexicon), by method; nil counts nothing.
	Observer Observer
	Logger   *slog.Logger
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
	calls    *xrpcmethods.Dispatcher
	bodies   bodies
	routed   http.Handler
	methods  map[string]http.Handler
	forward  http.Handler
	observer Observer
	log      *slog.Logger
}

// New builds a Handler.
func New(o Options) *Handler {
	h := &Handler{lexicons: o.Lexicons, calls: o.Calls, methods: o.Methods, forward: o.Forward, observer: o.Observer, log: o.Logger}
	if h.log == nil {
		h.log = slog.Default()
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
	Observed(h.observer, lex.ID, h.routed).ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), lexiconKey{}, lex)))
}

// UserMiddleware authenticates the user (optional for queries; the
// dispatcher refuses anonymous procedures) and puts the caller in the
// request context. It runs after client identification, so refused
// requests have taken a rate-limit token. Fixed endpoints use it too, so
// every XRPC route authenticates users the same way.
func UserMiddleware(users *userauth.Authenticator, log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, err := users.Authenticate(r, clientID(r.Context()))
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

// clientID is the ID of the API client identified for a request, "" when
// none was.
func clientID(ctx context.Context) string {
	if c, ok := apiclients.FromContext(ctx); ok {
		return c.ID
	}
	return ""
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

// dispatch answers a routed request: a Go method handler, else the
// dispatcher with the call read from the request.
func (h *Handler) dispatch(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	lex, _ := LexiconFromContext(ctx)
	user := caller.UserFrom(ctx)
	if err := xrpcmethods.Admit(lex, user); err != nil {
		respond.Fail(w, r, h.log, err)
		return
	}
	if m, ok := h.methods[lex.ID]; ok {
		m.ServeHTTP(w, r)
		return
	}
	call, err := readCall(w, r, lex)
	if err != nil {
		respond.Fail(w, r, h.log, err)
		return
	}
	call.User, call.ClientID = user, clientID(ctx)
	body := h.bodies.get()
	defer h.bodies.put(body)
	ans, err := h.calls.Call(ctx, call, *body)
	if err != nil {
		respond.Fail(w, r, h.log, err)
		return
	}
	// ans.Body is the pooled buffer grown, or a body nobody else holds
	// (the PDS's answer): either is reused once sent.
	*body = ans.Body
	if ans.Labeled {
		w.Header().Set(headerContentLabelers, strings.Join(ans.ContentLabelers, ", "))
	}
	if ans.NotIndexed != "" {
		w.Header().Set(NotIndexedHeader, clipHeader(ans.NotIndexed))
	}
	respond.Raw(w, ans.Status, ans.Body)
}

var (
	errMalformedQuery = fail.New(fail.Invalid, "malformed query string")
	errBodyTooLarge   = fail.New(fail.TooLarge, "request body too large")
)

// readCall reads the call of lex from r: its query parameters (the client
// key is not one), the labelers it accepts, and a procedure's body (at
// most xrpcmethods.MaxInput bytes).
func readCall(w http.ResponseWriter, r *http.Request, lex *lexicon.Lexicon) (xrpcmethods.Call, error) {
	params, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return xrpcmethods.Call{}, errMalformedQuery
	}
	// The client key identifies the caller's app; it is neither a
	// parameter of the method nor something for the event log.
	params.Del("client_key")
	call := xrpcmethods.Call{Lexicon: lex, Params: params, AcceptLabelers: r.Header.Values(headerAcceptLabelers)}
	if lex.Kind == lexicon.KindProcedure {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, xrpcmethods.MaxInput))
		if err != nil {
			return xrpcmethods.Call{}, errBodyTooLarge
		}
		if len(body) > 0 {
			call.Input = body
		}
	}
	return call, nil
}

// clipHeader bounds a header value made of error text to 256 bytes, on a
// UTF-8 boundary.
func clipHeader(v string) string { return textclip.Clip(v, 256) }

// maxPooledBody is the largest response buffer kept for reuse; a larger
// one (a page of very large records) is left to the garbage collector.
const maxPooledBody = 1 << 20

// bodies are response buffers reused across requests.
type bodies struct{ pool sync.Pool }

func (b *bodies) get() *[]byte {
	if p, ok := b.pool.Get().(*[]byte); ok {
		return p
	}
	p := make([]byte, 0, 16<<10)
	return &p
}

func (b *bodies) put(p *[]byte) {
	if cap(*p) <= maxPooledBody {
		*p = (*p)[:0]
		b.pool.Put(p)
	}
}
