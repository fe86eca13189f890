package xrpc

import (
	"bytes"
	"context"
	"net/http"
	"net/url"

	"github.com/lexview/lexview/appview/internal/core/caller"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/service/xrpcmethods"
	"github.com/lexview/lexview/appview/internal/web/respond"
)

// LocalCall is a script's in-process call of a method (xrpc.query,
// xrpc.procedure).
type LocalCall struct {
	// Method is GET (a query) or POST (a procedure).
	Method string
	NSID   string
	Params url.Values
	// Input is a procedure's JSON body; nil for none.
	Input []byte
	// User is the user the call runs as; nil for an anonymous call.
	User *caller.User
	// ClientID is the API client the user called with ("" when unknown).
	ClientID string
}

// Call runs a method in-process for a script, as c's user (no client
// identification, user authentication or rate limiting is repeated), and
// returns the status and JSON body an HTTP caller would get. The call
// reaches the dispatcher as plain values; only a Go method handler, an
// http.Handler the embedder registered and able to take nothing else, is
// served a request built from the call (serveMethod).
func (h *Handler) Call(ctx context.Context, c LocalCall) (int, []byte) {
	lex, ok := h.lexicons.Snapshot().Get(c.NSID)
	if !ok || !routable(lex.Kind, c.Method) {
		return http.StatusNotFound, respond.ErrorBody(msgMethodNotFound)
	}
	if err := xrpcmethods.Admit(lex, c.User); err != nil {
		return h.failed(ctx, c, err)
	}
	if m, ok := h.methods[lex.ID]; ok {
		return h.serveMethod(ctx, m, c)
	}
	if len(c.Input) > xrpcmethods.MaxInput {
		return h.failed(ctx, c, errBodyTooLarge)
	}
	ans, err := h.calls.Call(ctx, xrpcmethods.Call{Lexicon: lex, Params: c.Params, Input: c.Input, User: c.User,
		ClientID: c.ClientID}, nil)
	if err != nil {
		return h.failed(ctx, c, err)
	}
	return ans.Status, ans.Body
}

// failed is the status and body of a refused or failed local call, as
// respond.Fail answers them; an internal error is logged and shows
// nothing.
func (h *Handler) failed(ctx context.Context, c LocalCall, err error) (int, []byte) {
	if fail.KindOf(err) == fail.Internal {
		h.log.ErrorContext(ctx, "a script's XRPC call failed", "method", c.Method, "nsid", c.NSID, "err", err)
		return http.StatusInternalServerError, respond.ErrorBody("internal server error")
	}
	return respond.Status(err), respond.ErrorBody(fail.Message(err))
}

// serveMethod serves a local call to a Go method handler with the request
// it would get over HTTP: the method, /xrpc/{nsid} with the parameters,
// the JSON input, and the user and client in its context (CallerDID).
func (h *Handler) serveMethod(ctx context.Context, m http.Handler, c LocalCall) (int, []byte) {
	ctx = caller.WithUser(ctx, c.User)
	if c.ClientID != "" {
		ctx = apiclients.WithClient(ctx, &apiclients.Client{ID: c.ClientID})
	}
	lex, _ := h.lexicons.Snapshot().Get(c.NSID)
	ctx = context.WithValue(ctx, lexiconKey{}, lex)
	target := "/xrpc/" + c.NSID
	if len(c.Params) > 0 {
		target += "?" + c.Params.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, c.Method, target, bytes.NewReader(c.Input))
	if err != nil {
		return http.StatusBadRequest, respond.ErrorBody("invalid request")
	}
	req.SetPathValue("nsid", c.NSID)
	if c.Input != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := &bufferedResponse{header: http.Header{}, status: http.StatusOK}
	m.ServeHTTP(rec, req)
	return rec.status, rec.body.Bytes()
}

// bufferedResponse collects a Go method handler's answer.
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
