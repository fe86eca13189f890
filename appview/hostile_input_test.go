package appview_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/testing/metricstest"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/internal/jetstreamtest"
	"github.com/lexview/lexview/internal/oauthtest"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

const hostileCID = "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm"

// listNotesLexicon is a query lexicon listing app.test.note.
var listNotesLexicon = lexicon.Upload{
	Document:         json.RawMessage(`{"lexicon":1,"id":"app.test.listNotes","defs":{"main":{"type":"query"}}}`),
	TargetCollection: "app.test.note",
}

// strictJSON fails the test unless raw is JSON a strict decoder accepts:
// valid UTF-8, no lone surrogate escapes (encoding/json accepts both,
// replacing them; stricter decoders refuse the answer).
func strictJSON(t *testing.T, what string, raw []byte) {
	t.Helper()
	if !utf8.Valid(raw) || !json.Valid(raw) || lexicon.CheckRecordText(raw) != nil {
		t.Fatalf("%s is not strict JSON: %q", what, raw)
	}
}

// listNotes reads every app.test.note through the default query and
// checks the answer decodes strictly; it returns the URIs and texts.
func listNotes(t *testing.T, env *testenv.Env, clientKey string) map[string]string {
	t.Helper()
	r := env.Do(t, "GET", "/xrpc/app.test.listNotes?limit=100", nil, "X-Client-Key", clientKey)
	if r.Status != 200 {
		t.Fatalf("list: %d %s", r.Status, r.Raw)
	}
	strictJSON(t, "the list answer", r.Raw)
	var page struct {
		Records []struct{ URI, Text string }
	}
	r.JSON(t, &page)
	out := map[string]string{}
	for _, rec := range page.Records {
		out[rec.URI] = rec.Text
	}
	return out
}

// TestStreamRefusesInvalidIdentifiersAndText: Jetstream events naming an
// invalid DID or record key, or carrying a record that is not valid UTF-8
// or holds a lone surrogate or NUL, are not indexed (counted as rejected);
// the events after them are, and the list answer decodes strictly. On
// PostgreSQL such a record used to stop ingestion altogether (its batch
// never committed); on SQLite it was stored and served raw.
func TestStreamRefusesInvalidIdentifiersAndText(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		store := open(t)
		js := jetstreamtest.New(t)
		reg := prometheus.NewRegistry()
		env := testenv.New(t, store, appview.Config{
			Ingest:  appview.IngestConfig{JetstreamURL: js.URL},
			Metrics: appview.MetricsConfig{Registerer: reg},
		})
		ctx := context.Background()
		putNoteLexicon(t, env.App)
		if _, err := env.App.Lexicons().Put(ctx, listNotesLexicon); err != nil {
			t.Fatal(err)
		}
		client, _ := env.NewClient(t, apiclients.NewClient{})
		waitFor(t, "a subscription", func() bool { return js.Connected() == 1 })

		note := func(text string) map[string]any { return map[string]any{"$type": "app.test.note", "text": text} }
		js.Commit("did:evil", "create", "app.test.note", "3kevil", "3kaaaaaaaaaa1", hostileCID, note("no identifier"))
		js.Commit("did:plc:dan", "create", "app.test.note", "ключ", "3kaaaaaaaaaa1", hostileCID, note("bad key"))
		js.Commit("did:plc:dan", "delete", "app.test.note", "a b", "3kaaaaaaaaaa1", "", nil)
		for rkey, text := range map[string]string{"3kutf8": "bad \xff\xfe", "3ksurrogate": `lone \ud800`, "3knul": `a\u0000b`} {
			js.PublishBytes("app.test.note", func(us int64) []byte {
				return fmt.Appendf(nil, `{"did":"did:plc:dan","time_us":%d,"kind":"commit","commit":{"rev":"3kaaaaaaaaaa1","operation":"create","collection":"app.test.note","rkey":%q,"record":{"$type":"app.test.note","text":"%s"},"cid":%q}}`,
					us, rkey, text, hostileCID)
			})
		}
		js.PublishBytes("app.test.note", func(us int64) []byte {
			return fmt.Appendf(nil, "{\"did\":\"did:plc:\xff\","+`"time_us":%d,"kind":"commit","commit":{"rev":"3kaaaaaaaaaa1","operation":"create","collection":"app.test.note","rkey":"3kdid","record":{"$type":"app.test.note","text":"x"},"cid":%q}}`, us, hostileCID)
		})
		js.Commit("did:plc:dan", "create", "app.test.note", "3kgood", "3kaaaaaaaaaa2", hostileCID, note("fine 日本 😀"))

		waitFor(t, "the valid record", func() bool {
			_, err := store.GetRecord(ctx, "at://did:plc:dan/app.test.note/3kgood")
			return err == nil
		})
		if n, err := store.CountRecords(ctx, "app.test.note"); err != nil || n != 1 {
			t.Fatalf("%d records indexed (%v), want only the valid one", n, err)
		}
		if got := listNotes(t, env, client.Key); len(got) != 1 || got["at://did:plc:dan/app.test.note/3kgood"] != "fine 日本 😀" {
			t.Fatalf("list: %v", got)
		}
		if v, _ := metricstest.Value(t, reg, "lexview_records_rejected_total", map[string]string{"source": "jetstream", "collection": "app.test.note"}); v != 7 {
			t.Fatalf("lexview_records_rejected_total = %v, want 7", v)
		}
	})
}

