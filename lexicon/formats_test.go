package lexicon

import "testing"

// Each hand-written format check must accept only what indigo's accepts,
// and should accept the usual values itself.
var formatExamples = map[string]struct{ good, bad []string }{
	"at-identifier": {
		good: []string{"did:plc:ewvi7nxzyoun6zhxrhs64oiz", "alice.bsky.social", "did:web:example.com"},
		bad:  []string{"", "alice", "did:", "-a.example", "a.example-", "a.1example", "did:plc:x:"},
	},
	"at-uri": {
		good: []string{"at://did:plc:ewvi7nxzyoun6zhxrhs64oiz/app.bsky.feed.post/3kabcdefghij2", "at://alice.test", "at://alice.test/com.example.x", "at://did:web:a.b/c.d.e/self"},
		bad:  []string{"at://", "at:///x", "https://x", "at://a.test/x", "at://a.test/c.d.e/", "at://a.test/c.d.e/a/b", "at://a.test/c.d.e?q", "at://a.test/c.d.e/..", "at://%/c.d.e"},
	},
	"cid":        {good: []string{cidA, cidB}, bad: []string{"", "short", "Qmbabcdefghijk", "bafy-rei", cidA + "/"}},
	"datetime":   {good: []string{"2026-01-02T03:04:05Z", "2026-01-02T03:04:05.123+05:30"}, bad: []string{"1999-12-31T23:59:60.000000000001Z", "2026-01-02T03:04:05", "2026-01-02T03:04:05-00:00", "2026-02-30T00:00:00Z", "0000-01-01T00:00:00+01:00", "2026-01-02T03:04:05.Z", "2026-01-02t03:04:05Z"}},
	"did":        {good: []string{"did:plc:ewvi7nxzyoun6zhxrhs64oiz", "did:web:example.com", "did:web:localhost%3A8080", "did:x:a_b.c-d"}, bad: []string{"did:", "did:plc", "did:plc:", "did:PLC:x", "did:plc:x:", "did:plc:x%", "did:plc:a b"}},
	"handle":     {good: []string{"alice.bsky.social", "a.co", "xn--ls8h.test", "1a.example"}, bad: []string{"", "alice", "a..b", ".a.b", "a.b.", "a.1b", "-a.b", "a-.b", "a_b.c"}},
	"nsid":       {good: []string{"app.bsky.feed.post", "com.example.fooBar", "a.b.c", "com.ex-ample.x1"}, bad: []string{"", "a.b", "1a.b.c", "a.b.c-d", "a.b.1c", "a..b.c", "a.b.c."}},
	"language":   {good: []string{"en", "pt-BR", "zh-Hant-TW", "i-default", "ja"}, bad: []string{"", "e", "english", "EN", "en-", "en--US", "en_US"}},
	"tid":        {good: []string{"3kabcdefghij2", "2222222222222"}, bad: []string{"", "kabcdefghij23", "3kabcdefghij", "3kabcdefghij2x", "3kABCDEFGHIJ2", "3kabcdefghij1"}},
	"record-key": {good: []string{"self", "3kabcdefghij2", "a:b~c_d.e-f"}, bad: []string{"", ".", "..", "a/b", "a b", "a#b"}},
}

func TestFastFormatsAgreeWithIndigo(t *testing.T) {
	for name, ex := range formatExamples {
		f, ok := formats[name]
		if !ok || f.fast == nil {
			continue
		}
		for _, v := range ex.good {
			if !f.fast(v) {
				t.Errorf("%s: fast check rejects %q", name, v)
			}
			if err := f.slow(v); err != nil {
				t.Errorf("%s: indigo rejects %q: %v", name, v, err)
			}
		}
		for _, v := range ex.bad {
			if f.fast(v) {
				t.Errorf("%s: fast check accepts %q", name, v)
			}
		}
	}
}

func FuzzFastFormats(f *testing.F) {
	for _, ex := range formatExamples {
		for _, v := range append(ex.good, ex.bad...) {
			f.Add(v)
		}
	}
	f.Fuzz(func(t *testing.T, v string) {
		for name, check := range formats {
			if check.fast != nil && check.fast(v) {
				if err := check.slow(v); err != nil {
					t.Errorf("%s: fast check accepts %q, indigo: %v", name, v, err)
				}
			}
		}
	})
}
