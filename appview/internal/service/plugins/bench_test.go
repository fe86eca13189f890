package plugins_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/lexview/lexview/appview/internal/service/plugins/wasm"
	"github.com/lexview/lexview/appview/internal/testing/plugintest"
	"github.com/lexview/lexview/script"
	"github.com/lexview/lexview/script/luascript"
)

// benchHost is a script host whose only working method is CallPlugin,
// into a real pooled module.
type benchHost struct {
	script.Host
	m map[string]*wasm.Module
}

func (h benchHost) CallPlugin(ctx context.Context, _ *script.Invocation, id, fn string, input json.RawMessage) (json.RawMessage, error) {
	return h.m[id].CallFunction(ctx, fn, input)
}

type nopEnv struct{}

func (nopEnv) Secret(context.Context, string) (string, bool) { return "", false }
func (nopEnv) Config(context.Context) []byte                 { return []byte(`{"words":["darn","heck"]}`) }
func (nopEnv) Log(context.Context, wasm.Level, string)       {}

// BenchmarkLuaPluginCall runs a query script that makes one small JSON
// round trip into a pooled plugin instance: the echo of the runtime's
// test plugin (the ABI's own cost) and the word filter's check (plus its
// encoding/json work inside the module), against the same script without
// the call: the difference is the added latency.
func BenchmarkLuaPluginCall(b *testing.B) {
	ctx := context.Background()
	rt, err := wasm.New(ctx, wasm.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close(ctx)
	mods := map[string]*wasm.Module{}
	for id, dir := range map[string]string{"word-filter": "examples/plugins/wordfilter", "echo": "appview/internal/service/plugins/wasm/testdata/bad"} {
		m, err := rt.Load(ctx, plugintest.Build(b, dir), wasm.ModuleOptions{Name: id, Env: nopEnv{}})
		if err != nil {
			b.Fatal(err)
		}
		mods[id] = m
	}
	engine := luascript.New(luascript.Options{})
	for _, c := range []struct{ name, src string }{
		{"without", `function handle() local input = {text = "a short sentence with heck in it"} return {clean = true} end`},
		{"echo", `function handle() local r = plugins.call("echo", "echo", {text = "a short sentence with heck in it"}) return {clean = r.text ~= nil} end`},
		{"check", `function handle() local r = plugins.call("word-filter", "check", {text = "a short sentence with heck in it"}) return {clean = r.clean} end`},
	} {
		p, err := engine.Compile(c.name, c.src)
		if err != nil {
			b.Fatal(err)
		}
		inv := &script.Invocation{Host: benchHost{m: mods}, Kind: script.KindQuery, Method: "app.test.q"}
		if _, err := p.Run(ctx, inv); err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := p.Run(ctx, inv); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
