package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lexview/lexview/appview/appfolder"
	"github.com/lexview/lexview/appview/apptest"
	"github.com/lexview/lexview/appview/codegen"
)

// TestAppTests runs the tests the app folder declares (app/tests: the
// queries over the fixtures, likes arriving and going, the procedure's
// writes, the index hook and the record.create script), as `appview test
// examples/bookclub/app` does.
func TestAppTests(t *testing.T) {
	t.Parallel()
	suite, err := apptest.Load("app")
	if err != nil {
		t.Fatal(err)
	}
	if len(suite.Tests) < 5 {
		t.Fatalf("%d tests in app/tests", len(suite.Tests))
	}
	report := apptest.Run(context.Background(), suite, apptest.Options{})
	var out strings.Builder
	report.Print(&out)
	if !report.Passed() {
		t.Fatalf("the app's tests:\n%s", out.String())
	}
	t.Logf("the app's tests:\n%s", out.String())
}

// TestClientUpToDate checks that web/src/client.ts is what `appview
// codegen --lang ts --app app --out web/src` writes from the lexicons
// now: a lexicon changed without regenerating the client fails here.
func TestClientUpToDate(t *testing.T) {
	t.Parallel()
	def, err := appfolder.Load("app")
	if err != nil {
		t.Fatal(err)
	}
	out, err := codegen.Generate(codegen.FromDefinition(def), codegen.Options{Lang: codegen.TypeScript})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Warnings) > 0 {
		t.Errorf("codegen warnings: %v", out.Warnings)
	}
	for name, want := range out.Files {
		got, err := os.ReadFile(filepath.Join("web", "src", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("web/src/%s is not what codegen writes from app/lexicons; regenerate it:\n"+
				"  go run ./cmd/appview codegen --lang ts --app examples/bookclub/app --out examples/bookclub/web/src", name)
		}
	}
}

// TestPageCompiled compiles web/src (the page and the generated client)
// with web/tsconfig.json, strict and then some, and checks that web/js,
// what the browser loads, is that output byte for byte. It needs the
// TypeScript compiler (npm typescript) in APPVIEW_TYPESCRIPT_DIR, as
// scripts/test provides it (scripts/lib/typescript.sh); without it the
// test is skipped, and fails under CI=true.
func TestPageCompiled(t *testing.T) {
	t.Parallel()
	tsc := typescript(t)
	dir := t.TempDir()
	cmd := exec.Command(tsc[0], append(tsc[1:], "-p", filepath.Join("web", "tsconfig.json"), "--outDir", dir)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tsc: %v\n%s", err, out)
	}
	want, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	have, err := filepath.Glob(filepath.Join("web", "js", "*"))
	if err != nil {
		t.Fatal(err)
	}
	if names(want) == nil || !slices.Equal(names(want), names(have)) {
		t.Fatalf("tsc writes %v, web/js has %v", names(want), names(have))
	}
	for _, file := range want {
		compiled, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		committed, err := os.ReadFile(filepath.Join("web", "js", filepath.Base(file)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(compiled, committed) {
			t.Errorf("web/js/%s is not tsc's output of web/src; compile it again (README.md):\n"+
				"  node $APPVIEW_TYPESCRIPT_DIR/node_modules/typescript/bin/tsc -p examples/bookclub/web", filepath.Base(file))
		}
	}
}

// typescript returns the command that runs tsc, from
// APPVIEW_TYPESCRIPT_DIR; it skips the test without it, or fails it under
// CI=true.
func typescript(t *testing.T) []string {
	t.Helper()
	dir := os.Getenv("APPVIEW_TYPESCRIPT_DIR")
	if dir == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("APPVIEW_TYPESCRIPT_DIR is not set: the TypeScript compiler is required in CI (see scripts/lib/typescript.sh)")
		}
		t.Skip("APPVIEW_TYPESCRIPT_DIR not set; skipping the compilation of the page (scripts/test provisions it)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("APPVIEW_TYPESCRIPT_DIR is set but there is no node command")
	}
	return []string{node, filepath.Join(dir, "node_modules", "typescript", "bin", "tsc")}
}

// names are the base names of files, sorted.
func names(files []string) []string {
	var out []string
	for _, f := range files {
		out = append(out, filepath.Base(f))
	}
	slices.Sort(out)
	return out
}
