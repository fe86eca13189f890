package appview_test

import (
	"context"
	"encoding/json"
	"net/url"
	"testing"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/internal/oauthtest"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// auditEntry is an event-log entry as GET /admin/events serves it.
type auditEntry struct {
	Type     string         `json:"event_type"`
	ActorDID string         `json:"actor_did"`
	Subject  string         `json:"subject"`
	Detail   map[string]any `json:"detail"`
}

// recordEvents lists the entries of the record category, oldest first.
func recordEvents(t *testing.T, adm *testenv.Admin) []auditEntry {
	t.Helper()
	var page struct {
		Events []auditEntry `json:"events"`
	}
	if r := adm.Do(t, "GET", "/admin/events?category=record&limit=100", nil); r.Status != 200 {
		t.Fatalf("events: %d %s", r.Status, r.Raw)
	} else {
		r.JSON(t, &page)
	}
	for i, j := 0, len(page.Events)-1; i < j; i, j = i+1, j-1 {
		page.Events[i], page.Events[j] = page.Events[j], page.Events[i]
	}
	return page.Events
}

// TestProcedureRecordAudit: the records procedures write (default and
// scripted) and scripts delete are audited (record.created,
// record.updated, record.deleted). A put the PDS skips because the record
// is unchanged is not indexed again, and is audited (record.put_skipped)
// only under verbose logging.
func TestProcedureRecordAudit(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env := testenv.New(t, open(t), appview.Config{})
		pds := oauthtest.New(t, oauthtest.Options{})
		did := env.PLC.NewAccount(t, false, pds.URL).DID.String()
		client, secret := env.NewClient(t, apiclients.NewClient{})
		putNoteLexicons(t, env)
		if _, err := env.App.Lexicons().Put(context.Background(), lexicon.Upload{
			Document:         json.RawMessage(`{"lexicon":1,"id":"app.test.scriptNote","defs":{"main":{"type":"procedure","input":{"encoding":"application/json"}}}}`),
			TargetCollection: "app.test.note",
			Script: `function handle()
				local r = Record(collection, {text = input.text})
				r:save()
				r.text = input.text .. " edited"
				r:save()
				r:save() -- unchanged: the PDS makes no commit
				r:delete()
				return {uri = r.uri}
			end`,
		}); err != nil {
			t.Fatal(err)
		}
		adm := env.Bootstrap(t)
		dev := signIn(t, env, pds, client.Key, secret, did)
		want := func(step string, got []auditEntry, types ...string) {
			t.Helper()
			if len(got) != len(types) {
				t.Fatalf("%s: record events %+v, want types %v", step, got, types)
			}
			for i, e := range got {
				if e.Type != types[i] || e.ActorDID != did {
					t.Fatalf("%s: event %d is %+v, want %s by %s", step, i, e, types[i], did)
				}
			}
		}

		// The default procedure: a create, a put, and a put of the same
		// record, which the PDS skips.
		r := dev.call(t, "POST", "/xrpc/app.test.createNote", map[string]any{"text": "a"})
		uri, _ := r.Object(t)["uri"].(string)
		for i, text := range []string{"b", "b"} {
			if r := dev.call(t, "POST", "/xrpc/app.test.createNote", map[string]any{"uri": uri, "text": text}); r.Status != 200 {
				t.Fatalf("put %d: %d %s", i, r.Status, r.Raw)
			}
		}
		got := recordEvents(t, adm)
		want("default procedure", got, "record.created", "record.updated")
		onPDS, _ := pds.Record(uri)
		for i, e := range got {
			if e.Subject != uri || e.Detail["via"] != "procedure" || e.Detail["cid"] == "" {
				t.Fatalf("event %d: %+v", i, e)
			}
		}
		if got[1].Detail["cid"] != onPDS.CID || got[1].Detail["rev"] != onPDS.Rev {
			t.Fatalf("record.updated %v; the PDS holds %s at %s", got[1].Detail, onPDS.CID, onPDS.Rev)
		}
		// The skipped put left the indexed record as it was, rev included.
		if rec, err := env.App.Store().GetRecord(context.Background(), uri); err != nil || rec.Rev != onPDS.Rev || rec.CID != onPDS.CID {
			t.Fatalf("indexed after the skipped put: %+v %v; the PDS holds %+v", rec, err, onPDS)
		}

		// Under verbose logging, a skipped put is recorded.
		if r := adm.Do(t, "PUT", "/admin/settings/event_log_verbose", map[string]any{"value": "yes"}); r.Status != 400 {
			t.Fatalf("a verbose setting that is not a boolean: %d %s", r.Status, r.Raw)
		}
		if r := adm.Do(t, "PUT", "/admin/settings/event_log_verbose", map[string]any{"value": "true"}); r.Status != 200 {
			t.Fatalf("verbose on: %d %s", r.Status, r.Raw)
		}
		dev.call(t, "POST", "/xrpc/app.test.createNote", map[string]any{"uri": uri, "text": "b"})
		got = recordEvents(t, adm)
		want("skipped put, verbose", got, "record.created", "record.updated", "record.put_skipped")
		if got[2].Subject != uri || got[2].Detail["cid"] != onPDS.CID {
			t.Fatalf("record.put_skipped: %+v", got[2])
		}

		// A scripted procedure: a create, a put, a skipped put, a delete.
		r = dev.call(t, "POST", "/xrpc/app.test.scriptNote", map[string]any{"text": "s"})
		scripted, _ := r.Object(t)["uri"].(string)
		if r.Status != 200 || scripted == "" {
			t.Fatalf("scripted procedure: %d %s", r.Status, r.Raw)
		}
		got = recordEvents(t, adm)[3:]
		want("scripted procedure", got, "record.created", "record.updated", "record.put_skipped", "record.deleted")
		for i, e := range got {
			if e.Subject != scripted || e.Detail["via"] != "script" {
				t.Fatalf("scripted event %d: %+v", i, e)
			}
		}

		// Verbose off again: skipped puts are left out.
		if r := adm.Do(t, "PUT", "/admin/settings/event_log_verbose", map[string]any{"value": "false"}); r.Status != 200 {
			t.Fatalf("verbose off: %d %s", r.Status, r.Raw)
		}
		dev.call(t, "POST", "/xrpc/app.test.createNote", map[string]any{"uri": uri, "text": "b"})
		if n := len(recordEvents(t, adm)); n != 7 {
			t.Fatalf("%d record events after a skipped put with verbose logging off, want 7", n)
		}
		if r := adm.Do(t, "GET", "/admin/events?event_type="+url.QueryEscape("record.put_skipped"), nil); len(r.Object(t)["events"].([]any)) != 2 {
			t.Fatalf("record.put_skipped entries: %s", r.Raw)
		}
	})
}
