package appview_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/internal/oauthtest"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

func noteChange(did, rkey, text string) storage.Change {
	rec, _ := json.Marshal(map[string]any{"$type": "app.test.note", "text": text})
	return storage.Change{Op: storage.OpCreate, DID: did, Collection: "app.test.note", RKey: rkey, CID: "bafyrei" + rkey, Record: rec}
}

type deadLetterList struct {
	DeadLetters []struct {
		ID       string `json:"id"`
		URI      string `json:"uri"`
		Action   string `json:"action"`
		Error    string `json:"error"`
		Attempts int    `json:"attempts"`
	} `json:"dead_letters"`
}

// TestRecordEventScripts covers record.index and action-specific scripts:
// transforming, skipping, failing into dead letters, then retry and
// reindex through the admin API.
func TestRecordEventScripts(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env := testenv.New(t, open(t), appview.Config{Scripts: appview.ScriptConfig{Retry: appview.RetryPolicy{Attempts: 1}}})
		pds := oauthtest.New(t, oauthtest.Options{})
		did := env.PLC.NewAccount(t, false, pds.URL).DID.String()
		ctx := context.Background()
		// The legacy index_hook field maps onto record.index.
		_, err := env.App.Lexicons().Put(ctx, lexicon.Upload{Document: json.RawMessage(noteLexicon),
			IndexHook: `function handle()
				if record.text == "skip me" then return nil end
				if record.text == "fail" then error("cannot index " .. uri) end
				record.text = string.upper(record.text) .. " via " .. action .. " " .. rkey
				return record
			end`})
		if err != nil {
			t.Fatal(err)
		}
		adm := env.Bootstrap(t)
		w := env.App.Writer()
		if _, err := w.Write(ctx, "test", []storage.Change{
			noteChange(did, "3kaaa", "hello"), noteChange(did, "3kbbb", "skip me"), noteChange(did, "3kccc", "fail"),
		}); err != nil {
			t.Fatal(err)
		}
		store := env.App.Store()
		if rec, err := store.GetRecord(ctx, "at://"+did+"/app.test.note/3kaaa"); err != nil || !strings.Contains(string(rec.Value), "HELLO via create 3kaaa") {
			t.Fatalf("transformed record: %s %v", rec.Value, err)
		}
		for _, rk := range []string{"3kbbb", "3kccc"} {
			if _, err := store.GetRecord(ctx, "at://"+did+"/app.test.note/"+rk); err == nil {
				t.Errorf("%s was indexed", rk)
			}
		}
		var list deadLetterList
		adm.Do(t, "GET", "/admin/dead-letters", nil).JSON(t, &list)
		if len(list.DeadLetters) != 1 || list.DeadLetters[0].URI != "at://"+did+"/app.test.note/3kccc" ||
			!strings.Contains(list.DeadLetters[0].Error, "cannot index") || list.DeadLetters[0].Attempts != 1 {
			t.Fatalf("dead letters: %+v", list)
		}
		id := list.DeadLetters[0].ID
		// Retrying with the script still failing updates the attempts.
		r := adm.Do(t, "POST", "/admin/dead-letters/"+id+"/retry", nil)
		if r.Status != 200 || r.Object(t)["resolved"] != false {
			t.Fatalf("failing retry: %d %s", r.Status, r.Raw)
		}
		// A trigger-keyed, action-specific script wins over record.index.
		if r := adm.Do(t, "POST", "/admin/scripts", map[string]any{"trigger": "record.create:app.test.note",
			"source": `function handle() record.text = "fixed " .. record.text return record end`}); r.Status != 201 {
			t.Fatalf("install: %d %s", r.Status, r.Raw)
		}
		if r := adm.Do(t, "POST", "/admin/dead-letters/"+id+"/retry", nil); r.Status != 200 || r.Object(t)["resolved"] != true {
			t.Fatalf("retry: %d %s", r.Status, r.Raw)
		}
		if rec, err := store.GetRecord(ctx, "at://"+did+"/app.test.note/3kccc"); err != nil || !strings.Contains(string(rec.Value), `"fixed fail"`) {
			t.Fatalf("retried record: %s %v", rec.Value, err)
		}
		if r := adm.Do(t, "POST", "/admin/dead-letters/"+id+"/retry", nil); r.Status != 404 {
			t.Fatalf("retry of a resolved dead letter: %d %s", r.Status, r.Raw)
		}
		// Reindex fetches the record fresh from the author's PDS.
		if _, err := pds.SeedRecord(did, "app.test.note", "3kddd", json.RawMessage(`{"$type":"app.test.note","text":"on the pds"}`)); err != nil {
			t.Fatal(err)
		}
		if r := adm.Do(t, "DELETE", "/admin/scripts/"+scriptID(t, adm, "record.create:app.test.note"), nil); r.Status != 204 {
			t.Fatalf("delete script: %d %s", r.Status, r.Raw)
		}
		if _, err := w.Write(ctx, "test", []storage.Change{noteChange(did, "3kddd", "fail")}); err != nil {
			t.Fatal(err)
		}
		adm.Do(t, "GET", "/admin/dead-letters", nil).JSON(t, &list)
		if len(list.DeadLetters) != 1 {
			t.Fatalf("dead letters: %+v", list)
		}
		if r := adm.Do(t, "POST", "/admin/dead-letters/"+list.DeadLetters[0].ID+"/reindex", nil); r.Status != 200 || r.Object(t)["resolved"] != true {
			t.Fatalf("reindex: %d %s", r.Status, r.Raw)
		}
		if rec, err := store.GetRecord(ctx, "at://"+did+"/app.test.note/3kddd"); err != nil || !strings.Contains(string(rec.Value), "ON THE PDS via create 3kddd") {
			t.Fatalf("reindexed record: %s %v", rec.Value, err)
		}
	})
}

