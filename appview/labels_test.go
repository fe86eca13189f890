package appview_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// labelFixture is three notes by two authors, labelled by two labelers:
//
//	note 0 (alice): mod "spam"; other "spam"
//	note 1 (alice): mod "nsfw" expired; mod "spam" negated
//	note 2 (bob):   none; bob's account: mod "!hide"
type labelFixture struct {
	env   *testenv.Env
	key   string
	notes []string
	alice string
	bob   string
}

const (
	modLabeler   = "did:plc:modlabeler"
	otherLabeler = "did:plc:otherlabeler"
)

func newLabelFixture(t *testing.T, store storage.Store) *labelFixture {
	t.Helper()
	ctx := context.Background()
	env := testenv.New(t, store, appview.Config{})
	putNoteLexicons(t, env)
	// A query whose output declares labels gets them without asking.
	if _, err := env.App.Lexicons().Put(ctx, lexicon.Upload{TargetCollection: "app.test.note", Document: json.RawMessage(
		`{"lexicon":1,"id":"app.test.listLabelled","defs":{"main":{"type":"query","output":{"encoding":"application/json",` +
			`"schema":{"type":"object","properties":{"records":{"type":"array","items":{"type":"unknown"}},"labels":{"type":"array","items":{"type":"unknown"}}}}}}}}`)}); err != nil {
		t.Fatal(err)
	}
	client, _ := env.NewClient(t, apiclients.NewClient{})
	f := &labelFixture{env: env, key: client.Key, alice: "did:plc:alicelabels", bob: "did:plc:boblabels"}
	base := time.Now().Add(-time.Hour).UTC().Truncate(time.Millisecond)
	var ops []storage.RecordOp
	for i, did := range []string{f.alice, f.alice, f.bob} {
		rec := storagetest.Rec(did, "app.test.note", fmt.Sprintf("n%d", i), base.Add(time.Duration(i)*time.Second), map[string]any{"$type": "app.test.note", "text": fmt.Sprint(i)})
		ops = append(ops, storage.RecordOp{Record: rec})
		f.notes = append(f.notes, rec.URI)
	}
	if err := store.ApplyBatch(ctx, storage.Batch{Ops: ops}); err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{modLabeler, otherLabeler} {
		if _, err := store.PutLabeler(ctx, l, base); err != nil {
			t.Fatal(err)
		}
	}
	lbl := func(src, uri, val string, mod func(*storage.Label)) storage.Label {
		l := storage.Label{Src: src, URI: uri, Val: val, Cts: base, Ver: 1, Sig: []byte("sig")}
		if mod != nil {
			mod(&l)
		}
		return l
	}
	apply := func(src string, cursor int64, labels ...storage.Label) {
		t.Helper()
		if err := store.ApplyLabels(ctx, storage.LabelBatch{Src: src, Labels: labels, Cursor: cursor}); err != nil {
			t.Fatal(err)
		}
	}
	apply(modLabeler, 1,
		lbl(modLabeler, f.notes[0], "spam", nil),
		lbl(modLabeler, f.notes[1], "nsfw", func(l *storage.Label) { l.Exp = time.Now().Add(-time.Minute) }),
		lbl(modLabeler, f.notes[1], "spam", nil),
		lbl(modLabeler, f.bob, "!hide", nil))
	apply(modLabeler, 2, lbl(modLabeler, f.notes[1], "spam", func(l *storage.Label) { l.Neg, l.Cts = true, base.Add(time.Second) }))
	apply(otherLabeler, 1, lbl(otherLabeler, f.notes[0], "spam", nil))
	return f
}

func (f *labelFixture) get(t *testing.T, path string, headers ...string) testenv.Response {
	t.Helper()
	r := f.env.Do(t, "GET", path, nil, append([]string{"X-Client-Key", f.key}, headers...)...)
	if r.Status != 200 {
		t.Fatalf("%s: %d %s", path, r.Status, r.Raw)
	}
	return r
}

// labelsOf lists "src uri val" of the labels of a default answer.
func labelsOf(t *testing.T, r testenv.Response) []string {
	t.Helper()
	var body struct {
		Labels *[]struct {
			Ver                int
			Src, URI, Val, Cts string
		} `json:"labels"`
	}
	r.JSON(t, &body)
	if body.Labels == nil {
		return nil
	}
	out := []string{}
	for _, l := range *body.Labels {
		if l.Ver != 1 || !strings.HasSuffix(l.Cts, "Z") {
			t.Fatalf("label shape: %s", r.Raw)
		}
		out = append(out, l.Src+" "+l.URI+" "+l.Val)
	}
	slices.Sort(out)
	return out
}

