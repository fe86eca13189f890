package xrpcmethods_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/lexview/lexview/appview/internal/core/caller"
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