func scriptID(t *testing.T, adm *testenv.Admin, trigger string) string {
	t.Helper()
	var out struct {
		Scripts []struct {
			ID      string `json:"id"`
			Trigger string `json:"trigger"`
		} `json:"scripts"`
	}
	adm.Do(t, "GET", "/admin/scripts", nil).JSON(t, &out)
	for _, s := range out.Scripts {
		if s.Trigger == trigger {
			return s.ID
		}
	}
	t.Fatalf("no script for %s", trigger)
	return ""
}

// deadLetterCount counts the dead letters, resolved or not.
func deadLetterCount(t *testing.T, adm *testenv.Admin) float64 {
	t.Helper()
	r := adm.Do(t, "GET", "/admin/dead-letters/count?resolved=all", nil)
	if r.Status != 200 {
		t.Fatalf("count: %d %s", r.Status, r.Raw)
	}
	n, _ := r.Object(t)["count"].(float64)
	return n
}

// TestDeadLetterAutomaticRetry: a failure that goes away is retried and
// applied without an operator, and never becomes a dead letter.
func TestDeadLetterAutomaticRetry(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env := testenv.New(t, open(t), appview.Config{Scripts: appview.ScriptConfig{Retry: appview.RetryPolicy{Attempts: 5, Backoff: 50 * time.Millisecond}}})
		ctx := context.Background()
		if _, err := env.App.Lexicons().Put(ctx, lexicon.Upload{Document: json.RawMessage(noteLexicon)}); err != nil {
			t.Fatal(err)
		}
		adm := env.Bootstrap(t)
		// The script fails until a script variable exists.
		if r := adm.Do(t, "POST", "/admin/scripts", map[string]any{"trigger": "record.index:app.test.note",
			"source": `function handle() assert(vars.ready, "not ready") return true end`}); r.Status != 201 {
			t.Fatalf("install: %d %s", r.Status, r.Raw)
		}
		if _, err := env.App.Writer().Write(ctx, "test", []storage.Change{noteChange("did:plc:auto", "3kaaa", "x")}); err != nil {
			t.Fatal(err)
		}
		if n := deadLetterCount(t, adm); n != 0 {
			t.Fatalf("%v dead letters after the first failure, with retries left", n)
		}
		if next, err := env.Store.NextScriptRetryDue(ctx); err != nil || next.IsZero() {
			t.Fatalf("no pending retry after the failure: %v %v", next, err)
		}
		if r := adm.Do(t, "POST", "/admin/script-variables", map[string]any{"key": "ready", "value": "yes"}); r.Status != 200 {
			t.Fatalf("set variable: %d %s", r.Status, r.Raw)
		}
		waitFor(t, "the record to be indexed by a retry", func() bool {
			_, err := env.App.Store().GetRecord(ctx, "at://did:plc:auto/app.test.note/3kaaa")
			return err == nil
		})
		waitFor(t, "the pending retry to be deleted", func() bool {
			next, err := env.Store.NextScriptRetryDue(ctx)
			return err == nil && next.IsZero()
		})
		if n := deadLetterCount(t, adm); n != 0 {
			t.Fatalf("%v dead letters after a retry succeeded", n)
		}
	})
}

