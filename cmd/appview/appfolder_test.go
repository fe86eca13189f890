package main

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lexview/lexview/appview"
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

// TestApplyExportRemote: with --url, apply and export work on a running
// instance through its admin API, with the key in ADMIN_KEY.
func TestApplyExportRemote(t *testing.T) {
	app, err := filepath.Abs("../../examples/social/app")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	instance, err := appview.New(appview.Config{DatabaseURL: "sqlite://" + filepath.Join(dir, "remote.db"), Logger: quiet,
		Ingest: appview.IngestConfig{JetstreamURL: "off"}})
	if err != nil {
		t.Fatal(err)
	}
	defer instance.Shutdown(context.Background())
	srv := httptest.NewServer(instance.Handler())
	defer srv.Close()
	key, err := instance.Bootstrap(context.Background(), "did:plc:appfolderadmin00000000000", false)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("LOG_LEVEL", "error")
	t.Setenv("ADMIN_KEY", "")
	var out, errOut strings.Builder
	if code := run([]string{"apply", "--url", srv.URL, app}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "ADMIN_KEY") {
		t.Fatalf("without a key: exit %d: %s", code, errOut.String())
	}
	t.Setenv("ADMIN_KEY", key)
	out.Reset()
	if code := run([]string{"apply", "--url", srv.URL, "--yes", app}, &out, &errOut); code != 0 || !strings.HasSuffix(out.String(), "\napplied\n") {
		t.Fatalf("apply: exit %d\n%s\n%s", code, out.String(), errOut.String())
	}
	if _, ok := instance.Lexicons().Snapshot().Get("com.example.social.getPost"); !ok {
		t.Fatal("the lexicon is not on the instance")
	}
	exported := filepath.Join(dir, "exported")
	out.Reset()
	if code := run([]string{"export", "--url", srv.URL, exported}, &out, &errOut); code != 0 || !strings.HasPrefix(out.String(), "exported 8 lexicons") {
		t.Fatalf("export: exit %d\n%s\n%s", code, out.String(), errOut.String())
	}
	out.Reset()
	if code := run([]string{"apply", "--url", srv.URL, "--prune", exported}, &out, &errOut); code != 0 || out.String() != "no changes\n" {
		t.Fatalf("apply of the export: exit %d\n%s\n%s", code, out.String(), errOut.String())
	}
}
