package ingest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/ingest"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/internal/jetstreamtest"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

const cid = "bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm"

func recordLexicon(id string) string {
	return fmt.Sprintf(`{"lexicon":1,"id":%q,"defs":{"main":{"type":"record","key":"tid","record":{"type":"object","required":["text"],"properties":{"text":{"type":"string","maxLength":100}}}}}}`, id)
}

func startApp(t *testing.T, store storage.Store, cfg appview.Config) *appview.App {
	t.Helper()
	cfg.Store = store
	// The App's log is shown when the test fails: what the source did
	// (reconnections, resyncs, refusals) is what a timeout hides.
	var logs tailBuffer
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the App's log (its last %d KiB):\n%s", tailBytes>>10, logs.String())
		}
	})
	cfg.Security.TokenEncryptionKey = testenv.TokenKey
	app, err := appview.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return app
}

// tailBytes bounds what a tailBuffer keeps.
const tailBytes = 64 << 10

// tailBuffer keeps the last tailBytes written to it; it is safe for
// concurrent use.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - tailBytes; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

func stop(t *testing.T, app *appview.App) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := app.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

func putLexicon(t *testing.T, app *appview.App, id string) {
	t.Helper()
	if _, err := app.Lexicons().Put(context.Background(), lexicon.Upload{Document: json.RawMessage(recordLexicon(id))}); err != nil {
		t.Fatal(err)
	}
}

// eventually polls cond for up to 60 seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func text(t *testing.T, s storage.Store, uri string) (string, bool) {
	t.Helper()
	rec, err := s.GetRecord(context.Background(), uri)
	if errors.Is(err, storage.ErrNotFound) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	var v struct{ Text string }
	json.Unmarshal(rec.Value, &v)
	return v.Text, true
}

func note(s string) map[string]any { return map[string]any{"$type": "app.test.note", "text": s} }

