package wasm

import (
	"context"
	"encoding/json"
)

// Envelope is the JSON every ABI call answers with: the value under "ok",
// or a message under "error".
type Envelope struct {
	OK    json.RawMessage `json:"ok"`
	Error *string         `json:"error"`
}

// Invoke calls export with args and opens the answer's envelope: the
// "ok" value (JSON null when absent), an ErrPlugin *Error for "error",
// an ErrProtocol *Error for anything else.
func (m *Module) Invoke(ctx context.Context, export string, args ...[]byte) (json.RawMessage, error) {
	out, err := m.Call(ctx, export, args...)
	if err != nil {
		return nil, err
	}
	var env Envelope
	if err := json.Unmarshal(out, &env); err != nil {
		return nil, &Error{Kind: ErrProtocol, Plugin: m.opt.Name, Msg: export + " returned malformed JSON", Err: err}
	}
	if env.Error != nil {
		return nil, &Error{Kind: ErrPlugin, Plugin: m.opt.Name, Msg: *env.Error}
	}
	if len(env.OK) == 0 {
		return json.RawMessage("null"), nil
	}
	return env.OK, nil
}

// CallFunction calls the script-library function fn with input (JSON,
// null when empty) through lv_call.
func (m *Module) CallFunction(ctx context.Context, fn string, input json.RawMessage) (json.RawMessage, error) {
	if len(input) == 0 {
		input = json.RawMessage("null")
	}
	return m.Invoke(ctx, ExportCall, []byte(fn), input)
}
