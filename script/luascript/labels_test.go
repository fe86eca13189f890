package luascript

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/script"
	"github.com/lexview/lexview/storage"
)

// labelHost serves labels and records the queries it is asked.
type labelHost struct {
	nopHost
	queries []storage.RecordQuery
	asked   [][]string
}

func (h *labelHost) Labels(_ context.Context, subjects []string) (map[string][]storage.Label, error) {
	h.asked = append(h.asked, subjects)
	cts := time.Date(2026, 11, 25, 1, 2, 3, 4e6, time.UTC)
	all := map[string][]storage.Label{
		"at://did:plc:a/app.x.post/1": {
			{Src: "did:plc:mod", URI: "at://did:plc:a/app.x.post/1", Val: "spam", Cts: cts},
			{Src: "did:plc:mod", URI: "at://did:plc:a/app.x.post/1", CID: "bafyc", Val: "nsfw", Cts: cts, Exp: cts.Add(time.Hour)},
		},
		"did:plc:a": {{Src: "did:plc:mod", URI: "did:plc:a", Val: "!hide", Cts: cts}},
	}
	out := map[string][]storage.Label{}
	for _, s := range subjects {
		if l, ok := all[s]; ok {
			out[s] = l
		}
	}
	return out, nil
}

func (h *labelHost) QueryRecords(_ context.Context, q storage.RecordQuery) (storage.RecordQueryPage, error) {
	h.queries = append(h.queries, q)
	return storage.RecordQueryPage{}, nil
}

func runWith(t *testing.T, h script.Host, inv script.Invocation, src string) (string, error) {
	t.Helper()
	p, err := New(Options{}).Compile("test", src)
	if err != nil {
		t.Fatal(err)
	}
	inv.Host = h
	if inv.Kind == "" {
		inv.Kind = script.KindQuery
	}
	out, err := p.Run(context.Background(), &inv)
	return string(out), err
}

func TestDBLabels(t *testing.T) {
	h := &labelHost{}
	out, err := runWith(t, h, script.Invocation{}, `function handle()
		return {one = db.labels("at://did:plc:a/app.x.post/1"), none = db.labels("did:plc:b"),
		        many = db.labels({"did:plc:a", "did:plc:b"})}
	end`)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"many":{"did:plc:a":[{"cts":"2026-11-25T01:02:03.004Z","src":"did:plc:mod","uri":"did:plc:a","val":"!hide"}]},` +
		`"none":[],` +
		`"one":[{"cts":"2026-11-25T01:02:03.004Z","src":"did:plc:mod","uri":"at://did:plc:a/app.x.post/1","val":"spam"},` +
		`{"cid":"bafyc","cts":"2026-11-25T01:02:03.004Z","exp":"2026-11-25T02:02:03.004Z","src":"did:plc:mod","uri":"at://did:plc:a/app.x.post/1","val":"nsfw"}]}`
	if out != want {
		t.Fatalf("got  %s\nwant %s", out, want)
	}
	for _, bad := range []string{`db.labels(1)`, `db.labels({1})`} {
		if _, err := runWith(t, h, script.Invocation{}, "function handle() "+bad+" end"); err == nil || !strings.Contains(err.Error(), "db.labels") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

func TestQueryLabelConditions(t *testing.T) {
	for _, tc := range []struct {
		opt  string
		want []storage.LabelCondition
	}{
		{`{has = "spam"}`, []storage.LabelCondition{{Values: []string{"spam"}}}},
		{`{none = {"spam", "nsfw"}, from = "did:plc:mod"}`, []storage.LabelCondition{{Values: []string{"spam", "nsfw"}, Sources: []string{"did:plc:mod"}, Absent: true}}},
		{`{{has = "*", account = true}, {none = "!hide", from = {"did:plc:a", "did:plc:b"}}}`, []storage.LabelCondition{
			{Account: true}, {Values: []string{"!hide"}, Sources: []string{"did:plc:a", "did:plc:b"}, Absent: true}}},
	} {
		h := &labelHost{}
		if _, err := runWith(t, h, script.Invocation{}, `function handle() return db.query{collection = "app.x.post", labels = `+tc.opt+`} end`); err != nil {
			t.Fatalf("%s: %v", tc.opt, err)
		}
		if len(h.queries) != 1 || !reflect.DeepEqual(h.queries[0].Labels, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.opt, h.queries, tc.want)
		}
	}
	for _, tc := range []struct{ opt, msg string }{
		{`"spam"`, "want a condition table"},
		{`{}`, "want a condition table"},
		{`{has = "a", none = "b"}`, "cannot be combined"},
		{`{{from = "did:plc:a"}}`, "condition 1: has or none is required"},
		{`{has = {}}`, "empty list"},
		{`{has = {1}}`, "is not a string"},
		{`{has = "a", account = "yes"}`, "account must be a boolean"},
		{`{has = "a", colour = "red"}`, `unknown key "colour"`},
		{`{{has="a"},{has="a"},{has="a"},{has="a"},{has="a"},{has="a"},{has="a"},{has="a"},{has="a"}}`, "at most 8 conditions"},
	} {
		_, err := runWith(t, &labelHost{}, script.Invocation{}, `function handle() return db.query{collection = "app.x.post", labels = `+tc.opt+`} end`)
		if err == nil || !strings.Contains(err.Error(), "db.query: labels: ") || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want %q", tc.opt, err, tc.msg)
		}
	}
}

func TestLabelGlobal(t *testing.T) {
	ev := script.LabelEvent{Src: "did:plc:mod", URI: "at://did:plc:a/app.x.post/1", Val: "spam", Neg: true, Cts: "2026-11-25T01:02:03.004Z"}
	out, err := runWith(t, &labelHost{}, script.Invocation{Kind: script.KindLabel, Method: "spam", Label: &ev},
		`function handle() return {label = label, method = method} end`)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"label":{"cts":"2026-11-25T01:02:03.004Z","neg":true,"src":"did:plc:mod","uri":"at://did:plc:a/app.x.post/1","val":"spam"},"method":"spam"}`
	if out != want {
		t.Fatalf("got  %s\nwant %s", out, want)
	}
}
