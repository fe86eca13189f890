package xrpcmethods_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/appview/internal/core/caller"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/service/reads"
	"github.com/lexview/lexview/appview/internal/service/writepath"
	"github.com/lexview/lexview/appview/internal/service/xrpcmethods"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// writer records the procedure writes it is handed.
type writer struct {
	user       *caller.User
	collection string
	body       string
}

func (w *writer) Write(_ context.Context, user *caller.User, collection string, body []byte) (writepath.Answer, error) {
	w.user, w.collection, w.body = user, collection, string(body)
	return writepath.Answer{Status: 200, Body: []byte(`{"uri":"at://x"}`), NotIndexed: "later"}, nil
}

// labels knows one labeler and one label on every subject.
type labels struct{}

func (labels) ListLabelers(context.Context) ([]storage.Labeler, error) {
	return []storage.Labeler{{DID: "did:plc:labeler"}}, nil
}

func (labels) LabelsFor(_ context.Context, subjects []string, _ time.Time) (map[string][]storage.Label, error) {
	out := map[string][]storage.Label{}
	for _, s := range subjects {
		out[s] = []storage.Label{{Src: "did:plc:labeler", URI: s, Val: "spam", Cts: time.Unix(0, 0)}}
	}
	return out, nil
}

// TestDispatcher calls methods as plain values, as scripts do: the
// default query, the default procedure with the caller, the refusal of
// an anonymous procedure, labels on request, and a record lexicon that
// is no method.
func TestDispatcher(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		ctx := context.Background()
		store := open(t)
		reg := lexicon.NewRegistry(store)
		for _, up := range []lexicon.Upload{
			{Document: json.RawMessage(`{"lexicon":1,"id":"app.test.list","defs":{"main":{"type":"query"}}}`), TargetCollection: "app.test.post"},
			{Document: json.RawMessage(`{"lexicon":1,"id":"app.test.create","defs":{"main":{"type":"procedure"}}}`), TargetCollection: "app.test.post"},
			{Document: json.RawMessage(`{"lexicon":1,"id":"app.test.post","defs":{"main":{"type":"record","key":"tid","record":{"type":"object"}}}}`)},
		} {
			if _, _, err := reg.Put(ctx, up); err != nil {
				t.Fatal(err)
			}
		}
		rec := storagetest.Rec("did:plc:alice", "app.test.post", "3kaaa", time.Unix(1000, 0), map[string]any{"text": "hi"})
		if err := store.ApplyBatch(ctx, storage.Batch{Ops: []storage.RecordOp{{Record: rec}}}); err != nil {
			t.Fatal(err)
		}
		w := &writer{}
		d := xrpcmethods.New(xrpcmethods.Options{Reads: reads.New(store, nil), Writes: w, Labels: labels{}})
		lex := func(nsid string) *lexicon.Lexicon {
			l, ok := reg.Snapshot().Get(nsid)
			if !ok {
				t.Fatalf("no lexicon %s", nsid)
			}
			return l
		}

		ans, err := d.Call(ctx, xrpcmethods.Call{Lexicon: lex("app.test.list"), Params: url.Values{}}, nil)
		var page struct {
			Records []map[string]any `json:"records"`
			Labels  []any            `json:"labels"`
		}
		if err != nil || ans.Status != 200 || json.Unmarshal(ans.Body, &page) != nil || len(page.Records) != 1 ||
			page.Records[0]["uri"] != rec.URI || page.Records[0]["text"] != "hi" || page.Labels != nil || ans.Labeled {
			t.Fatalf("list: %+v %s %v", ans, ans.Body, err)
		}
		ans, err = d.Call(ctx, xrpcmethods.Call{Lexicon: lex("app.test.list"), Params: url.Values{},
			AcceptLabelers: []string{"did:plc:labeler;redact, did:plc:unknown"}}, []byte("reused"))
		if err != nil || !ans.Labeled || len(ans.ContentLabelers) != 1 || json.Unmarshal(ans.Body[len("reused"):], &page) != nil ||
			len(page.Labels) != 2 || string(ans.Body[:len("reused")]) != "reused" {
			t.Fatalf("labeled list appended to dst: %+v %s %v", ans, ans.Body, err)
		}

		in := []byte(`{"text":"new"}`)
		_, err = d.Call(ctx, xrpcmethods.Call{Lexicon: lex("app.test.create"), Input: in}, nil)
		if !errors.Is(err, xrpcmethods.ErrAuthRequired) || w.user != nil {
			t.Fatalf("anonymous procedure: %v, writer called with %+v", err, w.user)
		}
		user := &caller.User{DID: "did:plc:alice", Via: caller.ViaDPoP, SessionID: "s1"}
		ans, err = d.Call(ctx, xrpcmethods.Call{Lexicon: lex("app.test.create"), Input: in, User: user}, nil)
		if err != nil || ans.Status != 200 || string(ans.Body) != `{"uri":"at://x"}` || ans.NotIndexed != "later" ||
			w.user != user || w.collection != "app.test.post" || w.body != string(in) {
			t.Fatalf("procedure: %+v %v; writer got %+v %q %q", ans, err, w.user, w.collection, w.body)
		}

		if _, err := d.Call(ctx, xrpcmethods.Call{Lexicon: lex("app.test.post"), User: user}, nil); err == nil {
			t.Fatal("a record lexicon answered as a method")
		}
	})
}

