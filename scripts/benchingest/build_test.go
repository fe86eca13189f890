package main

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseIndexSpecs(t *testing.T) {
	got, err := parseIndexSpecs(" app.bench.post:createdAt, app.bench.post:text:text,app.bench.like:subject.uri:value,")
	if err != nil {
		t.Fatal(err)
	}
	want := []indexSpec{
		{collPost, "createdAt", "value"},
		{collPost, "text", "text"},
		{collLike, "subject.uri", "value"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if got, err := parseIndexSpecs(""); err != nil || got != nil {
		t.Fatalf("empty: %v, %v", got, err)
	}
	for in, msg := range map[string]string{
		"app.bench.post":                          "want collection:path",
		"app.bench.post:":                         "want collection:path",
		"app.bench.post:a:value:x":                "want collection:path",
		"app.bsky.feed.post:text":                 "none of the stream's",
		"app.bench.post:text:fulltext":            "kind must be value or text",
		"app.bench.post:text,app.bench.post:text": "listed twice",
	} {
		if _, err := parseIndexSpecs(in); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: error %v, want one saying %q", in, err, msg)
		}
	}
}

// TestBuildSummary: the records are summed, the duration runs from the
// first declaration to the last index ready, and an index not ready makes
// it unknown.
func TestBuildSummary(t *testing.T) {
	list := []fieldIndex{
		{State: "ready", Done: 300, CreatedAt: "2026-03-04T05:06:07.500Z", UpdatedAt: "2026-03-04T05:06:10.000Z"},
		{State: "ready", Done: 200, CreatedAt: "2026-03-04T05:06:07.600Z", UpdatedAt: "2026-03-04T05:06:12.250Z"},
	}
	records, took, ok := buildSummary(list)
	if records != 500 || took != 4750*time.Millisecond || !ok {
		t.Fatalf("got %d records, %s, %v; want 500, 4.75s, true", records, took, ok)
	}
	list[1].State = "building"
	if records, took, ok := buildSummary(list); records != 500 || took != 0 || ok {
		t.Fatalf("with one building: %d, %s, %v; want 500, 0, false", records, took, ok)
	}
	list[1] = fieldIndex{State: "ready", CreatedAt: "yesterday", UpdatedAt: "today"}
	if _, _, ok := buildSummary(list); ok {
		t.Fatal("unparsable timestamps: ok")
	}
	if _, _, ok := buildSummary(nil); ok {
		t.Fatal("no index: ok")
	}
}
