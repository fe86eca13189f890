package lexicon_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage/storagetest"
)

// paramsOf stores a query lexicon declaring props (and required) and
// returns the parameters its registry entry compiled.
func paramsOf(t testing.TB, props, required string) *lexicon.Params {
	t.Helper()
	reg := lexicon.NewRegistry(storagetest.SQLite(t))
	params := `{"type":"params","properties":` + props
	if required != "" {
		params += `,"required":` + required
	}
	doc := `{"lexicon":1,"id":"app.test.find","defs":{"main":{"type":"query","parameters":` + params + `}}}}`
	l, _, err := reg.Put(context.Background(), lexicon.Upload{Document: json.RawMessage(doc)})
	if err != nil {
		t.Fatalf("upload: %v", err)
	}
	if l.Params == nil {
		t.Fatal("no compiled parameters")
	}
	return l.Params
}

// paramCase is a query string and the error it gets ("" for none).
type paramCase struct{ query, err string }

func checkParams(t *testing.T, p *lexicon.Params, cases []paramCase) {
	t.Helper()
	for _, tc := range cases {
		q, err := url.ParseQuery(tc.query)
		if err != nil {
			t.Fatal(err)
		}
		err = p.Validate(q)
		got := ""
		if err != nil {
			got = err.Error()
			var pe *lexicon.ParamError
			if !errors.As(err, &pe) {
				t.Errorf("%q: %T is not a *ParamError", tc.query, err)
			}
		}
		if got != tc.err {
			t.Errorf("%q: got error %q, want %q", tc.query, got, tc.err)
		}
	}
}

func TestParamsScalars(t *testing.T) {
	p := paramsOf(t, `{
		"flag":{"type":"boolean"},
		"on":{"type":"boolean","const":true},
		"n":{"type":"integer","minimum":1,"maximum":10},
		"pick":{"type":"integer","enum":[2,4]},
		"seven":{"type":"integer","const":7},
		"s":{"type":"string","minLength":2,"maxLength":4},
		"g":{"type":"string","minGraphemes":2,"maxGraphemes":3},
		"color":{"type":"string","enum":["red","blue"]},
		"sort":{"type":"string","knownValues":["new","top"]},
		"fixed":{"type":"string","const":"x"}
	}`, "")
	checkParams(t, p, []paramCase{
		{"", ""},
		{"undeclared=anything&other=1&other=2", ""},
		{"flag=true&flag=oops", ""}, // a scalar's first value is the one read
		{"flag=false", ""},
		{"flag=1", "invalid parameter flag: must be true or false"},
		{"flag=True", "invalid parameter flag: must be true or false"},
		{"on=true", ""},
		{"on=false", "invalid parameter on: must be true"},
		{"n=1&n=x", ""},
		{"n=10", ""},
		{"n=abc", "invalid parameter n: must be an integer"},
		{"n=", "invalid parameter n: must be an integer"},
		{"n=1.5", "invalid parameter n: must be an integer"},
		{"n=+3", "invalid parameter n: must be an integer"},
		{"n=99999999999999999999", "invalid parameter n: must be an integer"},
		{"n=0", "invalid parameter n: must be at least 1"},
		{"n=-4", "invalid parameter n: must be at least 1"},
		{"n=11", "invalid parameter n: must be at most 10"},
		{"pick=4", ""},
		{"pick=3", "invalid parameter pick: must be one of 2, 4"},
		{"seven=7", ""},
		{"seven=8", "invalid parameter seven: must be 7"},
		{"s=ab", ""},
		{"s=a", "invalid parameter s: must be at least 2 bytes long"},
		{"s=abcde", "invalid parameter s: must be at most 4 bytes long"},
		{"s=" + url.QueryEscape("éé"), ""},                                                   // 4 bytes
		{"s=" + url.QueryEscape("ééé"), "invalid parameter s: must be at most 4 bytes long"}, // 6 bytes
		{"g=" + url.QueryEscape("👍🏽👍🏽👍🏽"), ""},                                               // 3 graphemes, 24 bytes
		{"g=" + url.QueryEscape("👍🏽"), "invalid parameter g: must be at least 2 characters long"},
		{"g=abcd", "invalid parameter g: must be at most 3 characters long"},
		{"color=blue", ""},
		{"color=green", `invalid parameter color: must be one of "red", "blue"`},
		{"sort=whatever", ""}, // knownValues do not restrict
		{"fixed=x", ""},
		{"fixed=y", `invalid parameter fixed: must be "x"`},
	})
}

func TestParamsRequired(t *testing.T) {
	p := paramsOf(t, `{"q":{"type":"string"},"tags":{"type":"array","items":{"type":"string"}},"opt":{"type":"integer"}}`,
		`["q","tags"]`)
	checkParams(t, p, []paramCase{
		{"q=x&tags=a", ""},
		{"q=&tags=a", ""}, // present, if empty
		{"tags=a", "missing required parameter q"},
		{"q=x", "missing required parameter tags"},
		{"", "missing required parameter q"}, // parameters in name order
		{"Q=x&tags=a", "missing required parameter q"},
	})
	// Parameters left to another check are not required either.
	q, _ := url.ParseQuery("tags=a")
	if err := p.Validate(q, "q"); err != nil {
		t.Fatalf("q excepted: %v", err)
	}
}