func TestJetstreamIngestion(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		store := open(t)
		js := jetstreamtest.New(t)
		app := startApp(t, store, appview.Config{Ingest: appview.IngestConfig{JetstreamURL: js.URL}})
		defer stop(t, app)

		// No record lexicon yet: no connection (Jetstream would send everything).
		time.Sleep(100 * time.Millisecond)
		if js.Connected() != 0 {
			t.Fatal("connected without any wanted collection")
		}
		putLexicon(t, app, "app.test.note")
		eventually(t, "a subscription", func() bool { return js.Connected() == 1 })
		if subs := js.Subscriptions(); !slices.Equal(subs[0].Collections, []string{"app.test.note"}) {
			t.Fatalf("subscribed to %v", subs[0].Collections)
		}

		uri := "at://did:plc:alice/app.test.note/3kaaa"
		js.Commit("did:plc:alice", "create", "app.test.note", "3kaaa", "3kaaaaaaaaaa1", cid, note("first"))
		eventually(t, "the create", func() bool { v, ok := text(t, store, uri); return ok && v == "first" })
		js.Commit("did:plc:alice", "update", "app.test.note", "3kaaa", "3kaaaaaaaaaa2", cid, note("edited"))
		eventually(t, "the update", func() bool { v, _ := text(t, store, uri); return v == "edited" })
		js.Commit("did:plc:alice", "delete", "app.test.note", "3kaaa", "3kaaaaaaaaaa3", "", nil)
		eventually(t, "the delete", func() bool { _, ok := text(t, store, uri); return !ok })

		// An invalid record is stored flagged with its validation error
		// (the default mode, hide, keeps it out of queries); the next
		// valid one is stored as it is.
		js.Commit("did:plc:alice", "create", "app.test.note", "3kbad", "3kaaaaaaaaaa4", cid, map[string]any{"$type": "app.test.note", "text": 42})
		js.Commit("did:plc:alice", "create", "app.test.note", "3kgood", "3kaaaaaaaaaa5", cid, note("good"))
		eventually(t, "the valid record", func() bool { _, ok := text(t, store, "at://did:plc:alice/app.test.note/3kgood"); return ok })
		if bad, err := store.GetRecord(context.Background(), "at://did:plc:alice/app.test.note/3kbad"); err != nil || bad.Invalid == "" {
			t.Fatalf("the invalid record: %+v, %v", bad, err)
		}
		if good, _ := store.GetRecord(context.Background(), "at://did:plc:alice/app.test.note/3kgood"); good.Invalid != "" {
			t.Fatalf("the valid record is flagged: %s", good.Invalid)
		}

		// Adding a lexicon resubscribes within a second, with both collections.
		added := time.Now()
		putLexicon(t, app, "app.test.other")
		eventually(t, "the resubscription", func() bool {
			subs := js.Subscriptions()
			return len(subs) == 2 && js.Connected() == 1
		})
		if took := time.Since(added); took > time.Second {
			t.Fatalf("resubscribing took %v", took)
		}
		last := js.Subscriptions()[1]
		if !slices.Equal(last.Collections, []string{"app.test.note", "app.test.other"}) || last.Cursor == 0 {
			t.Fatalf("resubscription: %+v", last)
		}
		js.Commit("did:plc:bob", "create", "app.test.other", "3kccc", "3kaaaaaaaaaa6", cid,
			map[string]any{"$type": "app.test.other", "text": "other"})
		eventually(t, "the new collection", func() bool { _, ok := text(t, store, "at://did:plc:bob/app.test.other/3kccc"); return ok })

		// A dropped connection is re-established, from the cursor.
		js.DropAll()
		js.Commit("did:plc:bob", "create", "app.test.note", "3kddd", "3kaaaaaaaaaa7", cid, note("after drop"))
		eventually(t, "the record after reconnecting", func() bool { _, ok := text(t, store, "at://did:plc:bob/app.test.note/3kddd"); return ok })
		if subs := js.Subscriptions(); subs[len(subs)-1].Cursor == 0 {
			t.Fatal("reconnected without a cursor")
		}

		// The connection changes are in the event log, under the source's
		// name, with the server's address.
		events, _, err := store.ListEvents(context.Background(), storage.EventFilter{Category: "source", Limit: 50})
		if err != nil {
			t.Fatal(err)
		}
		var connected, disconnected int
		for _, e := range events {
			var detail struct{ Source, URL string }
			if err := json.Unmarshal(e.Detail, &detail); err != nil || e.Subject != "jetstream" || detail.Source != "jetstream" || detail.URL != js.URL {
				t.Fatalf("event %s: subject %q, detail %s", e.Type, e.Subject, e.Detail)
			}
			switch e.Type {
			case "source.connected":
				connected++
			case "source.disconnected":
				disconnected++
			}
		}
		if connected < 3 || disconnected < 2 {
			t.Fatalf("event log: %d connected, %d disconnected", connected, disconnected)
		}

		// The position is stored under the source's own key only.
		if c, err := store.GetStreamCursor(context.Background(), ingest.CursorKey("jetstream")); err != nil || c == 0 {
			t.Fatalf("stored cursor %d, %v", c, err)
		}
		if _, err := store.GetStreamCursor(context.Background(), "jetstream"); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("a cursor under the bare name: %v", err)
		}
	})
}

func TestJetstreamResumesAfterRestart(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		store := open(t)
		js := jetstreamtest.New(t)
		app := startApp(t, store, appview.Config{Ingest: appview.IngestConfig{JetstreamURL: js.URL}})
		putLexicon(t, app, "app.test.note")
		eventually(t, "a subscription", func() bool { return js.Connected() == 1 })
		js.Commit("did:plc:a", "create", "app.test.note", "1", "3kaaaaaaaaaa1", cid, note("before"))
		eventually(t, "the first record", func() bool { _, ok := text(t, store, "at://did:plc:a/app.test.note/1"); return ok })
		stop(t, app)

		// Events published while Lexview is down arrive after the restart.
		for i := range 50 {
			js.Commit("did:plc:a", "create", "app.test.note", fmt.Sprintf("down%02d", i), "3kaaaaaaaab"+fmt.Sprintf("%02d", i), cid, note("while down"))
		}
		app = startApp(t, store, appview.Config{Ingest: appview.IngestConfig{JetstreamURL: js.URL}})
		defer stop(t, app)
		eventually(t, "the missed records", func() bool {
			n, _ := store.CountRecords(context.Background(), "app.test.note")
			return n == 51
		})
		subs := js.Subscriptions()
		if subs[len(subs)-1].Cursor == 0 {
			t.Fatal("the restart did not resume from the stored cursor")
		}
	})
}