// TestCustomSourceRefusesInvalidChanges: an embedder's source gets the
// same checks (in the writer): invalid changes are refused, its Records
// call succeeds, its position is stored, the valid change is indexed, and
// the metrics label a collection that is not an NSID "(invalid)".
func TestCustomSourceRefusesInvalidChanges(t *testing.T) {
	t.Parallel()
	store := storagetest.SQLite(t)
	ctx := context.Background()
	src := newFakeSource("custom")
	reg := prometheus.NewRegistry()
	env := testenv.New(t, store, appview.Config{
		Ingest:  appview.IngestConfig{EventSource: src},
		Metrics: appview.MetricsConfig{Registerer: reg},
	})
	putNoteLexicon(t, env.App)
	src.waitResume(t)

	badCollection := noteChange("did:plc:src", "3kc", "x")
	badCollection.Collection = "ключ.example"
	badDID := noteChange("did:evil", "3kd", "x")
	badKey := noteChange("did:plc:src", "3ke", "x")
	badKey.RKey = "ключ"
	badText := noteChange("did:plc:src", "3kf", "x")
	badText.Record = json.RawMessage("{\"$type\":\"app.test.note\",\"text\":\"\xc3\"}")
	src.send(t, 42, badCollection, badDID, badKey, badText, noteChange("did:plc:src", "3kok", "fine"))
	waitFor(t, "the position", func() bool {
		c, err := store.GetStreamCursor(ctx, "source:custom")
		return err == nil && c == 42
	})
	if n, err := store.CountRecords(ctx, ""); err != nil || n != 1 {
		t.Fatalf("%d records (%v), want 1", n, err)
	}
	if _, err := store.GetRecord(ctx, "at://did:plc:src/app.test.note/3kok"); err != nil {
		t.Fatal(err)
	}
	if v, _ := metricstest.Value(t, reg, "lexview_records_rejected_total", map[string]string{"source": "custom", "collection": "(invalid)"}); v != 1 {
		t.Fatalf("rejected (invalid) = %v", v)
	}
	if v, _ := metricstest.Value(t, reg, "lexview_records_rejected_total", map[string]string{"source": "custom", "collection": "app.test.note"}); v != 3 {
		t.Fatalf("rejected app.test.note = %v", v)
	}
}

// TestProcedureRefusesInvalidText: a procedure body that is not valid
// UTF-8, or holds a lone surrogate or NUL escape, is answered 400 before
// anything reaches the PDS or the index; valid text is written, and the
// list answer decodes strictly.
func TestProcedureRefusesInvalidText(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		store := open(t)
		env := testenv.New(t, store, appview.Config{})
		pds := oauthtest.New(t, oauthtest.Options{})
		did := env.PLC.NewAccount(t, false, pds.URL).DID.String()
		client, secret := env.NewClient(t, apiclients.NewClient{})
		ctx := context.Background()
		putNoteLexicon(t, env.App)
		for _, up := range []lexicon.Upload{
			{Document: json.RawMessage(`{"lexicon":1,"id":"app.test.createNote","defs":{"main":{"type":"procedure","input":{"encoding":"application/json"}}}}`), TargetCollection: "app.test.note"},
			listNotesLexicon,
		} {
			if _, err := env.App.Lexicons().Put(ctx, up); err != nil {
				t.Fatal(err)
			}
		}
		phone := signIn(t, env, pds, client.Key, secret, did)
		r := phone.call(t, "POST", "/xrpc/app.test.createNote", map[string]any{"text": "valid"})
		if r.Status != 200 {
			t.Fatalf("valid write: %d %s", r.Status, r.Raw)
		}
		uri, _ := r.Object(t)["uri"].(string)

		// Writes, not every request: the sign-in also fetches the
		// account's repository (on-demand backfill) in the background.
		before := len(pds.Operations())
		for name, body := range map[string]string{
			"invalid UTF-8":          "{\"text\":\"bad \xff\"}",
			"invalid UTF-8 in a key": "{\"t\xe9xt\":\"x\"}",
			"lone surrogate":         `{"text":"lone \ud83d"}`,
			"NUL":                    `{"text":"a\u0000b"}`,
			"put with bad text":      `{"uri":"` + uri + `","text":"\udc00"}`,
		} {
			r := phone.call(t, "POST", "/xrpc/app.test.createNote", []byte(body))
			if r.Status != 400 || r.Error(t) != "invalid request body" {
				t.Errorf("%s: %d %s", name, r.Status, r.Raw)
			}
			strictJSON(t, name+": the error answer", r.Raw)
		}
		if after := len(pds.Operations()); after != before {
			t.Fatalf("refused bodies reached the PDS (%d writes)", after-before)
		}
		if n, err := store.CountRecords(ctx, "app.test.note"); err != nil || n != 1 {
			t.Fatalf("%d records (%v), want the valid one only", n, err)
		}
		if got := listNotes(t, env, client.Key); len(got) != 1 || got[uri] != "valid" {
			t.Fatalf("list: %v", got)
		}
	})
}