func TestParamsArrays(t *testing.T) {
	p := paramsOf(t, `{
		"ids":{"type":"array","items":{"type":"integer","minimum":0},"minLength":2,"maxLength":3},
		"flags":{"type":"array","items":{"type":"boolean"}},
		"dids":{"type":"array","items":{"type":"string","format":"did"}}
	}`, "")
	checkParams(t, p, []paramCase{
		{"ids=1&ids=2", ""},
		{"ids=1&ids=2&ids=3", ""},
		{"ids=1", "invalid parameter ids: must be given at least 2 times"},
		{"ids=1&ids=2&ids=3&ids=4", "invalid parameter ids: must be given at most 3 times"},
		{"ids=1&ids=x", "invalid parameter ids: must be an integer"},
		{"ids=1&ids=-1", "invalid parameter ids: must be at least 0"},
		{"flags=true&flags=false&flags=true", ""},
		{"flags=true&flags=yes", "invalid parameter flags: must be true or false"},
		{"dids=did:plc:abc&dids=did:web:example.com", ""},
		{"dids=did:plc:abc&dids=alice.test", "invalid parameter dids: must be a valid did"},
	})
}

func TestParamsFormats(t *testing.T) {
	for _, tc := range []struct{ format, good, bad string }{
		{"did", "did:plc:z72i7hdynmk6r22z27h6tvur", "plc:abc"},
		{"handle", "alice.bsky.social", "alice"},
		{"at-identifier", "alice.bsky.social", "did:"},
		{"at-identifier", "did:plc:z72i7hdynmk6r22z27h6tvur", "not an id"},
		{"at-uri", "at://did:plc:z72i7hdynmk6r22z27h6tvur/app.bsky.feed.post/3k2a", "https://example.com/x"},
		{"nsid", "app.bsky.feed.post", "app"},
		{"cid", "bafyreidfayvfuwqa7qlnopdjiqrxzs6blmoeu4rujcjtnci5beludirz2a", "not-a-cid!"},
		{"datetime", "2024-01-02T03:04:05.678Z", "2024-01-02"},
		{"datetime", "2024-01-02T03:04:05+01:00", "2024-01-02T03:04:05"}, // strict: a time zone is needed
		{"uri", "https://example.com/a?b=c", "no scheme"},
		{"tid", "3jzfcijpj2z2a", "3jzfcijpj2z2"},
		{"record-key", "self", ".."},
		{"language", "en-US", "123-not"},
	} {
		t.Run(tc.format, func(t *testing.T) {
			p := paramsOf(t, `{"v":{"type":"string","format":"`+tc.format+`"}}`, "")
			checkParams(t, p, []paramCase{
				{"v=" + url.QueryEscape(tc.good), ""},
				{"v=" + url.QueryEscape(tc.bad), "invalid parameter v: must be a valid " + tc.format},
			})
		})
	}
}

// TestParamsNone: a method without parameters, or with an empty set,
// compiles to nil, which checks nothing; a record lexicon has none.
func TestParamsNone(t *testing.T) {
	reg := lexicon.NewRegistry(storagetest.SQLite(t))
	for _, doc := range []string{
		`{"lexicon":1,"id":"app.test.a","defs":{"main":{"type":"query"}}}`,
		`{"lexicon":1,"id":"app.test.b","defs":{"main":{"type":"procedure","parameters":{"type":"params","properties":{}}}}}`,
		recordDoc,
	} {
		l, _, err := reg.Put(context.Background(), lexicon.Upload{Document: json.RawMessage(doc)})
		if err != nil {
			t.Fatal(err)
		}
		if l.Params != nil {
			t.Errorf("%s: compiled parameters %+v", l.ID, l.Params)
		}
		if err := l.Params.Validate(url.Values{"x": {"1"}}); err != nil {
			t.Errorf("%s: nil parameters refused: %v", l.ID, err)
		}
	}
}

// TestParamsLoaded: parameters are compiled for lexicons read back from
// the store (Load), not only for those just uploaded.
func TestParamsLoaded(t *testing.T) {
	store := storagetest.SQLite(t)
	doc := `{"lexicon":1,"id":"app.test.proc","defs":{"main":{"type":"procedure","parameters":{"type":"params","required":["n"],"properties":{"n":{"type":"integer"}}}}}}`
	if _, _, err := lexicon.NewRegistry(store).Put(context.Background(), lexicon.Upload{Document: json.RawMessage(doc)}); err != nil {
		t.Fatal(err)
	}
	reg := lexicon.NewRegistry(store)
	if err := reg.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	l, _ := reg.Snapshot().Get("app.test.proc")
	if err := l.Params.Validate(url.Values{}); err == nil || !strings.Contains(err.Error(), "n") {
		t.Fatalf("loaded lexicon's parameters: %v", err)
	}
}

// BenchmarkParamsValidate is the cost a validated call adds: a typical
// query's parameters (an actor, a limit, a cursor, two tags).
func BenchmarkParamsValidate(b *testing.B) {
	p := paramsOf(b, `{
		"actor":{"type":"string","format":"at-identifier"},
		"limit":{"type":"integer","minimum":1,"maximum":100},
		"cursor":{"type":"string"},
		"tags":{"type":"array","items":{"type":"string","maxLength":64},"maxLength":10},
		"reverse":{"type":"boolean"}
	}`, `["actor"]`)
	q := url.Values{"actor": {"did:plc:z72i7hdynmk6r22z27h6tvur"}, "limit": {"50"}, "cursor": {"abc"},
		"tags": {"go", "lua"}, "reverse": {"true"}, "client_key": {"hvc_x"}}
	b.ReportAllocs()
	for b.Loop() {
		if err := p.Validate(q); err != nil {
			b.Fatal(err)
		}
	}
}