func TestLabelsInDefaultAnswers(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		f := newLabelFixture(t, open(t))

		// Without asking, answers are unchanged: no labels key, no header.
		r := f.get(t, "/xrpc/app.test.listNotes")
		if strings.Contains(string(r.Raw), `"labels"`) || r.Header.Get("Atproto-Content-Labelers") != "" {
			t.Fatalf("unasked labels: %s", r.Raw)
		}

		// Atproto-Accept-Labelers names the labelers; unknown ones are
		// ignored, parameters (;redact) too.
		r = f.get(t, "/xrpc/app.test.listNotes", "Atproto-Accept-Labelers", modLabeler+";redact, did:plc:unknown")
		want := []string{modLabeler + " " + f.notes[0] + " spam", modLabeler + " " + f.bob + " !hide"}
		if got := labelsOf(t, r); !slices.Equal(got, want) {
			t.Fatalf("labels %v, want %v", got, want)
		}
		if got := r.Header.Get("Atproto-Content-Labelers"); got != modLabeler {
			t.Fatalf("Atproto-Content-Labelers %q", got)
		}
		r = f.get(t, "/xrpc/app.test.listNotes?uri="+url.QueryEscape(f.notes[0]), "Atproto-Accept-Labelers", otherLabeler)
		if got := labelsOf(t, r); !slices.Equal(got, []string{otherLabeler + " " + f.notes[0] + " spam"}) {
			t.Fatalf("get labels %v", got)
		}
		r = f.get(t, "/xrpc/app.test.listNotes", "Atproto-Accept-Labelers", "did:plc:unknown")
		if got := labelsOf(t, r); got == nil || len(got) != 0 || r.Header.Get("Atproto-Content-Labelers") != "" {
			t.Fatalf("only unknown labelers: %v %q", got, r.Header.Get("Atproto-Content-Labelers"))
		}

		// A query whose output declares labels carries every labeler's.
		r = f.get(t, "/xrpc/app.test.listLabelled")
		want = []string{modLabeler + " " + f.notes[0] + " spam", modLabeler + " " + f.bob + " !hide", otherLabeler + " " + f.notes[0] + " spam"}
		if got := labelsOf(t, r); !slices.Equal(got, want) {
			t.Fatalf("declared labels %v, want %v", got, want)
		}

		// The admin records view shows a record's labels, then its author's.
		admin := f.env.Bootstrap(t)
		var page struct {
			Records []struct {
				URI    string `json:"uri"`
				Labels []struct {
					Src, URI, Val string
				} `json:"labels"`
			} `json:"records"`
		}
		admin.Do(t, "GET", "/admin/records?collection=app.test.note", nil).JSON(t, &page)
		got := map[string][]string{}
		for _, rec := range page.Records {
			for _, l := range rec.Labels {
				got[rec.URI] = append(got[rec.URI], l.Src+" "+l.URI+" "+l.Val)
			}
		}
		if len(got) != 2 || len(got[f.notes[0]]) != 2 || len(got[f.notes[1]]) != 0 ||
			!slices.Equal(got[f.notes[2]], []string{modLabeler + " " + f.bob + " !hide"}) {
			t.Fatalf("admin record labels: %v", got)
		}
	})
}

func TestLabelsInScripts(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		f := newLabelFixture(t, open(t))
		admin := f.env.Bootstrap(t)
		src := `function handle()
  local q = json.decode(params.q)
  local page = db.query{collection = "app.test.note", labels = q, sortDirection = "asc"}
  local uris = json.array({})
  for i, r in ipairs(page.records) do uris[i] = r.uri:match("[^/]+$") end
  return {rkeys = uris, n = db.count{collection = "app.test.note", labels = q}}
end`
		if r := admin.Do(t, "POST", "/admin/scripts", map[string]any{"trigger": "xrpc.query:app.test.listNotes", "source": src}); r.Status != 201 {
			t.Fatalf("script: %d %s", r.Status, r.Raw)
		}
		for _, tc := range []struct {
			cond string
			want []string
		}{
			{`{"has":"spam"}`, []string{"n0"}},
			{`{"has":"spam","from":"` + otherLabeler + `"}`, []string{"n0"}},
			{`{"has":"nsfw"}`, []string{}},                 // expired
			{`{"none":"spam"}`, []string{"n1", "n2"}},      // n1's spam was negated
			{`{"none":"*"}`, []string{"n1", "n2"}},         // no label applies to them
			{`{"has":"*","account":true}`, []string{"n2"}}, // bob's account
			{`{"none":"!hide","account":true}`, []string{"n0", "n1"}},
			{`[{"none":"spam","from":"` + modLabeler + `"},{"none":"!hide","account":true}]`, []string{"n1"}},
			{`{"has":["nsfw","spam"],"from":["did:plc:nobody","` + modLabeler + `"]}`, []string{"n0"}},
		} {
			r := f.get(t, "/xrpc/app.test.listNotes?q="+url.QueryEscape(tc.cond))
			var out struct {
				RKeys []string `json:"rkeys"`
				N     int      `json:"n"`
			}
			r.JSON(t, &out)
			if !slices.Equal(out.RKeys, tc.want) || out.N != len(tc.want) {
				t.Errorf("%s: %s, want %v", tc.cond, r.Raw, tc.want)
			}
		}

		src = `function handle()
  return {note = db.labels(params.uri), many = db.labels({params.uri, params.did})}
end`
		if r := admin.Do(t, "POST", "/admin/scripts", map[string]any{"trigger": "xrpc.query:app.test.listNotes", "source": src}); r.Status != 200 && r.Status != 201 {
			t.Fatalf("script: %d %s", r.Status, r.Raw)
		}
		r := f.get(t, "/xrpc/app.test.listNotes?uri="+url.QueryEscape(f.notes[0])+"&did="+f.bob)
		var out struct {
			Note []struct{ Src, Val string }            `json:"note"`
			Many map[string][]struct{ Src, Val string } `json:"many"`
		}
		r.JSON(t, &out)
		if len(out.Note) != 2 || out.Note[0].Src != modLabeler || out.Note[1].Src != otherLabeler ||
			len(out.Many) != 2 || len(out.Many[f.bob]) != 1 || out.Many[f.bob][0].Val != "!hide" {
			t.Fatalf("db.labels: %s", r.Raw)
		}
	})
}
