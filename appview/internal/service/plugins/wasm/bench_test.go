package wasm_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/lexview/lexview/appview/internal/service/plugins/wasm"
	"github.com/lexview/lexview/appview/internal/testing/plugintest"
)

// BenchmarkCallPooled is a small JSON round trip through a pooled
// instance: the word filter's check, and an echo (the ABI's own cost).
func BenchmarkCallPooled(b *testing.B) {
	ctx := context.Background()
	rt, err := wasm.New(ctx, wasm.Options{Cache: cache})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close(ctx)
	for _, c := range []struct{ name, dir, fn string }{
		{"check", "examples/plugins/wordfilter", "check"},
		{"echo", "appview/internal/service/plugins/wasm/testdata/bad", "echo"},
		{"x-unmarshal", "appview/internal/service/plugins/wasm/testdata/bad", "x-unmarshal"},
		{"x-marshal", "appview/internal/service/plugins/wasm/testdata/bad", "x-marshal"},
		{"x-struct", "appview/internal/service/plugins/wasm/testdata/bad", "x-struct"},
	} {
		m, err := rt.Load(ctx, plugintest.Build(b, c.dir), wasm.ModuleOptions{Name: c.name, Env: &env{}})
		if err != nil {
			b.Fatal(err)
		}
		in := json.RawMessage(`{"text":"a short sentence to check"}`)
		if _, err := m.CallFunction(ctx, c.fn, in); err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := m.CallFunction(ctx, c.fn, in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
