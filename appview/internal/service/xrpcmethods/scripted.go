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

// runScript answers c with the script bound to its method and reports
// whether one was bound (false leaves the call to the default behaviour).
func (d *Dispatcher) runScript(ctx context.Context, c Call, dst []byte) (Answer, bool, error) {
	if d.scripts == nil {
		return Answer{}, false, nil
	}
	ms, ok := d.scripts.MethodScript(c.Lexicon)
	if !ok {
		return Answer{}, false, nil
	}
	call := scripthost.MethodCall{Lexicon: c.Lexicon, Params: c.Params, Caller: scriptCaller(c)}
	if c.Lexicon.Kind == lexicon.KindProcedure && len(c.Input) > 0 {
		if !json.Valid(c.Input) {
			return Answer{}, true, errInvalidInput
		}
		call.Input = c.Input
	}
	out, err := ms.Append(ctx, call, dst)
	if err != nil {
		return Answer{}, true, err
	}
	return Answer{Status: http.StatusOK, Body: out}, true, nil
}

// scriptCaller is the script's view of the call's user.
func scriptCaller(c Call) *script.Caller {
	if c.User == nil {
		return nil
	}
	return &script.Caller{DID: c.User.DID, SessionID: c.User.SessionID, ClientID: c.ClientID}
}
