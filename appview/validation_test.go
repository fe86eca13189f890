package appview_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"testing"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// validationReport is the body of GET /admin/stats/validation.
type validationReport struct {
	Mode         string            `json:"mode"`
	Collections  map[string]string `json:"collections"`
	TotalInvalid int64             `json:"total_invalid"`
	Invalid      []struct {
		Collection, Reason string
		Count              int64
	} `json:"invalid"`
	Passes []struct {
		Collection                string
		Revision                  int
		Checked, Flagged, Cleared int64
		Done                      bool
	} `json:"passes"`
}

func (e *scriptEnv) validationReport(t *testing.T) validationReport {
	t.Helper()
	r := e.admin.Do(t, "GET", "/admin/stats/validation", nil)
	if r.Status != 200 {
		t.Fatalf("validation report: %d %s", r.Status, r.Raw)
	}
	var rep validationReport
	r.JSON(t, &rep)
	return rep
}

func (e *scriptEnv) putSetting(t *testing.T, key, value string, want int) {
	t.Helper()
	if r := e.admin.Do(t, "PUT", "/admin/settings/"+key, map[string]any{"value": value}); r.Status != want {
		t.Fatalf("PUT %s=%s: %d %s, want %d", key, value, r.Status, r.Raw, want)
	}
}

// TestValidationModes: by default (hide) a record its lexicon refuses is
// stored with its error, counted in GET /admin/stats/validation, and left
// out of the default query and of scripts' db.query, db.count and db.get
// unless they ask (includeInvalid); with the collection's mode flag it is
// served; with reject a new invalid record is refused and a stored one
// not served. Bad values of the settings are refused.
func TestValidationModes(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		e := newScriptEnv(t, open(t))
		ctx := context.Background()
		if _, err := e.App.Lexicons().Put(ctx, listNotesLexicon); err != nil {
			t.Fatal(err)
		}
		e.setScript(t, "xrpc.query:app.test.count", `function handle()
			return {hidden = db.count{}, all = db.count{includeInvalid = true},
				listed = #db.query{}.records, every = #db.query{includeInvalid = true}.records,
				got = db.get(params.uri) ~= nil, forced = db.get(params.uri, {includeInvalid = true}) ~= nil,
				loaded = Record.load_all({params.uri})[1] ~= nil,
				loadedForced = Record.load_all({params.uri}, {includeInvalid = true})[1] ~= nil}
		end`)
		good := noteChange(e.did, "3kgood", "fine")
		bad := noteChange(e.did, "3kbad", "")
		bad.Record = json.RawMessage(`{"$type":"app.test.note"}`) // no text
		res, err := e.App.Writer().Write(ctx, "test", []storage.Change{good, bad})
		if err != nil {
			t.Fatal(err)
		}
		if res.Accepted != 2 || len(res.Rejected) != 0 || len(res.Flagged) != 1 || res.Flagged[0].URI != bad.URI() {
			t.Fatalf("write: %+v", res)
		}
		if st := e.App.Writer().Stats(); st.Flagged != 1 {
			t.Fatalf("writer stats %+v", st)
		}
		rep := e.validationReport(t)
		if rep.Mode != "hide" || rep.TotalInvalid != 1 || len(rep.Invalid) != 1 || rep.Invalid[0].Collection != "app.test.note" || rep.Invalid[0].Count != 1 {
			t.Fatalf("report %+v", rep)
		}

		served := func(label string, wantListed int, wantGet int, wantScript map[string]any) {
			t.Helper()
			if got := listNotes(t, e.Env, e.key); len(got) != wantListed {
				t.Errorf("%s: listed %v, want %d records", label, got, wantListed)
			}
			if r := e.get(t, "/xrpc/app.test.listNotes?uri="+url.QueryEscape(bad.URI())); r.Status != wantGet {
				t.Errorf("%s: get the invalid record: %d %s, want %d", label, r.Status, r.Raw, wantGet)
			}
			r := e.get(t, "/xrpc/app.test.count?uri="+url.QueryEscape(bad.URI()))
			var got map[string]any
			r.JSON(t, &got)
			if fmt.Sprint(got) != fmt.Sprint(wantScript) {
				t.Errorf("%s: script saw %v, want %v", label, got, wantScript)
			}
		}
		served("hide", 1, 404, map[string]any{"hidden": 1.0, "all": 2.0, "listed": 1.0, "every": 2.0, "got": false, "forced": true, "loaded": false, "loadedForced": true})

		e.putSetting(t, "validation.app.test.note", "flag", 200)
		served("flag", 2, 200, map[string]any{"hidden": 2.0, "all": 2.0, "listed": 2.0, "every": 2.0, "got": true, "forced": true, "loaded": true, "loadedForced": true})
		if rep := e.validationReport(t); rep.Collections["app.test.note"] != "flag" {
			t.Fatalf("report after the override: %+v", rep)
		}

		if r := e.admin.Do(t, "DELETE", "/admin/settings/validation.app.test.note", nil); r.Status != 204 {
			t.Fatalf("delete the override: %d %s", r.Status, r.Raw)
		}
		e.putSetting(t, "validation.mode", "reject", 200)
		served("reject", 1, 404, map[string]any{"hidden": 1.0, "all": 2.0, "listed": 1.0, "every": 2.0, "got": false, "forced": true, "loaded": false, "loadedForced": true})
		worse := noteChange(e.did, "3kworse", "")
		worse.Record = json.RawMessage(`{"$type":"app.test.note","text":"x","likes":"many"}`)
		if res, err := e.App.Writer().Write(ctx, "test", []storage.Change{worse}); err != nil || len(res.Rejected) != 1 {
			t.Fatalf("reject mode wrote %+v, %v", res, err)
		}

		e.putSetting(t, "validation.mode", "off", 400)
		e.putSetting(t, "validation.mode", "drop", 400)
		e.putSetting(t, "validation.app.test.note", "maybe", 400)
		e.putSetting(t, "validation.app.test.note", "off", 200)
	})
}

