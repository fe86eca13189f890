package scripthost

import (
	"context"
	"net/url"

	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/script"
)

type depthKey struct{}

// WithDepth marks ctx as a nested XRPC call made by a script.
func WithDepth(ctx context.Context, depth int) context.Context {
	return context.WithValue(ctx, depthKey{}, depth)
}

func depthOf(ctx context.Context) int {
	d, _ := ctx.Value(depthKey{}).(int)
	return d
}

// MethodCall is one call of an XRPC method that may have a script bound.
type MethodCall struct {
	Lexicon *lexicon.Lexicon
	// Params are the query parameters, without the client key.
	Params url.Values
	// Input is a procedure's JSON body; nil for queries and empty bodies.
	Input []byte
	// Caller is the authenticated user; nil for an anonymous call.
	Caller *script.Caller
}

// methodKind is the script kind of a method's lexicon.
func methodKind(lex *lexicon.Lexicon) string {
	if lex.Kind == lexicon.KindProcedure {
		return script.KindProcedure
	}
	return script.KindQuery
}

// MethodScript is the script bound to a method, ready to run.
type MethodScript struct {
	r    *Runtime
	b    *bound
	kind string
}

// MethodScript returns the script bound to the method of lex, and whether
// there is one: one look-up per request, whether a script runs or not.
func (r *Runtime) MethodScript(lex *lexicon.Lexicon) (*MethodScript, bool) {
	kind := methodKind(lex)
	b, ok := r.Lookup(kind, lex.ID)
	if !ok {
		return nil, false
	}
	return &MethodScript{r: r, b: b, kind: kind}, true
}

// Append runs the script and appends its JSON answer to dst ({} when the
// script returns nil). A failure is logged and recorded as a script.error event,
// and returned as a Failed error with the specification's message
// (`script execution failed`, or `script exceeded execution time limit`);
// the script's own error is never shown.
func (m *MethodScript) Append(ctx context.Context, call MethodCall, dst []byte) ([]byte, error) {
	lex := call.Lexicon
	inv := &script.Invocation{
		Host: m.r.host(), Kind: m.kind, Method: lex.ID, Params: call.Params, Collection: lex.TargetCollection,
		Caller: call.Caller, Depth: depthOf(ctx),
	}
	if m.kind == script.KindProcedure {
		inv.Input = call.Input
	}
	start := len(dst)
	out, err := m.b.executeAppend(ctx, inv, dst)
	if err != nil {
		input := call.Params.Encode()
		if m.kind == script.KindProcedure {
			input = string(call.Input)
		}
		m.r.recordError(ctx, m.b, inv, input, err)
		return nil, fail.Wrap(fail.Failed, script.PublicMessage(err), err)
	}
	if string(out[start:]) == "null" {
		out = append(out[:start], "{}"...)
	}
	return out, nil
}