// TestDeadLetterAfterEveryRetry: a failure that stays becomes one dead
// letter, once its last attempt has failed.
func TestDeadLetterAfterEveryRetry(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env := testenv.New(t, open(t), appview.Config{Scripts: appview.ScriptConfig{Retry: appview.RetryPolicy{Attempts: 3, Backoff: 20 * time.Millisecond}}})
		ctx := context.Background()
		if _, err := env.App.Lexicons().Put(ctx, lexicon.Upload{Document: json.RawMessage(noteLexicon),
			IndexHook: `function handle() error("always") end`}); err != nil {
			t.Fatal(err)
		}
		adm := env.Bootstrap(t)
		c := noteChange("did:plc:fails", "3kaaa", "x")
		if _, err := env.App.Writer().Write(ctx, "test", []storage.Change{c}); err != nil {
			t.Fatal(err)
		}
		if n := deadLetterCount(t, adm); n != 0 {
			t.Fatalf("%v dead letters after the first failure, with retries left", n)
		}
		waitFor(t, "the dead letter", func() bool { return deadLetterCount(t, adm) > 0 })
		var list deadLetterList
		adm.Do(t, "GET", "/admin/dead-letters", nil).JSON(t, &list)
		if len(list.DeadLetters) != 1 || list.DeadLetters[0].URI != c.URI() || list.DeadLetters[0].Attempts != 3 ||
			!strings.Contains(list.DeadLetters[0].Error, "always") {
			t.Fatalf("dead letters: %+v", list)
		}
		if next, err := env.Store.NextScriptRetryDue(ctx); err != nil || !next.IsZero() {
			t.Fatalf("a retry still pending beside its dead letter: %v %v", next, err)
		}
		if _, err := env.Store.GetRecord(ctx, c.URI()); err == nil {
			t.Fatal("the failed change was applied")
		}
	})
}

