package storagetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/lexview/lexview/storage"
)

// RunAdmin runs the suite for the operator-facing stores: the event log
// (EventStore), instance settings and blobs (SettingsStore) and the
// OperatorStore. Each subtest gets a fresh store.
func RunAdmin(t *testing.T, open func(t testing.TB) storage.Store) {
	tests := []storeCase{
		{"EventLogRoundTripAndFilters", testEventLogFilters},
		{"EventLogCategoryPrefix", testEventLogCategory},
		{"EventLogPaging", testEventLogPaging},
		{"EventLogPurge", testEventLogPurge},
		{"SettingsRoundTrip", testSettingsRoundTrip},
		{"SettingBlobs", testSettingBlobs},
		{"CollectionCountsAndDelete", testOperatorCollections},
		{"DBInfo", testOperatorDBInfo},
	}
	runCases(t, open, tests)
}

func appendEventsT(t *testing.T, s storage.Store, events ...storage.Event) {
	t.Helper()
	if err := s.AppendEvents(context.Background(), events); err != nil {
		t.Fatalf("AppendEvents: %v", err)
	}
}

func listEventsT(t *testing.T, s storage.Store, f storage.EventFilter) ([]storage.Event, bool) {
	t.Helper()
	if f.Limit == 0 {
		f.Limit = 100
	}
	got, more, err := s.ListEvents(context.Background(), f)
	if err != nil {
		t.Fatalf("ListEvents(%+v): %v", f, err)
	}
	return got, more
}

func eventTypes(events []storage.Event) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.Type
	}
	return out
}

func testEventLogFilters(t *testing.T, s storage.Store) {
	if err := s.AppendEvents(context.Background(), nil); err != nil {
		t.Fatalf("appending nothing: %v", err)
	}
	appendEventsT(t, s,
		storage.Event{Type: "lexicon.created", Severity: "info", ActorDID: "did:plc:alice", Subject: "app.test.post",
			Detail: []byte(`{"revision":1,"nested":{"a":[1,2]}}`), CreatedAt: base},
		storage.Event{Type: "script.error", Severity: "error", Subject: "app.test.query",
			Detail: []byte(`{"error":"boom"}`), CreatedAt: base.Add(time.Second)},
	)
	appendEventsT(t, s, storage.Event{Type: "lexicon.deleted", Severity: "warn", Subject: "app.test.post", CreatedAt: base.Add(2 * time.Second)})

	all, more := listEventsT(t, s, storage.EventFilter{})
	if more || !slices.Equal(eventTypes(all), []string{"lexicon.deleted", "script.error", "lexicon.created"}) {
		t.Fatalf("newest first: %v more=%v", eventTypes(all), more)
	}
	first := all[2]
	if first.ID == "" || first.ID == all[1].ID || first.ActorDID != "did:plc:alice" || first.Subject != "app.test.post" ||
		first.Severity != "info" || !first.CreatedAt.Equal(base) {
		t.Fatalf("round trip: %+v", first)
	}
	sameJSON(t, first.Detail, []byte(`{"revision":1,"nested":{"a":[1,2]}}`))
	if all[1].ActorDID != "" {
		t.Fatalf("absent actor came back as %q", all[1].ActorDID)
	}
	sameJSON(t, all[0].Detail, []byte(`{}`)) // no detail stores {}

	for name, tc := range map[string]struct {
		f    storage.EventFilter
		want []string
	}{
		"type":               {storage.EventFilter{Type: "script.error"}, []string{"script.error"}},
		"type is exact":      {storage.EventFilter{Type: "script"}, []string{}},
		"severity":           {storage.EventFilter{Severity: "warn"}, []string{"lexicon.deleted"}},
		"subject":            {storage.EventFilter{Subject: "app.test.post"}, []string{"lexicon.deleted", "lexicon.created"}},
		"subject is exact":   {storage.EventFilter{Subject: "app.test"}, []string{}},
		"category":           {storage.EventFilter{Category: "lexicon"}, []string{"lexicon.deleted", "lexicon.created"}},
		"filters combine":    {storage.EventFilter{Category: "lexicon", Severity: "info"}, []string{"lexicon.created"}},
		"type and category":  {storage.EventFilter{Type: "script.error", Category: "lexicon"}, []string{}},
		"subject + severity": {storage.EventFilter{Subject: "app.test.query", Severity: "error"}, []string{"script.error"}},
	} {
		got, _ := listEventsT(t, s, tc.f)
		if !slices.Equal(eventTypes(got), tc.want) {
			t.Errorf("%s: got %v, want %v", name, eventTypes(got), tc.want)
		}
	}
}