// TestRevalidationAfterLexiconRevision: a revision of a record lexicon
// makes the leader validate the collection's stored records again: those
// the new revision refuses are flagged (and hidden), and a later revision
// that accepts them again clears them; the passes' progress is reported.
func TestRevalidationAfterLexiconRevision(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		e := newScriptEnv(t, open(t))
		ctx := context.Background()
		if _, err := e.App.Lexicons().Put(ctx, listNotesLexicon); err != nil {
			t.Fatal(err)
		}
		var changes []storage.Change
		for i := range 12 {
			rec := map[string]any{"$type": "app.test.note", "text": fmt.Sprintf("note %d", i)}
			if i%3 == 0 {
				rec["likes"] = i
			}
			raw, _ := json.Marshal(rec)
			changes = append(changes, storage.Change{Op: storage.OpCreate, DID: e.did, Collection: "app.test.note",
				RKey: fmt.Sprintf("3k%05d", i), CID: fmt.Sprintf("bafyreinote%d", i), Record: raw})
		}
		if _, err := e.App.Writer().Write(ctx, "test", changes); err != nil {
			t.Fatal(err)
		}
		pass := func(revision int) func() bool {
			return func() bool {
				for _, p := range e.validationReport(t).Passes {
					if p.Collection == "app.test.note" && p.Revision == revision && p.Done {
						return true
					}
				}
				return false
			}
		}
		waitFor(t, "the first sight of the lexicon", pass(1))
		if got := listNotes(t, e.Env, e.key); len(got) != 12 {
			t.Fatalf("listed %d records before the revision", len(got))
		}

		strict := `{"lexicon":1,"id":"app.test.note","defs":{"main":{"type":"record","key":"tid","record":{"type":"object","required":["text","likes"],"properties":{"text":{"type":"string"},"likes":{"type":"integer"}}}}}}`
		if _, err := e.App.Lexicons().Put(ctx, lexicon.Upload{Document: json.RawMessage(strict)}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the re-validation of revision 2", pass(2))
		rep := e.validationReport(t)
		if rep.TotalInvalid != 8 {
			t.Fatalf("after the strict revision: %+v", rep)
		}
		for _, p := range rep.Passes {
			if p.Collection == "app.test.note" && (p.Checked != 12 || p.Flagged != 8 || p.Cleared != 0) {
				t.Fatalf("pass %+v", p)
			}
		}
		if got := listNotes(t, e.Env, e.key); len(got) != 4 {
			t.Fatalf("listed %d records after the strict revision, want the 4 with likes", len(got))
		}

		if _, err := e.App.Lexicons().Put(ctx, lexicon.Upload{Document: json.RawMessage(noteLexicon)}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the re-validation of revision 3", pass(3))
		if rep := e.validationReport(t); rep.TotalInvalid != 0 {
			t.Fatalf("after the lenient revision: %+v", rep)
		}
		if got := listNotes(t, e.Env, e.key); len(got) != 12 {
			t.Fatalf("listed %d records after the lenient revision", len(got))
		}
	})
}

// TestDefaultValidationMode: the default mode is a plain string, a value
// of the setting an embedder can compare and store, and the mode an
// instance without the setting reports.
func TestDefaultValidationMode(t *testing.T) {
	t.Parallel()
	e := newScriptEnv(t, storagetest.SQLite(t))
	if rep := e.validationReport(t); rep.Mode != appview.DefaultValidationMode {
		t.Fatalf("mode %q without the setting, want %q", rep.Mode, appview.DefaultValidationMode)
	}
}
