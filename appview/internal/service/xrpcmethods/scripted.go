package xrpcmethods

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/lexview/lexview/appview/internal/core/scripthost"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/script"
)

// Scripts finds the scripts bound to methods (the script runtime).
type Scripts interface {
	MethodScript(lex *lexicon.Lexicon) (*scripthost.MethodScript, bool)
}

// methodScript is the script bound to lex's method, if any (none leaves
// the call to the default behaviour).
func (d *Dispatcher) methodScript(lex *lexicon.Lexicon) (*scripthost.MethodScript, bool) {
	if d.scripts == nil {
		return nil, false
	}
	return d.scripts.MethodScript(lex)
}

// runScript answers c with ms, the script bound to its method.
func (d *Dispatcher) runScript(ctx context.Context, ms *scripthost.MethodScript, c Call, dst []byte) (Answer, error) {
	call := scripthost.MethodCall{Lexicon: c.Lexicon, Params: c.Params, Caller: scriptCaller(c)}
	if c.Lexicon.Kind == lexicon.KindProcedure && len(c.Input) > 0 {
		if !json.Valid(c.Input) {
			return Answer{}, errInvalidInput
		}
		call.Input = c.Input
	}
	out, err := ms.Append(ctx, call, dst)
	if err != nil {
		return Answer{}, err
	}
	return Answer{Status: http.StatusOK, Body: out}, nil
}

// scriptCaller is the script's view of the call's user.
func scriptCaller(c Call) *script.Caller {
	if c.User == nil {
		return nil
	}
	return &script.Caller{DID: c.User.DID, SessionID: c.User.SessionID, ClientID: c.ClientID}
}