// TestStaleCursorStartsLive checks that a stored cursor older than the
// replay window is not used.
func TestStaleCursorStartsLive(t *testing.T) {
	t.Parallel()
	store := storagetest.SQLite(t)
	old := time.Now().Add(-48 * time.Hour).UnixMicro()
	if err := store.ApplyBatch(context.Background(), storage.Batch{Cursors: []storage.StreamCursor{{Name: ingest.CursorKey(ingest.JetstreamName), Value: old}}}); err != nil {
		t.Fatal(err)
	}
	js := jetstreamtest.New(t)
	app := startApp(t, store, appview.Config{Ingest: appview.IngestConfig{EventSource: &ingest.Jetstream{URL: js.URL}}})
	defer stop(t, app)
	putLexicon(t, app, "app.test.note")
	eventually(t, "a subscription", func() bool { return js.Connected() == 1 })
	// Live means "from now" (minus the rewind), never the stale position.
	if c := js.Subscriptions()[0].Cursor; c < time.Now().Add(-time.Minute).UnixMicro() {
		t.Fatalf("used a stale cursor %d", c)
	}
	eventually(t, "the live starting point to be stored", func() bool {
		got, err := store.GetStreamCursor(context.Background(), ingest.CursorKey(ingest.JetstreamName))
		return err == nil && got > old
	})
}

// TestJetstreamResumesAcrossTheCursorMigration: an instance that stored its
// Jetstream position under the name used before migration 10 ("jetstream")
// resumes exactly there after the upgrade.
func TestJetstreamResumesAcrossTheCursorMigration(t *testing.T) {
	t.Parallel()
	for name, open := range map[string]func(testing.TB) storagetest.Migrator{
		"sqlite":   func(t testing.TB) storagetest.Migrator { return storagetest.SQLiteUnmigrated(t) },
		"postgres": func(t testing.TB) storagetest.Migrator { return storagetest.PostgresUnmigrated(t) },
	} {
		t.Run(name, func(t *testing.T) {
			store := open(t)
			ctx := context.Background()
			if err := store.MigrateTo(ctx, 9); err != nil {
				t.Fatal(err)
			}
			stored := time.Now().Add(-time.Minute).UnixMicro()
			if err := store.ApplyBatch(ctx, storage.Batch{Cursors: []storage.StreamCursor{{Name: "jetstream", Value: stored}}}); err != nil {
				t.Fatal(err)
			}
			js := jetstreamtest.New(t)
			app := startApp(t, store, appview.Config{Ingest: appview.IngestConfig{JetstreamURL: js.URL}}) // New migrates
			defer stop(t, app)
			putLexicon(t, app, "app.test.note")
			eventually(t, "a subscription", func() bool { return js.Connected() == 1 })
			if got, want := js.Subscriptions()[0].Cursor, stored-(3*time.Second).Microseconds(); got != want {
				t.Fatalf("subscribed from %d, want the stored position minus the rewind, %d", got, want)
			}
		})
	}
}

func TestCursorKey(t *testing.T) {
	t.Parallel()
	// Migration 10 (storage/*/migrations/0010_source_cursors.sql) moves the
	// Jetstream cursor to this key.
	if got := ingest.CursorKey(ingest.JetstreamName); got != "source:jetstream" {
		t.Fatalf("CursorKey(jetstream) = %q", got)
	}
	for _, name := range []string{"jetstream", "firehose", "labeler.did-plc-abc", "a", "x_1"} {
		if err := ingest.CheckName(name); err != nil {
			t.Errorf("%q: %v", name, err)
		}
	}
	for _, name := range []string{"", "Jetstream", "a b", "-x", "source:x", "é", strings.Repeat("a", 65)} {
		if err := ingest.CheckName(name); err == nil {
			t.Errorf("%q accepted", name)
		}
	}
}