func testEventLogCategory(t *testing.T, s storage.Store) {
	types := []string{"lexicon", "lexicon.created", "lexicon.deleted.hard", "lexicons.x", "lexiconfoo", "Lexicon.created",
		"lex.icon", "a_b.c", "axb.c", "a%.d", "ab.e"}
	for i, typ := range types {
		appendEventsT(t, s, storage.Event{Type: typ, Severity: "info", CreatedAt: base.Add(time.Duration(i) * time.Second)})
	}
	for category, want := range map[string][]string{
		"lexicon":         {"lexicon.deleted.hard", "lexicon.created", "lexicon"},
		"lexicon.created": {"lexicon.created"},
		"lexicon.deleted": {"lexicon.deleted.hard"},
		"lex":             {"lex.icon"},
		"Lexicon":         {"Lexicon.created"},
		// LIKE wildcards in a category are literal characters.
		"a_b": {"a_b.c"},
		"a%":  {"a%.d"},
		"%":   {},
		"_":   {},
	} {
		got, _ := listEventsT(t, s, storage.EventFilter{Category: category})
		if !slices.Equal(eventTypes(got), want) {
			t.Errorf("category %q: got %v, want %v", category, eventTypes(got), want)
		}
	}
}

func testEventLogPaging(t *testing.T, s storage.Store) {
	const n = 7
	for i := range n {
		sev := "info"
		if i%2 == 1 {
			sev = "warn"
		}
		// Equal timestamps: paging follows the id, not the time.
		appendEventsT(t, s, storage.Event{Type: fmt.Sprintf("test.e%d", i), Severity: sev, CreatedAt: base})
	}
	var got []string
	f := storage.EventFilter{Limit: 3}
	for pages := 0; ; pages++ {
		if pages > n {
			t.Fatal("paging does not end")
		}
		page, more := listEventsT(t, s, f)
		if len(page) > 3 {
			t.Fatalf("page of %d", len(page))
		}
		got = append(got, eventTypes(page)...)
		if !more {
			break
		}
		f.Before = page[len(page)-1].ID
	}
	want := []string{"test.e6", "test.e5", "test.e4", "test.e3", "test.e2", "test.e1", "test.e0"}
	if !slices.Equal(got, want) {
		t.Fatalf("pages: %v", got)
	}
	// An exact fit reports no more.
	page, more := listEventsT(t, s, storage.EventFilter{Limit: n})
	if len(page) != n || more {
		t.Fatalf("exact page: %d more=%v", len(page), more)
	}
	// Paging with a filter.
	f = storage.EventFilter{Severity: "warn", Limit: 2}
	page, more = listEventsT(t, s, f)
	if !slices.Equal(eventTypes(page), []string{"test.e5", "test.e3"}) || !more {
		t.Fatalf("filtered page 1: %v %v", eventTypes(page), more)
	}
	f.Before = page[1].ID
	page, more = listEventsT(t, s, f)
	if !slices.Equal(eventTypes(page), []string{"test.e1"}) || more {
		t.Fatalf("filtered page 2: %v %v", eventTypes(page), more)
	}
	if _, _, err := s.ListEvents(context.Background(), storage.EventFilter{Limit: 3, Before: "not-an-id"}); !errors.Is(err, storage.ErrInvalidCursor) {
		t.Fatalf("bad position: %v", err)
	}
}

func testEventLogPurge(t *testing.T, s storage.Store) {
	ctx := context.Background()
	appendEventsT(t, s,
		storage.Event{Type: "test.old", Severity: "info", CreatedAt: base.Add(-48 * time.Hour)},
		storage.Event{Type: "test.older", Severity: "info", CreatedAt: base.Add(-72 * time.Hour)},
		storage.Event{Type: "test.edge", Severity: "info", CreatedAt: base.Add(-24 * time.Hour)},
		storage.Event{Type: "test.new", Severity: "info", CreatedAt: base},
	)
	n, err := s.PurgeEvents(ctx, base.Add(-24*time.Hour))
	if err != nil || n != 2 {
		t.Fatalf("purge: %d, %v", n, err)
	}
	got, _ := listEventsT(t, s, storage.EventFilter{})
	if !slices.Equal(eventTypes(got), []string{"test.new", "test.edge"}) {
		t.Fatalf("after purge: %v", eventTypes(got))
	}
	if n, err := s.PurgeEvents(ctx, base.Add(-24*time.Hour)); err != nil || n != 0 {
		t.Fatalf("second purge: %d, %v", n, err)
	}
}