// TestStoredInvalidTextIsRepairedOnTheWay: a record stored before the
// writer refused invalid UTF-8 (SQLite kept it raw; PostgreSQL could not
// hold it) is served as valid UTF-8, its invalid bytes replaced by U+FFFD,
// by the default query and the operator's listing.
func TestStoredInvalidTextIsRepairedOnTheWay(t *testing.T) {
	t.Parallel()
	store := storagetest.SQLite(t)
	env := testenv.New(t, store, appview.Config{})
	ctx := context.Background()
	putNoteLexicon(t, env.App)
	if _, err := env.App.Lexicons().Put(ctx, listNotesLexicon); err != nil {
		t.Fatal(err)
	}
	client, _ := env.NewClient(t, apiclients.NewClient{})
	uri := "at://did:plc:old/app.test.note/3kold"
	if err := store.ApplyBatch(ctx, storage.Batch{Ops: []storage.RecordOp{{Record: storage.Record{
		URI: uri, DID: "did:plc:old", Collection: "app.test.note", RKey: "3kold", CID: hostileCID, Rev: "3kaaaaaaaaaa1",
		Value: json.RawMessage("{\"$type\":\"app.test.note\",\"text\":\"old \xff text\"}"),
	}}}}); err != nil {
		t.Fatal(err)
	}
	if got := listNotes(t, env, client.Key); got[uri] != "old \uFFFD text" {
		t.Fatalf("list: %q", got)
	}
	r := env.Do(t, "GET", "/xrpc/app.test.listNotes?uri="+uri, nil, "X-Client-Key", client.Key)
	strictJSON(t, "the get answer", r.Raw)
	if r.Status != 200 || !strings.Contains(string(r.Raw), "old \uFFFD text") {
		t.Fatalf("get: %d %s", r.Status, r.Raw)
	}
	r = env.Bootstrap(t).Do(t, "GET", "/admin/records?collection=app.test.note", nil)
	strictJSON(t, "the operator's listing", r.Raw)
	if r.Status != 200 || !strings.Contains(string(r.Raw), "old \uFFFD text") {
		t.Fatalf("admin records: %d %s", r.Status, r.Raw)
	}
}

// TestScriptRecordThatCannotBeStored: a record-event script's record is
// written after validation; one holding a NUL (which a Lua string may) is
// a script failure, kept as a dead letter, instead of a record PostgreSQL
// refuses (its batch used to fail for ever) or SQLite stores as
// `\u0000`.
func TestScriptRecordThatCannotBeStored(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env := testenv.New(t, open(t), appview.Config{Scripts: appview.ScriptConfig{Retry: appview.RetryPolicy{Attempts: 1}}})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := env.App.Lexicons().Put(ctx, lexicon.Upload{Document: json.RawMessage(noteLexicon),
			IndexHook: `function handle() record.text = record.text .. string.char(0) return record end`}); err != nil {
			t.Fatal(err)
		}
		if _, err := env.App.Writer().Write(ctx, "test", []storage.Change{noteChange("did:plc:s", "3knul", "x")}); err != nil {
			t.Fatal(err)
		}
		if n, err := env.Store.CountRecords(ctx, "app.test.note"); err != nil || n != 0 {
			t.Fatalf("%d records (%v)", n, err)
		}
		var list deadLetterList
		env.Bootstrap(t).Do(t, "GET", "/admin/dead-letters", nil).JSON(t, &list)
		if len(list.DeadLetters) != 1 || !strings.Contains(list.DeadLetters[0].Error, "cannot be stored") {
			t.Fatalf("dead letters: %+v", list)
		}
	})
}
