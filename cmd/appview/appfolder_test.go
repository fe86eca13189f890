package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestApplyExportCommands: apply prints the plan of the example app's
// folder and changes nothing with --dry-run or when not confirmed,
// applies it when confirmed, and a second apply prints "no changes";
// export writes a folder whose apply changes nothing.
func TestApplyExportCommands(t *testing.T) {
	app, err := filepath.Abs("../../examples/social/app")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("DATABASE_URL", "sqlite://"+filepath.Join(dir, "app.db"))
	t.Setenv("JETSTREAM_URL", "off")
	t.Setenv("LOG_LEVEL", "error")
	cmd := func(wantCode int, input string, args ...string) string {
		t.Helper()
		stdin = strings.NewReader(input)
		defer func() { stdin = os.Stdin }()
		var out, errOut strings.Builder
		if code := run(args, &out, &errOut); code != wantCode {
			t.Fatalf("appview %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, wantCode, out.String(), errOut.String())
		}
		return out.String()
	}
	out := cmd(0, "", "apply", "--dry-run", app)
	if !strings.Contains(out, "+ lexicon com.example.social.post (record, new)\n") || strings.Contains(out, "applied") {
		t.Fatalf("dry run:\n%s", out)
	}
	if out := cmd(1, "n\n", "apply", app); !strings.Contains(out, "Apply these changes? [y/N] ") {
		t.Fatalf("declined:\n%s", out)
	}
	if out := cmd(0, "", "apply", "--dry-run", app); !strings.Contains(out, "+ lexicon com.example.social.post") {
		t.Fatalf("a dry run or a declined plan changed the instance:\n%s", out)
	}
	if out := cmd(0, "y\n", "apply", app); !strings.HasSuffix(out, "+ index com.example.social.post topic (value)\nApply these changes? [y/N] applied\n") {
		t.Fatalf("confirmed:\n%s", out)
	}
	if out := cmd(0, "", "apply", "--yes", "--prune", app); out != "no changes\n" {
		t.Fatalf("second apply:\n%s", out)
	}
	exported := filepath.Join(dir, "exported")
	if out := cmd(0, "", "export", exported); out != "exported 8 lexicons, 0 trigger scripts and 2 declared indexes to "+exported+"\n" {
		t.Fatalf("export: %q", out)
	}
	if out := cmd(0, "", "apply", "--prune", exported); out != "no changes\n" {
		t.Fatalf("apply of the export:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(exported, "scripts", "com.example.social.getPost.lua")); err != nil {
		t.Errorf("exported script: %v", err)
	}
}