// TestProcedureScriptWrites: Record(...):save() and :delete() go through
// the caller's PDS session and are indexed.
func TestProcedureScriptWrites(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env := testenv.New(t, open(t), appview.Config{})
		pds := oauthtest.New(t, oauthtest.Options{})
		did := env.PLC.NewAccount(t, false, pds.URL).DID.String()
		client, secret := env.NewClient(t, apiclients.NewClient{})
		ctx := context.Background()
		for _, up := range []lexicon.Upload{
			{Document: json.RawMessage(noteLexicon)},
			{Document: json.RawMessage(`{"lexicon":1,"id":"app.test.post","defs":{"main":{"type":"procedure","input":{"encoding":"application/json"}}}}`),
				TargetCollection: "app.test.note",
				Script: `function handle()
					local r = Record(collection, {text = input.text, createdAt = now()})
					r:save()
					local copy = Record(collection, {text = "copy of " .. input.text}, "self")
					copy:save()
					copy.text = "edited copy"
					copy:save()
					if input.delete then r:delete() end
					return {uri = r.uri, cid = r.cid, copy = copy.uri, caller = caller.did}
				end`},
			{Document: json.RawMessage(`{"lexicon":1,"id":"app.test.relay","defs":{"main":{"type":"procedure","input":{"encoding":"application/json"}}}}`),
				Script: `function handle()
					local out, err, status = xrpc.procedure("app.test.post", {text = "relayed " .. input.text})
					return {inner = out, err = err, status = status}
				end`},
			{Document: json.RawMessage(`{"lexicon":1,"id":"app.test.peek","defs":{"main":{"type":"query"}}}`), TargetCollection: "app.test.note",
				Script: `function handle() local ok, err = pcall(function() Record(collection, {text = "x"}):save() end) return {ok = ok, err = err} end`},
		} {
			if _, err := env.App.Lexicons().Put(ctx, up); err != nil {
				t.Fatal(err)
			}
		}
		dev := signIn(t, env, pds, client.Key, secret, did)
		r := dev.call(t, "POST", "/xrpc/app.test.post", map[string]any{"text": "hi"})
		if r.Status != 200 {
			t.Fatalf("scripted procedure: %d %s", r.Status, r.Raw)
		}
		out := r.Object(t)
		uri, _ := out["uri"].(string)
		if out["caller"] != did || out["copy"] != "at://"+did+"/app.test.note/self" {
			t.Fatalf("answer: %s", r.Raw)
		}
		if _, ok := pds.Record(uri); !ok {
			t.Fatalf("%s not on the PDS", uri)
		}
		store := env.App.Store()
		if rec, err := store.GetRecord(ctx, uri); err != nil || !strings.Contains(string(rec.Value), `"hi"`) {
			t.Fatalf("indexed: %s %v", rec.Value, err)
		}
		if rec, err := store.GetRecord(ctx, "at://"+did+"/app.test.note/self"); err != nil || !strings.Contains(string(rec.Value), "edited copy") {
			t.Fatalf("put: %s %v", rec.Value, err)
		}
		r = dev.call(t, "POST", "/xrpc/app.test.post", map[string]any{"text": "bye", "delete": true})
		uri, _ = r.Object(t)["uri"].(string)
		if _, ok := pds.Record(uri); ok || r.Status != 200 {
			t.Fatalf("deleted record still on the PDS: %d %s", r.Status, r.Raw)
		}
		if _, err := store.GetRecord(ctx, uri); err == nil {
			t.Fatal("deleted record still indexed")
		}
		// xrpc.procedure calls a local procedure as the same caller.
		relay := dev.call(t, "POST", "/xrpc/app.test.relay", map[string]any{"text": "x"})
		inner, _ := relay.Object(t)["inner"].(map[string]any)
		if relay.Status != 200 || inner == nil || inner["caller"] != did {
			t.Fatalf("xrpc.procedure: %d %s", relay.Status, relay.Raw)
		}
		if rec, err := store.GetRecord(ctx, inner["uri"].(string)); err != nil || !strings.Contains(string(rec.Value), "relayed x") {
			t.Fatalf("relayed record: %s %v", rec.Value, err)
		}
		// Query scripts cannot write.
		peek := dev.call(t, "GET", "/xrpc/app.test.peek", nil)
		if peek.Object(t)["ok"] != false || !strings.Contains(peek.Object(t)["err"].(string), "only from procedure scripts") {
			t.Fatalf("query write: %s", peek.Raw)
		}
	})
}

// TestScriptRetriesAfterRestart: pending retries are stored, so those a
// stopped instance left are retried by the next one (a claim that ran out
// counts as due: see storagetest), and one that succeeds leaves no dead
// letter.
func TestScriptRetriesAfterRestart(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env := testenv.NewUnstarted(t, open(t), appview.Config{Scripts: appview.ScriptConfig{Retry: appview.RetryPolicy{Attempts: 3, Backoff: 20 * time.Millisecond}}})
		ctx := context.Background()
		if _, err := env.App.Lexicons().Put(ctx, lexicon.Upload{Document: json.RawMessage(noteLexicon),
			IndexHook: `function handle() return true end`}); err != nil {
			t.Fatal(err)
		}
		c := noteChange("did:plc:restart", "3kaaa", "x")
		_, err := env.Store.AddScriptRetry(ctx, storage.ScriptRetry{DeadLetter: storage.DeadLetter{Kind: storage.DeadLetterRecord,
			LexiconID: c.Collection, URI: c.URI(), DID: c.DID, Collection: c.Collection, RKey: c.RKey, Action: "create",
			CID: c.CID, Error: "failed before the restart", Attempts: 1, Record: c.Record}, DueAt: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		if err := env.App.Start(ctx); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the pending retry to be run", func() bool {
			next, err := env.Store.NextScriptRetryDue(ctx)
			return err == nil && next.IsZero()
		})
		if _, err := env.App.Store().GetRecord(ctx, c.URI()); err != nil {
			t.Fatalf("record not indexed: %v", err)
		}
		if n, err := env.Store.CountDeadLetters(ctx, storage.DeadLetterQuery{}); err != nil || n != 0 {
			t.Fatalf("dead letters: %d %v", n, err)
		}
	})
}
