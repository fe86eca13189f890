package apptest_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lexview/lexview/appview/apptest"
)

// TestRun runs the tests of testdata/app: those whose names start with
// broken_ fail on purpose, and their reports say why; the others pass
// (a query over fixtures indexed through the record.create script, a
// procedure whose write to the PDS is asserted, record events that the
// script skips or rewrites).
func TestRun(t *testing.T) {
	t.Parallel()
	suite, err := apptest.Load("testdata/app")
	if err != nil {
		t.Fatal(err)
	}
	report := apptest.Run(context.Background(), suite, apptest.Options{})
	var out strings.Builder
	report.Print(&out)
	results := map[string]apptest.Result{}
	for _, r := range report.Results {
		results[r.Name] = r
	}
	for _, name := range []string{"queries", "procedures", "events"} {
		if r, ok := results[name]; !ok || !r.Passed() || r.Steps != len(testByName(t, suite, name).Steps) {
			t.Errorf("%s did not pass:\n%s", name, out.String())
		}
	}
	if report.Passed() || report.Failed() != 4 || len(report.Results) != 7 {
		t.Fatalf("failed %d of %d:\n%s", report.Failed(), len(report.Results), out.String())
	}

	body := results["broken_body"]
	if f := body.Failure; f == nil || f.Step != 2 || f.Label != "garden (query com.example.listNotes)" ||
		strings.Join(f.Diffs, "\n") != `$.notes[0].mood: missing, want "sunny"`+"\n"+
			`$.notes[0].text: want "gardening tomorrow", got "gardening today"` ||
		!strings.Contains(f.Got, `"text": "gardening today"`) {
		t.Errorf("broken_body: %+v", body.Failure)
	}
	writes := results["broken_writes"]
	if f := writes.Failure; f == nil || strings.Join(f.Diffs, "\n") != `writes: want 2, got 1`+"\n"+
		`writes[0].collection: want "com.example.other", got "com.example.note"`+"\n"+
		`writes[0].record.text: want "another note", got "a note"` ||
		!strings.Contains(f.Got, `"uri": "at://did:plc:alice/com.example.note/`) {
		t.Errorf("broken_writes: %+v", writes.Failure)
	}
	event := results["broken_event"]
	if f := event.Failure; f == nil || f.Label != "create event at://did:plc:alice/com.example.note/3kdddddddd223" ||
		strings.Join(f.Diffs, "\n") != "outcome: want applied, got skipped\n"+
			"records[at://did:plc:alice/com.example.note/3kdddddddd222].words: want 2, got 1\n"+
			"records[at://did:plc:alice/com.example.note/3kdddddddd223]: not stored" ||
		!strings.Contains(f.Got, `"at://did:plc:alice/com.example.note/3kdddddddd223": null`) {
		t.Errorf("broken_event: %+v", event.Failure)
	}
	fixture := results["broken_fixture"]
	if fixture.Err == nil || !strings.Contains(fixture.Err.Error(), "fixture at://did:plc:alice/com.example.note/3kcccccccc222: ") ||
		!strings.Contains(fixture.Err.Error(), "createdAt") || fixture.Steps != 0 {
		t.Errorf("broken_fixture: %v", fixture.Err)
	}

	for _, want := range []string{
		"PASS procedures (5 steps)\n",
		"FAIL broken_body (tests/broken_body.json)\n    step 2, garden (query com.example.listNotes):\n" +
			"      $.notes[0].mood: missing, want \"sunny\"\n",
		"    got:\n      {\n        \"notes\": [\n",
		"FAIL broken_fixture (tests/broken_fixture.json)\n    error: fixture at://",
		"FAIL: 4 of 7 tests failed\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}
}

// TestRunSelect: Options.Select runs only the tests it accepts, and
// Progress sees each result.
func TestRunSelect(t *testing.T) {
	t.Parallel()
	suite, err := apptest.Load("testdata/app")
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	report := apptest.Run(context.Background(), suite, apptest.Options{
		Select:   func(name string) bool { return name == "events" },
		Progress: func(r apptest.Result) { seen = append(seen, r.Name) },
	})
	if !report.Passed() || len(report.Results) != 1 || strings.Join(seen, ",") != "events" {
		t.Fatalf("results %+v, progress %v", report.Results, seen)
	}
}

// TestLoadErrors: a malformed test file is reported by file, and nothing
// runs.
func TestLoadErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, file, want string }{
		{"two kinds", `{"steps": [{"query": "com.example.listNotes", "procedure": "com.example.createNote"}]}`,
			"exactly one of query, procedure and event"},
		{"no steps", `{"steps": []}`, "no steps"},
		{"unknown field", `{"steps": [{"query": "com.example.listNotes", "expect": {"stauts": 200}}]}`, `unknown field "stauts"`},
		{"bad matcher", `{"steps": [{"query": "com.example.listNotes", "expect": {"body": {"a": {"$match": "("}}}}]}`, "$.a: error parsing regexp"},
		{"bad uri", `{"records": [{"uri": "at://alice.test/com.example.note/1", "record": {}}], "steps": [{"query": "com.example.listNotes"}]}`,
			"records[0]: uri"},
		{"bad cid", `{"records": [{"uri": "at://did:plc:a/com.example.note/1", "cid": "nope", "record": {}}], "steps": [{"query": "com.example.listNotes"}]}`,
			`records[0]: cid "nope"`},
		{"cid of a delete", `{"steps": [{"event": {"action": "delete", "uri": "at://did:plc:a/com.example.note/1", "cid": "bafyreiclp443lavogvhj3d2ob2cxbfuscni2k5jk7bebjzg7khl3esabwq"}}]}`,
			"cid is given with a record's value only"},
		{"missing fixtures", `{"fixtures": ["nope.jsonl"], "steps": [{"query": "com.example.listNotes"}]}`, "fixtures: open tests/nope.jsonl"},
		{"event outcome", `{"steps": [{"event": {"action": "create", "uri": "at://did:plc:a/com.example.note/1", "record": {}}, "expect": {"outcome": "ok"}}]}`,
			`outcome "ok"`},
		{"query writes", `{"steps": [{"query": "com.example.listNotes", "expect": {"writes": []}}]}`, "a query makes no writes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyApp(t)
			if err := os.WriteFile(filepath.Join(dir, "tests", "bad.json"), []byte(tc.file), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := apptest.Load(dir)
			if err == nil || !strings.Contains(err.Error(), "tests/bad.json: ") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error about tests/bad.json with %q", err, tc.want)
			}
		})
	}
}

// copyApp copies testdata/app's lexicons, scripts and app.json to a
// temporary folder with an empty tests folder.
func copyApp(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	err := os.CopyFS(dir, os.DirFS("testdata/app"))
	if err == nil {
		err = os.RemoveAll(filepath.Join(dir, "tests"))
	}
	if err == nil {
		err = os.Mkdir(filepath.Join(dir, "tests"), 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func testByName(t *testing.T, s *apptest.Suite, name string) *apptest.Test {
	t.Helper()
	for _, tt := range s.Tests {
		if tt.Name == name {
			return tt
		}
	}
	t.Fatalf("no test %s", name)
	return nil
}
