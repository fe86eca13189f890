package events_test

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

var base = time.Date(2026, 3, 4, 5, 6, 7, 890000000, time.UTC)

type entry struct {
	ID        string         `json:"id"`
	EventType string         `json:"event_type"`
	Severity  string         `json:"severity"`
	ActorDID  *string        `json:"actor_did"`
	Subject   *string        `json:"subject"`
	Detail    map[string]any `json:"detail"`
	CreatedAt string         `json:"created_at"`
}

type page struct {
	Events []entry `json:"events"`
	Cursor *string `json:"cursor"`
}

func seed(t *testing.T, s storage.Store, events ...storage.Event) {
	t.Helper()
	for i := range events {
		if events[i].Severity == "" {
			events[i].Severity = "info"
		}
		if events[i].CreatedAt.IsZero() {
			events[i].CreatedAt = base
		}
	}
	if err := s.AppendEvents(context.Background(), events); err != nil {
		t.Fatal(err)
	}
}

func list(t *testing.T, su *testenv.Admin, query string) page {
	t.Helper()
	r := su.Do(t, "GET", "/admin/events?"+query, nil)
	if r.Status != 200 {
		t.Fatalf("GET /admin/events?%s: %d %s", query, r.Status, r.Raw)
	}
	var p page
	r.JSON(t, &p)
	if p.Events == nil {
		t.Fatalf("events is not an array: %s", r.Raw)
	}
	return p
}

func types(p page) []string {
	out := make([]string, len(p.Events))
	for i, e := range p.Events {
		out[i] = e.EventType
	}
	return out
}

func TestEventLog(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env := testenv.New(t, open(t), appview.Config{})
		su := env.Bootstrap(t)
		seed(t, env.Store,
			storage.Event{Type: "lexicon.created", ActorDID: "did:plc:alice", Subject: "app.test.post",
				Detail: []byte(`{"revision":1}`), CreatedAt: base},
			storage.Event{Type: "lexicons.x", Subject: "app.test.post", CreatedAt: base.Add(time.Second)},
			storage.Event{Type: "lexiconfoo", Severity: "warn", CreatedAt: base.Add(2 * time.Second)},
			storage.Event{Type: "lexicon", Severity: "warn", CreatedAt: base.Add(3 * time.Second)},
			storage.Event{Type: "script.error", Severity: "error", Subject: "app.test.query",
				Detail:    []byte(`{"error":"boom","script_source":"x","input":{},"caller_did":"did:plc:bob","method":"app.test.query"}`),
				CreatedAt: base.Add(4 * time.Second)},
		)

		all := list(t, su, "")
		if all.Cursor != nil {
			t.Fatalf("cursor on the only page: %v", *all.Cursor)
		}
		// The instance key made at first boot is the oldest entry.
		want := []string{"script.error", "lexicon", "lexiconfoo", "lexicons.x", "lexicon.created", "user.bootstrapped",
			"instance_key.created"}
		if !slices.Equal(types(all), want) {
			t.Fatalf("newest first: %v", types(all))
		}
		created := all.Events[4]
		if created.ActorDID == nil || *created.ActorDID != "did:plc:alice" || created.Subject == nil || *created.Subject != "app.test.post" ||
			created.Severity != "info" || created.Detail["revision"] != float64(1) || created.CreatedAt != "2026-03-04T05:06:07.890Z" || created.ID == "" {
			t.Fatalf("entry: %+v", created)
		}
		if e := all.Events[2]; e.ActorDID != nil || e.Subject != nil || e.Detail == nil || len(e.Detail) != 0 {
			t.Fatalf("absent fields must be null and detail {}: %+v", e)
		}
		if boot := all.Events[5]; boot.ActorDID == nil || *boot.ActorDID != su.Account.DID.String() {
			t.Fatalf("bootstrap event: %+v", boot)
		}
		if d := all.Events[0].Detail; d["caller_did"] != "did:plc:bob" || d["method"] != "app.test.query" {
			t.Fatalf("script.error detail: %v", d)
		}

		for query, want := range map[string][]string{
			"category=lexicon":                         {"lexicon", "lexicon.created"},
			"category=lexicons":                        {"lexicons.x"},
			"category=lexicon.created":                 {"lexicon.created"},
			"category=lex":                             {},
			"category=Lexicon":                         {},
			"event_type=lexicon.created":               {"lexicon.created"},
			"event_type=lexicon":                       {"lexicon"},
			"event_type=script":                        {},
			"severity=warn":                            {"lexicon", "lexiconfoo"},
			"severity=error":                           {"script.error"},
			"severity=info&category=lexicon":           {"lexicon.created"},
			"subject=app.test.post":                    {"lexicons.x", "lexicon.created"},
			"subject=app.test.post&category=lexicon":   {"lexicon.created"},
			"subject=" + url.QueryEscape("app.test.%"): {},
		} {
			if got := types(list(t, su, query)); !slices.Equal(got, want) {
				t.Errorf("%s: got %v, want %v", query, got, want)
			}
		}

		otherScope := storage.EncodeCursor("records\x00app.test.post\x00", storage.Position{Time: base, URI: "1"})
		nonNumeric := storage.EncodeCursor("events", storage.Position{Time: base, URI: "abc"})
		for query, msg := range map[string]string{
			"severity=fatal":                     "severity must be info, warn or error",
			"severity=INFO":                      "severity must be info, warn or error",
			"limit=0":                            "limit must be an integer between 1 and 100",
			"limit=101":                          "limit must be an integer between 1 and 100",
			"limit=ten":                          "limit must be an integer between 1 and 100",
			"cursor=garbage":                     "invalid cursor",
			"cursor=":                            "invalid cursor",
			"cursor=" + otherScope:               "invalid cursor",
			"cursor=" + nonNumeric:               "invalid cursor",
			"cursor=" + url.QueryEscape("12345"): "invalid cursor",
		} {
			r := su.Do(t, "GET", "/admin/events?"+query, nil)
			if r.Status != 400 || r.Error(t) != msg {
				t.Errorf("%s: %d %s", query, r.Status, r.Raw)
			}
		}
	})
}

