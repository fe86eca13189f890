package luascript

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/lexview/lexview/script"
)

// linkedHost records linked writes and answers them like a PDS would.
type linkedHost struct {
	nopHost
	writes []script.LinkedWrite
	refuse error
}

func (h *linkedHost) LinkedRepos(context.Context) ([]script.LinkedRepo, error) {
	return []script.LinkedRepo{
		{DID: "did:plc:news", Handle: "news.example.com", Scopes: "atproto repo:com.example.post", Status: "active"},
		{DID: "did:plc:open", Scopes: "atproto transition:generic", Status: "needs_reauth"},
	}, nil
}

func (h *linkedHost) WriteLinkedRecord(_ context.Context, inv *script.Invocation, w script.LinkedWrite) (script.WriteResult, error) {
	if h.refuse != nil {
		return script.WriteResult{}, h.refuse
	}
	h.writes = append(h.writes, w)
	rkey := w.RKey
	if rkey == "" {
		rkey = "3kgenerated"
	}
	return script.WriteResult{URI: "at://" + w.Repo + "/" + w.Collection + "/" + rkey, CID: "bafycid"}, nil
}

func runLinked(t *testing.T, h *linkedHost, kind, src string) (string, error) {
	t.Helper()
	p, err := New(Options{}).Compile("test", src)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Run(context.Background(), &script.Invocation{Host: h, Kind: kind, Method: "com.example.publish",
		Caller: &script.Caller{DID: "did:plc:caller"}})
	return string(out), err
}

func TestLinkedWrites(t *testing.T) {
	h := &linkedHost{}
	out, err := runLinked(t, h, script.KindProcedure, `function handle()
		local made = linked.create("did:plc:news", "com.example.post", {text = "hello"})
		local named = linked.create("did:plc:news", "com.example.post", {["$type"] = "com.example.post", text = "named"}, "self")
		local put = linked.put("did:plc:news", "com.example.post", "self", {text = "edited"})
		local gone = linked.delete("did:plc:news", "com.example.post", "old")
		return {made = made, named = named.uri, put = put.uri, gone = gone}
	end`)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"gone":true,"made":{"cid":"bafycid","uri":"at://did:plc:news/com.example.post/3kgenerated"},` +
		`"named":"at://did:plc:news/com.example.post/self","put":"at://did:plc:news/com.example.post/self"}`
	if out != want {
		t.Fatalf("got %s\nwant %s", out, want)
	}
	if len(h.writes) != 4 {
		t.Fatalf("%d writes, want 4", len(h.writes))
	}
	type shape struct {
		rkey           string
		update, delete bool
		record         string
	}
	wantWrites := []shape{
		{"", false, false, `{"$type":"com.example.post","text":"hello"}`},
		{"self", false, false, `{"$type":"com.example.post","text":"named"}`},
		{"self", true, false, `{"$type":"com.example.post","text":"edited"}`},
		{"old", false, true, ``},
	}
	for i, w := range h.writes {
		got := shape{w.RKey, w.Update, w.Delete, string(w.Record)}
		if w.Repo != "did:plc:news" || w.Collection != "com.example.post" || got != wantWrites[i] {
			t.Errorf("write %d = %+v %+v; want %+v", i, w.Repo, got, wantWrites[i])
		}
		if w.Record != nil && !json.Valid(w.Record) {
			t.Errorf("write %d record is not JSON: %s", i, w.Record)
		}
	}
}

func TestLinkedList(t *testing.T) {
	out, err := runLinked(t, &linkedHost{}, script.KindQuery, `function handle() return linked.list() end`)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"did":"did:plc:news","handle":"news.example.com","scopes":"atproto repo:com.example.post","status":"active"},` +
		`{"did":"did:plc:open","scopes":"atproto transition:generic","status":"needs_reauth"}]`
	if out != want {
		t.Fatalf("got %s\nwant %s", out, want)
	}
}

func TestLinkedRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, kind, src, msg string
		refuse               error
	}{
		{"query", script.KindQuery, `linked.create("did:plc:news", "com.example.post", {})`, "only from procedure scripts", nil},
		{"record event", script.KindCreate, `linked.delete("did:plc:news", "com.example.post", "a")`, "only from procedure scripts", nil},
		{"not a DID", script.KindProcedure, `linked.create("news.example.com", "com.example.post", {})`, `repo "news.example.com" is not a DID`, nil},
		{"bad collection", script.KindProcedure, `linked.create("did:plc:news", "post", {})`, `invalid collection "post"`, nil},
		{"other $type", script.KindProcedure, `linked.put("did:plc:news", "com.example.post", "a", {["$type"] = "com.example.like"})`, "is not the collection", nil},
		{"no record", script.KindProcedure, `linked.create("did:plc:news", "com.example.post")`, "table expected", nil},
		{"host refusal", script.KindProcedure, `linked.create("did:plc:news", "com.example.post", {})`, "linked.create: the grant's scopes do not allow create",
			errors.New("the grant's scopes do not allow create in com.example.post")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &linkedHost{refuse: tc.refuse}
			_, err := runLinked(t, h, tc.kind, "function handle() "+tc.src+" end")
			if kindOf(err) != script.ErrRuntime || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %v; want a runtime error containing %q", err, tc.msg)
			}
			if len(h.writes) != 0 {
				t.Fatalf("a refused write reached the host: %+v", h.writes)
			}
		})
	}
}
