package luascript

import (
	"context"
	"testing"

	"github.com/lexview/lexview/script"
)

// FuzzScript compiles and runs arbitrary source with a small budget: the
// loader and the VM must fail cleanly (a script.Error), never panic or
// hang.
func FuzzScript(f *testing.F) {
	for _, seed := range []string{
		`function handle() return {1, 2, "x" .. 3} end`,
		`function handle() local t = {} for i = 1, 10 do t[i] = i * 2 end return t end`,
		`function handle() return json.decode('{"a":[1,{"b":null}]}') end`,
		`function handle() return string.format("%5.2f %s", 1.5, "x") .. ("ab"):rep(3, ",") end`,
		`function handle( end`,
		`local x = "a" .. nil`,
		`function handle() return setmetatable({}, {__concat = function() return "m" end}) .. "x" end`,
		`function handle() while true do end end`,
		`return 1`,
		`goto x ::x::`,
	} {
		f.Add(seed)
	}
	e := New(Options{Limits: Limits{Instructions: 20_000, MaxString: 1 << 16, MaxAllocated: 1 << 20}})
	f.Fuzz(func(t *testing.T, src string) {
		p, err := e.Compile("fuzz", src)
		if err != nil {
			if kindOf(err) != script.ErrSyntax {
				t.Fatalf("compile error of kind %d: %v", kindOf(err), err)
			}
			return
		}
		out, err := p.Run(context.Background(), &script.Invocation{Host: nopHost{}, Kind: script.KindQuery, Method: "com.example.fuzz"})
		if err != nil && kindOf(err) == 0 {
			t.Fatalf("run failed with a non-script error: %v", err)
		}
		if err == nil && len(out) == 0 {
			t.Fatal("no output and no error")
		}
	})
}