// paramsLexicon declares parameters of the default query's own names,
// with constraints the interface's answers ignore, and one of its own.
const paramsLexicon = `{"lexicon":1,"id":"app.test.find","defs":{"main":{"type":"%s","parameters":{"type":"params",
	"required":["tag","uri"],"properties":{
	"tag":{"type":"string","maxLength":3},
	"limit":{"type":"integer","maximum":5},
	"uri":{"type":"string","format":"at-uri"},
	"did":{"type":"string","format":"did"},
	"cursor":{"type":"integer"}}}}}}`

// TestDispatcherParams: declared parameters are checked before a method
// runs (a refused procedure writes nothing), undeclared ones pass, and
// the default query's own parameters keep the interface's answers,
// whatever the lexicon declares of them.
func TestDispatcherParams(t *testing.T) {
	ctx := context.Background()
	store := storagetest.SQLite(t)
	reg := lexicon.NewRegistry(store)
	for kind, nsid := range map[string]string{"query": "app.test.find", "procedure": "app.test.put"} {
		doc := strings.Replace(fmt.Sprintf(paramsLexicon, kind), "app.test.find", nsid, 1)
		if _, _, err := reg.Put(ctx, lexicon.Upload{Document: json.RawMessage(doc), TargetCollection: "app.test.post"}); err != nil {
			t.Fatal(err)
		}
	}
	w := &writer{}
	d := xrpcmethods.New(xrpcmethods.Options{Reads: reads.New(store, nil), Writes: w})
	call := func(nsid, query string) (xrpcmethods.Answer, error) {
		t.Helper()
		l, _ := reg.Snapshot().Get(nsid)
		q, err := url.ParseQuery(query)
		if err != nil {
			t.Fatal(err)
		}
		return d.Call(ctx, xrpcmethods.Call{Lexicon: l, Params: q, User: &caller.User{DID: "did:plc:alice"}, Input: []byte(`{}`)}, nil)
	}
	for _, tc := range []struct{ query, err string }{
		{"tag=a", ""},
		{"tag=a&extra=anything", ""},
		{"", "missing required parameter tag"},
		{"tag=abcd", "invalid parameter tag: must be at most 3 bytes long"},
		// The default query's own parameters: the interface's answers.
		{"tag=a&limit=50", ""},
		{"tag=a&limit=500", "limit must be an integer between 1 and 100"},
		{"tag=a&cursor=abc", "invalid cursor"},
		{"tag=a&did=nope", "invalid did"},
		{"tag=a&uri=nope", "invalid AT URI"},
	} {
		_, err := call("app.test.find", tc.query)
		if got := errText(err); got != tc.err {
			t.Errorf("query %q: error %q, want %q", tc.query, got, tc.err)
		}
		if err != nil && fail.KindOf(err) != fail.Invalid {
			t.Errorf("query %q: kind %v", tc.query, fail.KindOf(err))
		}
	}
	// A procedure checks every declared parameter, before writing.
	for _, tc := range []struct{ query, err string }{
		{"tag=a&uri=nope", "invalid parameter uri: must be a valid at-uri"},
		{"tag=a", "missing required parameter uri"},
		{"tag=a&uri=at://did:plc:alice/app.test.post/3kaaa&limit=50", "invalid parameter limit: must be at most 5"},
	} {
		if _, err := call("app.test.put", tc.query); errText(err) != tc.err || w.user != nil {
			t.Errorf("procedure %q: error %v, want %q; writer called with %+v", tc.query, err, tc.err, w.user)
		}
	}
	if ans, err := call("app.test.put", "tag=a&uri=at://did:plc:alice/app.test.post/3kaaa&limit=5"); err != nil || ans.Status != 200 || w.user == nil {
		t.Fatalf("valid procedure call: %+v %v", ans, err)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return fail.Message(err)
}

// BenchmarkDispatcherParams is what checking parameters adds to a call:
// a default query without a target collection (the cheapest answer),
// without declared parameters and with five.
func BenchmarkDispatcherParams(b *testing.B) {
	ctx := context.Background()
	reg := lexicon.NewRegistry(storagetest.SQLite(b))
	for _, doc := range []string{
		`{"lexicon":1,"id":"app.test.plain","defs":{"main":{"type":"query"}}}`,
		`{"lexicon":1,"id":"app.test.checked","defs":{"main":{"type":"query","parameters":{"type":"params","required":["actor"],"properties":{
			"actor":{"type":"string","format":"at-identifier"},"n":{"type":"integer","minimum":1,"maximum":100},
			"q":{"type":"string","maxGraphemes":64},"tags":{"type":"array","items":{"type":"string"},"maxLength":10},
			"reverse":{"type":"boolean"}}}}}}`,
	} {
		if _, _, err := reg.Put(ctx, lexicon.Upload{Document: json.RawMessage(doc)}); err != nil {
			b.Fatal(err)
		}
	}
	d := xrpcmethods.New(xrpcmethods.Options{Reads: reads.New(nil, nil)})
	q := url.Values{"actor": {"did:plc:z72i7hdynmk6r22z27h6tvur"}, "n": {"20"}, "q": {"hello world"}, "tags": {"a", "b"}, "reverse": {"true"}}
	for _, nsid := range []string{"app.test.plain", "app.test.checked"} {
		b.Run(nsid, func(b *testing.B) {
			l, _ := reg.Snapshot().Get(nsid)
			c := xrpcmethods.Call{Lexicon: l, Params: q}
			buf := make([]byte, 0, 64)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := d.Call(ctx, c, buf[:0]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
