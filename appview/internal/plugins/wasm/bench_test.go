package wasm_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/lexview/lexview/appview/internal/plugins/plugintest"
	"github.com/lexview/lexview/appview/internal/plugins/wasm"
)

// BenchmarkCallPooled is a small JSON round trip through a pooled
// instance of the word filter.
func BenchmarkCallPooled(b *testing.B) {
	rt, err := wasm.New(context.Background(), wasm.Options{Cache: cache})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close(context.Background())
	m, err := rt.Load(context.Background(), buildForBench(b, "examples/plugins/wordfilter"), wasm.ModuleOptions{Name: "wf", Env: &env{}})
	if err != nil {
		b.Fatal(err)
	}
	in := json.RawMessage(`{"text":"a short sentence to check"}`)
	ctx := context.Background()
	if _, err := m.CallFunction(ctx, "check", in); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := m.CallFunction(ctx, "check", in); err != nil {
			b.Fatal(err)
		}
	}
}

func buildForBench(b *testing.B, dir string) []byte { return plugintest.Build(b, dir) }
