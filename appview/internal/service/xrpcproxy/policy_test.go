package xrpcproxy

import (
	"strings"
	"testing"
)

func TestPolicyCheck(t *testing.T) {
	ok := []Policy{
		DefaultPolicy(), {Mode: ModeDisabled}, {Mode: ModeAllowlist, Patterns: []string{"com.example.feed.get", "com.example.*", "app.bsky.feed.*"}},
		{Mode: ModeBlocklist, Patterns: []string{}},
	}
	for _, p := range ok {
		if err := p.Check(); err != nil {
			t.Errorf("%+v refused: %v", p, err)
		}
	}
	bad := []struct {
		p   Policy
		msg string
	}{
		{Policy{Mode: ""}, "mode must be one of"},
		{Policy{Mode: "Open"}, "mode must be one of"},
		{Policy{Mode: ModeAllowlist, Patterns: []string{"*"}}, `pattern "*" alone is refused`},
		{Policy{Mode: ModeAllowlist, Patterns: []string{"com.*"}}, "invalid pattern"},
		{Policy{Mode: ModeAllowlist, Patterns: []string{".*"}}, "invalid pattern"},
		{Policy{Mode: ModeAllowlist, Patterns: []string{"com.example"}}, "invalid pattern"},
		{Policy{Mode: ModeAllowlist, Patterns: []string{"com.ex ample.x"}}, "invalid pattern"},
		{Policy{Mode: ModeAllowlist, Patterns: []string{"com.example.*.get"}}, "invalid pattern"},
		{Policy{Mode: ModeAllowlist, Patterns: make([]string, maxPatterns+1)}, "at most"},
	}
	for _, c := range bad {
		if err := c.p.Check(); err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%+v: %v, want %q", c.p.Mode, err, c.msg)
		}
	}
}

func TestPolicyAllows(t *testing.T) {
	pats := []string{"com.example.feed.get", "org.other.*"}
	cases := []struct {
		mode, nsid string
		want       bool
	}{
		{ModeOpen, "any.thing.here", true},
		{ModeDisabled, "com.example.feed.get", false},
		{ModeAllowlist, "com.example.feed.get", true},
		{ModeAllowlist, "com.example.feed.getMore", false},
		{ModeAllowlist, "org.other.a.b", true},
		{ModeAllowlist, "org.otherwise.a", false},
		{ModeBlocklist, "com.example.feed.get", false},
		{ModeBlocklist, "org.other.x", false},
		{ModeBlocklist, "com.example.feed.put", true},
	}
	for _, c := range cases {
		if got := (Policy{Mode: c.mode, Patterns: pats}).Allows(c.nsid); got != c.want {
			t.Errorf("%s %s: %v, want %v", c.mode, c.nsid, got, c.want)
		}
	}
}