func testSettingsRoundTrip(t *testing.T, s storage.Store) {
	ctx := context.Background()
	if all, err := s.ListSettings(ctx); err != nil || len(all) != 0 {
		t.Fatalf("empty list: %v, %v", all, err)
	}
	if _, err := s.GetSetting(ctx, "app_name"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("unset: %v", err)
	}
	for k, v := range map[string]string{"app_name": "First", "privacy_policy_url": "https://x.test/p", "empty": ""} {
		if err := s.PutSetting(ctx, k, v); err != nil {
			t.Fatalf("put %s: %v", k, err)
		}
	}
	if err := s.PutSetting(ctx, "app_name", "Second ✓"); err != nil {
		t.Fatal(err)
	}
	if v, err := s.GetSetting(ctx, "app_name"); err != nil || v != "Second ✓" {
		t.Fatalf("overwrite: %q, %v", v, err)
	}
	if v, err := s.GetSetting(ctx, "empty"); err != nil || v != "" {
		t.Fatalf("empty value: %q, %v", v, err)
	}
	all, err := s.ListSettings(ctx)
	if err != nil || len(all) != 3 || all["app_name"] != "Second ✓" || all["privacy_policy_url"] != "https://x.test/p" {
		t.Fatalf("list: %v, %v", all, err)
	}
	if err := s.DeleteSetting(ctx, "app_name"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSetting(ctx, "app_name"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	if _, err := s.GetSetting(ctx, "app_name"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
}

func testSettingBlobs(t *testing.T, s storage.Store) {
	ctx := context.Background()
	if _, err := s.GetBlob(ctx, "logo"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("unset blob: %v", err)
	}
	if err := s.DeleteBlob(ctx, "logo"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("deleting an unset blob: %v", err)
	}
	data := []byte{0x89, 'P', 'N', 'G', 0, 0xff, 0xfe, '\'', '\\', 0}
	before := time.Now().Add(-time.Minute)
	if err := s.PutBlob(ctx, "logo", storage.Blob{ContentType: "image/png", Data: data}); err != nil {
		t.Fatal(err)
	}
	b, err := s.GetBlob(ctx, "logo")
	if err != nil || b.ContentType != "image/png" || !bytes.Equal(b.Data, data) || b.UpdatedAt.Before(before) {
		t.Fatalf("round trip: %+v, %v", b, err)
	}
	big := bytes.Repeat([]byte{0xab, 0x00, 0x01}, 400_000)
	if err := s.PutBlob(ctx, "logo", storage.Blob{ContentType: "image/gif", Data: big}); err != nil {
		t.Fatal(err)
	}
	if b, err := s.GetBlob(ctx, "logo"); err != nil || b.ContentType != "image/gif" || !bytes.Equal(b.Data, big) {
		t.Fatalf("overwrite: %s %d bytes, %v", b.ContentType, len(b.Data), err)
	}
	// Blobs and settings are separate namespaces.
	if _, err := s.GetSetting(ctx, "logo"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("blob visible as a setting: %v", err)
	}
	if err := s.DeleteBlob(ctx, "logo"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetBlob(ctx, "logo"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
}

func testOperatorCollections(t *testing.T, s storage.Store) {
	ctx := context.Background()
	if counts, err := s.CollectionCounts(ctx); err != nil || len(counts) != 0 {
		t.Fatalf("empty: %v, %v", counts, err)
	}
	var ops []storage.RecordOp
	for i := range 3 {
		ops = append(ops, put(Rec("did:plc:a", "app.test.big", fmt.Sprint("b", i), base, nil)))
	}
	for i := range 2 {
		ops = append(ops, put(Rec("did:plc:a", "app.test.mid", fmt.Sprint("m", i), base, nil)))
		ops = append(ops, put(Rec("did:plc:b", "app.test.also", fmt.Sprint("a", i), base, nil)))
	}
	apply(t, s, ops...)
	counts, err := s.CollectionCounts(ctx)
	want := []storage.CollectionCount{{Collection: "app.test.big", Count: 3}, {Collection: "app.test.also", Count: 2}, {Collection: "app.test.mid", Count: 2}}
	if err != nil || !slices.Equal(counts, want) {
		t.Fatalf("counts: %v, %v", counts, err)
	}
	n, err := s.DeleteCollection(ctx, "app.test.mid")
	if err != nil || n != 2 {
		t.Fatalf("delete collection: %d, %v", n, err)
	}
	if n, err := s.DeleteCollection(ctx, "app.test.mid"); err != nil || n != 0 {
		t.Fatalf("delete again: %d, %v", n, err)
	}
	if count(t, s, "app.test.mid") != 0 || count(t, s, "app.test.big") != 3 || count(t, s, "") != 5 {
		t.Fatal("delete collection touched the wrong records")
	}
	counts, _ = s.CollectionCounts(ctx)
	if !slices.Equal(counts, want[:2]) {
		t.Fatalf("counts after delete: %v", counts)
	}
}

func testOperatorDBInfo(t *testing.T, s storage.Store) {
	info, err := s.DBInfo(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.Dialect != s.Dialect() || info.Version == "" || info.Location == "" || info.SizeBytes <= 0 || info.WALSizeBytes < 0 {
		t.Fatalf("info: %+v", info)
	}
	switch s.Dialect() {
	case "sqlite":
		if info.FreeDiskBytes <= 0 {
			t.Fatalf("free disk unknown on SQLite: %+v", info)
		}
	case "postgres":
		if info.FreeDiskBytes != -1 {
			t.Fatalf("free disk on PostgreSQL: %+v", info)
		}
	}
}
