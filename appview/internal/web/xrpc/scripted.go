package xrpc

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"

	"github.com/lexview/lexview/appview/internal/core/caller"
	"github.com/lexview/lexview/appview/internal/core/scripthost"
	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/web/respond"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/script"
)

// MaxScriptInput bounds a scripted procedure's JSON body.
const MaxScriptInput = 1 << 20

// Scripts finds the scripts bound to methods (the script runtime).
type Scripts interface {
	MethodScript(lex *lexicon.Lexicon) (*scripthost.MethodScript, bool)
}

// serveScript answers a routed request with the script bound to its
// method and reports whether one was bound (false leaves the request to
// the default behaviour).
func (h *Handler) serveScript(w http.ResponseWriter, r *http.Request, lex *lexicon.Lexicon) bool {
	if h.scripts == nil {
		return false
	}
	ms, ok := h.scripts.MethodScript(lex)
	if !ok {
		return false
	}
	params, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		respond.Error(w, http.StatusBadRequest, "malformed query string")
		return true
	}
	// The client key identifies the caller's app; it is neither a
	// parameter of the method nor something for the event log.
	params.Del("client_key")
	call := scripthost.MethodCall{Lexicon: lex, Params: params, Caller: scriptCaller(r.Context())}
	if lex.Kind == lexicon.KindProcedure {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxScriptInput))
		if err != nil {
			respond.Error(w, http.StatusRequestEntityTooLarge, "request body too large")
			return true
		}
		if len(body) > 0 {
			if !json.Valid(body) {
				respond.Error(w, http.StatusBadRequest, "invalid request body")
				return true
			}
			call.Input = body
		}
	}
	body := h.bodies.get()
	defer h.bodies.put(body)
	out, err := ms.Append(r.Context(), call, *body)
	if err != nil {
		respond.Fail(w, r, h.log, err)
		return true
	}
	*body = out
	respond.Raw(w, http.StatusOK, out)
	return true
}

// scriptCaller is the script's view of the authenticated request.
func scriptCaller(ctx context.Context) *script.Caller {
	u := caller.UserFrom(ctx)
	if u == nil {
		return nil
	}
	c := &script.Caller{DID: u.DID, SessionID: u.SessionID}
	if cl, ok := apiclients.FromContext(ctx); ok {
		c.ClientID = cl.ID
	}
	return c
}
