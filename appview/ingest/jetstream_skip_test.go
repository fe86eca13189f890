package ingest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/ingest"
	"github.com/lexview/lexview/appview/internal/testing/metricstest"
	"github.com/lexview/lexview/internal/jetstreamtest"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// skipEntry is the detail of a source.event_skipped entry.
type skipEntry struct {
	Source     string `json:"source"`
	Reason     string `json:"reason"`
	Position   int64  `json:"position"`
	Bytes      int64  `json:"bytes"`
	DID        string `json:"did"`
	Collection string `json:"collection"`
	RKey       string `json:"rkey"`
	Error      string `json:"error"`
}

// skips lists the source.event_skipped entries, oldest first.
func skips(t *testing.T, store storage.Store) []skipEntry {
	t.Helper()
	events, _, err := store.ListEvents(context.Background(), storage.EventFilter{Type: "source.event_skipped", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]skipEntry, len(events))
	for i, e := range events {
		if e.Subject != "jetstream" || e.Severity != "warn" {
			t.Fatalf("skip entry: subject %q, severity %q", e.Subject, e.Severity)
		}
		if err := json.Unmarshal(e.Detail, &out[len(events)-1-i]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// skipped reads lexview_events_skipped_total for Jetstream and reason.
func skipped(t *testing.T, reg *prometheus.Registry, reason string) float64 {
	t.Helper()
	n, _ := metricstest.Value(t, reg, "lexview_events_skipped_total", map[string]string{"source": "jetstream", "reason": reason})
	return n
}

func indexed(t *testing.T, store storage.Store, uri string) bool {
	t.Helper()
	_, ok := text(t, store, uri)
	return ok
}

func storedCursor(t *testing.T, store storage.Store) int64 {
	t.Helper()
	c, _ := store.GetStreamCursor(context.Background(), ingest.CursorKey(ingest.JetstreamName))
	return c
}

// TestJetstreamSkipsOversizedEvent: an event over the 4 MiB decoding limit
// used to end the connection, and the reconnection met it again, for ever:
// nothing after it was indexed. Now it is read through and skipped (event
// log, metrics), its position is stored, the events around it are
// indexed, and a reconnection that replays it neither stops on it nor
// records it again.
func TestJetstreamSkipsOversizedEvent(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		store := open(t)
		js := jetstreamtest.New(t)
		reg := prometheus.NewRegistry()
		app := startApp(t, store, appview.Config{
			Ingest:  appview.IngestConfig{JetstreamURL: js.URL},
			Metrics: appview.MetricsConfig{Registerer: reg},
		})
		defer stop(t, app)
		putLexicon(t, app, "app.test.note")
		eventually(t, "a subscription", func() bool { return js.Connected() == 1 })

		js.Commit("did:plc:alice", "create", "app.test.note", "3kone", "3kaaaaaaaaaa1", cid, note("before"))
		big := js.Commit("did:plc:alice", "create", "app.test.note", "3kbig", "3kaaaaaaaaaa2", cid, note(strings.Repeat("x", 5<<20)))
		js.Commit("did:plc:alice", "create", "app.test.note", "3ktwo", "3kaaaaaaaaaa3", cid, note("after"))
		eventually(t, "the event after the oversized one", func() bool { return indexed(t, store, "at://did:plc:alice/app.test.note/3ktwo") })
		if !indexed(t, store, "at://did:plc:alice/app.test.note/3kone") || indexed(t, store, "at://did:plc:alice/app.test.note/3kbig") {
			t.Fatal("wrong records indexed around the oversized event")
		}
		s := skips(t, store)
		if len(s) != 1 || s[0].Reason != "too_large" || s[0].Position != big || s[0].Bytes <= 5<<20 ||
			s[0].DID != "did:plc:alice" || s[0].Collection != "app.test.note" || s[0].RKey != "3kbig" || s[0].Source != "jetstream" {
			t.Fatalf("skips: %+v", s)
		}
		if n := skipped(t, reg, "too_large"); n != 1 {
			t.Fatalf("lexview_events_skipped_total = %v", n)
		}

		// The reconnection replays from 3 s before the cursor, the oversized
		// event included: it is skipped again, not recorded again.
		js.DropAll()
		js.Commit("did:plc:alice", "create", "app.test.note", "3kthree", "3kaaaaaaaaaa4", cid, note("after the reconnection"))
		eventually(t, "the event after the reconnection", func() bool { return indexed(t, store, "at://did:plc:alice/app.test.note/3kthree") })
		subs := js.Subscriptions()
		if last := subs[len(subs)-1]; len(subs) < 2 || last.Cursor >= big {
			t.Fatalf("the reconnection did not replay the oversized event: %+v (event at %d)", last, big)
		}
		if s := skips(t, store); len(s) != 1 {
			t.Fatalf("the replayed event was recorded again: %+v", s)
		}
		if n := skipped(t, reg, "too_large"); n != 1 {
			t.Fatalf("lexview_events_skipped_total = %v after the replay", n)
		}
	})
}

// TestJetstreamSkipsUndecodableEvents: messages that are not JSON, are cut
// short, or hold a field of the wrong type are skipped and recorded with
// what could be read of them; the position of one that names it is
// stored, so the cursor moves past it even when it is the last event.
func TestJetstreamSkipsUndecodableEvents(t *testing.T) {
	t.Parallel()
	store := storagetest.SQLite(t)
	js := jetstreamtest.New(t)
	reg := prometheus.NewRegistry()
	app := startApp(t, store, appview.Config{
		Ingest:  appview.IngestConfig{JetstreamURL: js.URL},
		Metrics: appview.MetricsConfig{Registerer: reg},
	})
	defer stop(t, app)
	putLexicon(t, app, "app.test.note")
	eventually(t, "a subscription", func() bool { return js.Connected() == 1 })

	raw := func(format string) func(int64) []byte {
		return func(us int64) []byte { return []byte(fmt.Sprintf(format, us)) }
	}
	js.Commit("did:plc:bob", "create", "app.test.note", "3kone", "3kaaaaaaaaaa1", cid, note("before"))
	cut := js.PublishBytes("app.test.note", raw(`{"did":"did:plc:bob","time_us":%d,"kind":"commit","commit":{"rev":"3kaaaaaaaaaa2","operation":"create","collection":"app.test.note","rkey":"3kcut","record":{"text":"cut sh`))
	typed := js.PublishBytes("app.test.note", raw(`{"did":"did:plc:bob","time_us":%d,"kind":"commit","commit":{"rev":7,"operation":"create","collection":"app.test.note","rkey":"3ktyped","record":{"$type":"app.test.note","text":"x"},"cid":"`+cid+`"}}`))
	js.PublishBytes("", raw(`{"did":"did:plc:bob","time_us":"%d","kind":"identity"}`)) // time_us a string: no position
	js.PublishBytes("", func(int64) []byte { return []byte("\xff\xfe not JSON at all") })
	js.Commit("did:plc:bob", "create", "app.test.note", "3ktwo", "3kaaaaaaaaaa3", cid, note("after"))
	last := js.PublishBytes("", raw(`{"did":"did:plc:bob","time_us":%d,"kind":"account","account":{"active":"no"}}`))

	eventually(t, "the event after the undecodable ones", func() bool { return indexed(t, store, "at://did:plc:bob/app.test.note/3ktwo") })
	eventually(t, "the cursor to move past the last, undecodable, event", func() bool { return storedCursor(t, store) == last })
	for _, rkey := range []string{"3kcut", "3ktyped"} {
		if indexed(t, store, "at://did:plc:bob/app.test.note/"+rkey) {
			t.Fatalf("%s was indexed", rkey)
		}
	}
	s := skips(t, store)
	if len(s) != 5 {
		t.Fatalf("skips: %+v", s)
	}
	for i, want := range []skipEntry{
		{Position: cut, DID: "did:plc:bob", Collection: "app.test.note", RKey: "3kcut"},
		{Position: typed, DID: "did:plc:bob", Collection: "app.test.note", RKey: "3ktyped"},
		{Position: 0, DID: "did:plc:bob"},
		{Position: 0},
		{Position: last, DID: "did:plc:bob"},
	} {
		got := s[i]
		if got.Reason != "undecodable" || got.Position != want.Position || got.DID != want.DID ||
			got.Collection != want.Collection || got.RKey != want.RKey || got.Error == "" || got.Bytes == 0 {
			t.Errorf("skip %d: %+v, want %+v", i, got, want)
		}
	}
	if n := skipped(t, reg, "undecodable"); n != 5 {
		t.Fatalf("lexview_events_skipped_total = %v", n)
	}
}

// TestJetstreamSkipsPastEventTooLargeToReadThrough: an event larger than
// MaxSkipSize ends the connection; the next one resumes just past it, and
// what follows is indexed. An event between the two limits whose position
// comes after its record (so cannot be read) is skipped in place.
func TestJetstreamSkipsPastEventTooLargeToReadThrough(t *testing.T) {
	t.Parallel()
	store := storagetest.SQLite(t)
	js := jetstreamtest.New(t)
	reg := prometheus.NewRegistry()
	app := startApp(t, store, appview.Config{
		Metrics: appview.MetricsConfig{Registerer: reg},
		Ingest:  appview.IngestConfig{EventSource: &ingest.Jetstream{URL: js.URL, MaxMessageSize: 1 << 10, MaxSkipSize: 8 << 10, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}},
	})
	defer stop(t, app)
	putLexicon(t, app, "app.test.note")
	eventually(t, "a subscription", func() bool { return js.Connected() == 1 })

	js.Commit("did:plc:carol", "create", "app.test.note", "3kone", "3kaaaaaaaaaa1", cid, note("before"))
	huge := js.Commit("did:plc:carol", "create", "app.test.note", "3khuge", "3kaaaaaaaaaa2", cid, note(strings.Repeat("y", 64<<10)))
	js.PublishBytes("app.test.note", func(us int64) []byte {
		return []byte(fmt.Sprintf(`{"kind":"commit","commit":{"collection":"app.test.note","record":{"text":%q}},"time_us":%d}`, strings.Repeat("z", 2<<10), us))
	})
	js.Commit("did:plc:carol", "create", "app.test.note", "3ktwo", "3kaaaaaaaaaa3", cid, note("after"))
	eventually(t, "the event after the huge one", func() bool { return indexed(t, store, "at://did:plc:carol/app.test.note/3ktwo") })
	if !indexed(t, store, "at://did:plc:carol/app.test.note/3kone") {
		t.Fatal("the event before the huge one was lost")
	}
	resumed := false
	for _, sub := range js.Subscriptions() {
		resumed = resumed || sub.Cursor == huge+1
	}
	if !resumed {
		t.Fatalf("no connection resumed just past the huge event (%d): %+v", huge, js.Subscriptions())
	}
	s := skips(t, store)
	if len(s) != 2 || s[0].Reason != "too_large" || s[0].Position != huge || s[0].RKey != "3khuge" ||
		s[1].Reason != "too_large" || s[1].Position != 0 || s[1].Collection != "app.test.note" {
		t.Fatalf("skips: %+v", s)
	}
	if n := skipped(t, reg, "too_large"); n != 2 {
		t.Fatalf("lexview_events_skipped_total = %v", n)
	}
}
