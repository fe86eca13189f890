package luascript

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/lexview/lexview/script"
)

// pluginHost answers plugins.call by echoing what it was given.
type pluginHost struct {
	nopHost
	id, fn   string
	input    string
	deadline bool
	answer   json.RawMessage
	err      error
}

func (h *pluginHost) CallPlugin(ctx context.Context, _ *script.Invocation, id, fn string, input json.RawMessage) (json.RawMessage, error) {
	h.id, h.fn, h.input = id, fn, string(input)
	_, h.deadline = ctx.Deadline()
	return h.answer, h.err
}

func runPlugin(t *testing.T, h *pluginHost, src string) (string, error) {
	t.Helper()
	p, err := New(Options{}).Compile("test", src)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Run(context.Background(), &script.Invocation{Host: h, Kind: script.KindQuery, Method: "com.example.q"})
	return string(out), err
}

func TestPluginsCall(t *testing.T) {
	h := &pluginHost{answer: json.RawMessage(`{"clean":false,"matches":["heck"],"empty":[]}`)}
	out, err := runPlugin(t, h, `function handle()
		local r = plugins.call("word-filter", "check", {text = "oh heck", n = 2})
		return {clean = r.clean, first = r.matches[1], empty = r.empty}
	end`)
	if err != nil {
		t.Fatal(err)
	}
	if out != `{"clean":false,"empty":[],"first":"heck"}` {
		t.Fatalf("answer: %s", out)
	}
	if h.id != "word-filter" || h.fn != "check" || h.input != `{"n":2,"text":"oh heck"}` || !h.deadline {
		t.Fatalf("call: %+v", h)
	}
	// No input is null.
	h.answer = json.RawMessage(`null`)
	if out, err := runPlugin(t, h, `function handle() return {v = plugins.call("p", "f")} end`); err != nil || out != `{"v":null}` || h.input != "null" {
		t.Fatalf("no input: %s %v %q", out, err, h.input)
	}
	// A plugin failure is a script error naming plugins.call.
	h.err = errors.New("plugin p: lv_call trapped")
	_, err = runPlugin(t, h, `function handle() return plugins.call("p", "f", {}) end`)
	var se *script.Error
	if !errors.As(err, &se) || se.Kind != script.ErrRuntime || !strings.Contains(se.Msg, "plugins.call: plugin p: lv_call trapped") {
		t.Fatalf("failure: %v", err)
	}
	// A failure can be caught with pcall.
	out, err = runPlugin(t, h, `function handle() local ok, e = pcall(plugins.call, "p", "f") return {ok = ok} end`)
	if err != nil || out != `{"ok":false}` {
		t.Fatalf("pcall: %s %v", out, err)
	}
	// Invalid JSON from the host is refused.
	h.err, h.answer = nil, json.RawMessage(`{bad`)
	if _, err := runPlugin(t, h, `function handle() return plugins.call("p", "f") end`); err == nil || !strings.Contains(err.Error(), "answered invalid JSON") {
		t.Fatalf("invalid answer: %v", err)
	}
}
