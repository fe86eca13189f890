package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/appfolder"
)

// codegenFixture is the app folder of appview/codegen's tests.
const codegenFixture = "../../appview/codegen/testdata/app"

// TestCodegenCommand: codegen writes a client from an app folder, and
// the same client from a running instance the folder was applied to.
func TestCodegenCommand(t *testing.T) {
	app, err := filepath.Abs(codegenFixture)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("ADMIN_KEY", "")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"codegen", "--out", "x", "--app", app}, 2, "--lang must be ts or go"},
		{[]string{"codegen", "--lang", "rust", "--out", "x", "--app", app}, 2, "--lang must be ts or go"},
		{[]string{"codegen", "--lang", "ts", "--app", app}, 2, "missing --out DIR"},
		{[]string{"codegen", "--lang", "ts", "--out", "x"}, 2, "give one of --app DIR and --url URL"},
		{[]string{"codegen", "--lang", "ts", "--out", "x", "--app", app, "--url", "http://127.0.0.1:1"}, 2, "give one of"},
		{[]string{"codegen", "--lang", "go", "--out", "x", "--url", "http://127.0.0.1:1"}, 1, "--url needs an admin API key in ADMIN_KEY"},
		{[]string{"codegen", "--lang", "go", "--package", "no-pe", "--out", "x", "--app", app}, 1, `"no-pe" is not a Go package name`},
		{[]string{"codegen", "--lang", "go", "--out", "x", "--app", filepath.Join(dir, "absent")}, 1, "absent"},
	} {
		var out, errOut strings.Builder
		if code := run(tc.args, &out, &errOut); code != tc.code || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, errOut.String(), tc.code, tc.want)
		}
	}
	if _, err := os.Stat("x"); !os.IsNotExist(err) {
		t.Errorf("a failed codegen wrote its folder: %v", err)
	}

	fromFolder := filepath.Join(dir, "folder")
	var out, errOut strings.Builder
	if code := run([]string{"codegen", "--lang", "go", "--out", fromFolder, "--app", app}, &out, &errOut); code != 0 ||
		out.String() != "wrote the go client of 7 lexicons to "+fromFolder+" (client.go, lexicons.go)\n" ||
		!strings.Contains(errOut.String(), "warning: com.atproto.repo.strongRef is not among the lexicons") {
		t.Fatalf("from the folder: exit %d\n%s\n%s", code, out.String(), errOut.String())
	}

	instance, err := appview.New(appview.Config{DatabaseURL: "sqlite://" + filepath.Join(dir, "remote.db"), Logger: quiet,
		Ingest: appview.IngestConfig{JetstreamURL: "off"}})
	if err != nil {
		t.Fatal(err)
	}
	defer instance.Shutdown(context.Background())
	srv := httptest.NewServer(instance.Handler())
	defer srv.Close()
	ctx := context.Background()
	_, plan, err := appfolder.Prepare(ctx, app, appfolder.Local(instance), false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := appfolder.Apply(ctx, appfolder.Local(instance), plan); err != nil {
		t.Fatal(err)
	}
	key, err := instance.Bootstrap(ctx, "did:plc:codegenadmin000000000000000", false)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("ADMIN_KEY", key)
	fromInstance := filepath.Join(dir, "instance")
	out.Reset()
	if code := run([]string{"codegen", "--lang", "go", "--out", fromInstance, "--url", srv.URL}, &out, &errOut); code != 0 {
		t.Fatalf("from the instance: exit %d\n%s\n%s", code, out.String(), errOut.String())
	}
	for _, name := range []string{"client.go", "lexicons.go"} {
		a, errA := os.ReadFile(filepath.Join(fromFolder, name))
		b, errB := os.ReadFile(filepath.Join(fromInstance, name))
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs between the folder's client and the instance's (%v, %v)", name, errA, errB)
		}
	}
}