func TestEventLogPagination(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env := testenv.New(t, open(t), appview.Config{})
		su := env.Bootstrap(t)
		var seeded []storage.Event
		for i := range 7 {
			// Equal timestamps: the cursor must not depend on time order.
			seeded = append(seeded, storage.Event{Type: "test.page", Subject: fmt.Sprint("s", i), CreatedAt: base})
		}
		seed(t, env.Store, seeded...)

		var subjects []string
		query, pages := "event_type=test.page&limit=3", 0
		for {
			p := list(t, su, query)
			pages++
			if len(p.Events) > 3 {
				t.Fatalf("page of %d", len(p.Events))
			}
			for _, e := range p.Events {
				subjects = append(subjects, *e.Subject)
			}
			if p.Cursor == nil {
				break
			}
			if pages > 5 {
				t.Fatal("pagination does not end")
			}
			query = "event_type=test.page&limit=3&cursor=" + url.QueryEscape(*p.Cursor)
		}
		if pages != 3 || !slices.Equal(subjects, []string{"s6", "s5", "s4", "s3", "s2", "s1", "s0"}) {
			t.Fatalf("%d pages: %v", pages, subjects)
		}

		// A page that ends exactly at the last entry has a null cursor.
		if p := list(t, su, "event_type=test.page&limit=7"); len(p.Events) != 7 || p.Cursor != nil {
			t.Fatalf("exact page: %d events, cursor %v", len(p.Events), p.Cursor)
		}

		// The default page size is 50 and the maximum 100.
		var many []storage.Event
		for range 120 {
			many = append(many, storage.Event{Type: "test.many"})
		}
		seed(t, env.Store, many...)
		p := list(t, su, "event_type=test.many")
		if len(p.Events) != 50 || p.Cursor == nil {
			t.Fatalf("default page: %d events, cursor %v", len(p.Events), p.Cursor)
		}
		p = list(t, su, "event_type=test.many&limit=100&cursor="+url.QueryEscape(*p.Cursor))
		if len(p.Events) != 70 || p.Cursor != nil {
			t.Fatalf("second page: %d events, cursor %v", len(p.Events), p.Cursor)
		}
	})
}

func TestEventLogRecordsAdminActions(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env := testenv.New(t, open(t), appview.Config{})
		su := env.Bootstrap(t)
		doc := `{"lexicon":1,"id":"app.test.post","defs":{"main":{"type":"record","key":"tid","record":{"type":"object","properties":{}}}}}`
		if r := su.Do(t, "POST", "/admin/lexicons", map[string]any{"lexicon_json": doc}); r.Status != 201 {
			t.Fatalf("upload: %d %s", r.Status, r.Raw)
		}
		p := list(t, su, "category=lexicon")
		if len(p.Events) != 1 || p.Events[0].EventType != "lexicon.created" || *p.Events[0].Subject != "app.test.post" ||
			*p.Events[0].ActorDID != su.Account.DID.String() {
			t.Fatalf("audit: %+v", p.Events)
		}

		// events:read alone is enough to read the log.
		reader := env.AddAdmin(t, admins.EventsRead)
		if r := reader.Do(t, "GET", "/admin/events", nil); r.Status != 200 {
			t.Fatalf("events:read: %d %s", r.Status, r.Raw)
		}
		other := env.AddAdmin(t, admins.LexiconsRead)
		if r := other.Do(t, "GET", "/admin/events", nil); r.Status != 403 {
			t.Fatalf("without events:read: %d %s", r.Status, r.Raw)
		}
	})
}
