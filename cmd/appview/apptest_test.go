package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTestCommand: `appview test` exits 0 when the tests it runs pass, 1
// with the failures' reports when one fails, 1 for a folder whose tests
// do not load or that has none, and 2 for a bad --run.
func TestTestCommand(t *testing.T) {
	t.Parallel()
	app := "../../appview/apptest/testdata/app"
	cmd := func(wantCode int, args ...string) (string, string) {
		t.Helper()
		var out, errOut strings.Builder
		if code := run(append([]string{"test"}, args...), &out, &errOut); code != wantCode {
			t.Fatalf("appview test %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, wantCode, out.String(), errOut.String())
		}
		return out.String(), errOut.String()
	}
	if out, _ := cmd(0, "--run", "^(events|procedures)$", app); out != "PASS events (7 steps)\nPASS procedures (5 steps)\nok: 2 tests passed\n" {
		t.Errorf("passing tests:\n%s", out)
	}
	out, _ := cmd(1, "--run", "broken_writes", app)
	if !strings.HasPrefix(out, "FAIL broken_writes (tests/broken_writes.json)\n    step 1, procedure com.example.createNote:\n      writes: want 2, got 1\n") ||
		!strings.HasSuffix(out, "FAIL: 1 of 1 test failed\n") {
		t.Errorf("a failing test:\n%s", out)
	}
	if _, errOut := cmd(1, "--run", "nothing-matches", app); !strings.Contains(errOut, "no tests in") {
		t.Errorf("no tests: %s", errOut)
	}
	if _, errOut := cmd(2, "--run", "(", app); !strings.Contains(errOut, "--run: error parsing regexp") {
		t.Errorf("bad --run: %s", errOut)
	}

	broken := t.TempDir()
	if err := os.CopyFS(broken, os.DirFS(app)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(broken, "tests", "zz.json"), []byte(`{"steps": [{}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errOut := cmd(1, broken); out != "" || !strings.Contains(errOut, "tests/zz.json: step 1: a step is exactly one of query, procedure and event") {
		t.Errorf("a malformed test: stdout %q, stderr %q", out, errOut)
	}
}
