package scripting

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"

	"github.com/lexview/lexview/appview/internal/clients"
	"github.com/lexview/lexview/appview/internal/respond"
	"github.com/lexview/lexview/appview/internal/userauth"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/script"
)

// MaxInput bounds a scripted procedure's JSON body.
const MaxInput = 1 << 20

type depthKey struct{}

// WithDepth marks ctx as a nested XRPC call made by a script.
func WithDepth(ctx context.Context, depth int) context.Context {
	return context.WithValue(ctx, depthKey{}, depth)
}

func depthOf(ctx context.Context) int {
	d, _ := ctx.Value(depthKey{}).(int)
	return d
}

// ServeScript answers a routed XRPC request with the script bound to its
// method and reports whether one was bound (false leaves the request to
// the default behaviour).
func (r *Runtime) ServeScript(w http.ResponseWriter, req *http.Request, lex *lexicon.Lexicon) bool {
	kind := script.KindQuery
	if lex.Kind == lexicon.KindProcedure {
		kind = script.KindProcedure
	}
	b, ok := r.Lookup(kind, lex.ID)
	if !ok {
		return false
	}
	params, err := url.ParseQuery(req.URL.RawQuery)
	if err != nil {
		respond.Error(w, http.StatusBadRequest, "malformed query string")
		return true
	}
	// The client key identifies the caller's app; it is neither a
	// parameter of the method nor something for the event log.
	params.Del("client_key")
	inv := &script.Invocation{
		Host: r.host(), Kind: kind, Method: lex.ID, Params: params, Collection: lex.TargetCollection,
		Caller: callerOf(req.Context()), Depth: depthOf(req.Context()),
	}
	input := params.Encode()
	if kind == script.KindProcedure {
		body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, MaxInput))
		if err != nil {
			respond.Error(w, http.StatusRequestEntityTooLarge, "request body too large")
			return true
		}
		if len(body) > 0 {
			if !json.Valid(body) {
				respond.Error(w, http.StatusBadRequest, "invalid request body")
				return true
			}
			inv.Input = body
		}
		input = string(body)
	}
	out, err := b.execute(req.Context(), inv)
	if err != nil {
		r.recordError(req.Context(), b, inv, input, err)
		respond.Error(w, http.StatusInternalServerError, script.PublicMessage(err))
		return true
	}
	if string(out) == "null" {
		out = []byte("{}")
	}
	respond.Raw(w, http.StatusOK, out)
	return true
}

// callerOf builds the script's caller from the authenticated request.
func callerOf(ctx context.Context) *script.Caller {
	u := userauth.FromContext(ctx)
	if u == nil {
		return nil
	}
	c := &script.Caller{DID: u.DID}
	if u.Session != nil {
		c.SessionID = u.Session.ID
	}
	if cl, ok := clients.FromContext(ctx); ok {
		c.ClientID = cl.ID
	}
	return c
}
