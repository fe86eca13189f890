package codegen_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/appfolder"
	"github.com/lexview/lexview/appview/codegen"
	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/appview/internal/testing/testproc"
	"github.com/lexview/lexview/internal/oauthtest"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// fixture is the app folder the tests generate clients of.
const fixture = "testdata/app"

// instance is a live Lexview instance serving the fixture app.
type instance struct {
	env       *testenv.Env
	clientKey string
	notes     []string // the notes' AT URIs, newest first
	imageNote string   // the note with an image
	device    *testenv.Device
}

const (
	author  = "did:plc:alice"
	noteNS  = "com.example.notes.note"
	notePDS = "https://pds.alice.test"
)

// startInstance starts an instance, applies the fixture folder to it and
// seeds five notes by alice, one with an image, and a signed-in device.
func startInstance(t *testing.T) *instance {
	t.Helper()
	ctx := context.Background()
	store := storagetest.SQLite(t)
	env := testenv.New(t, store, appview.Config{})
	env.PLC.Register(author, "alice.test", notePDS)
	_, plan, err := appfolder.Prepare(ctx, fixture, appfolder.Local(env.App), false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := appfolder.Apply(ctx, appfolder.Local(env.App), plan); err != nil {
		t.Fatal(err)
	}
	in := &instance{env: env}
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	var ops []storage.RecordOp
	for i := range 5 {
		at := base.Add(time.Duration(i) * time.Minute)
		fields := map[string]any{"text": fmt.Sprintf("note %d", i), "createdAt": at.Format(time.RFC3339),
			"tags": []string{"go"}, "visibility": "public"}
		if i == 2 {
			fields["embed"] = map[string]any{"$type": "com.example.notes.defs#image", "alt": "a cat", "image": map[string]any{
				"$type": "blob", "mimeType": "image/png", "size": 1234,
				"ref": map[string]any{"$link": "bafkreibme22gw2h7y2h7tg2fhqotaqjucnbc24deqo72b6mkl2egezxhvy"}}}
		}
		r := storagetest.Rec(author, noteNS, fmt.Sprintf("3kabc%08d", i), at, fields)
		ops = append(ops, storage.RecordOp{Record: r})
		in.notes = append([]string{r.URI}, in.notes...)
		if i == 2 {
			in.imageNote = r.URI
		}
	}
	if err := store.ApplyBatch(ctx, storage.Batch{Ops: ops}); err != nil {
		t.Fatal(err)
	}
	client, secret := env.NewClient(t, apiclients.NewClient{RateLimitCapacity: new(1000)})
	in.clientKey = client.Key
	pds := oauthtest.New(t, oauthtest.Options{})
	did := env.PLC.NewAccount(t, false, pds.URL).DID.String()
	in.device = env.SignIn(t, pds, testenv.AppClient{Key: client.Key, Secret: secret}, did)
	return in
}

// programEnv is the environment of a test program: the instance, what
// it holds, n DPoP proofs for createNote and one for putNote.
func (in *instance) programEnv(t *testing.T, n int) []string {
	var proofs []string
	for range n {
		proofs = append(proofs, in.device.Proof(t, "POST", "/xrpc/com.example.notes.createNote"))
	}
	proofs = append(proofs, in.device.Proof(t, "POST", "/xrpc/com.example.notes.putNote"))
	return append(os.Environ(),
		"BASE_URL="+in.env.URL, "CLIENT_KEY="+in.clientKey,
		"NOTES="+strings.Join(in.notes, ","), "IMAGE_NOTE="+in.imageNote,
		"MISSING_NOTE=at://"+author+"/"+noteNS+"/3kzzz00000000",
		"ACCESS_TOKEN="+in.device.AccessToken, "PROOFS="+strings.Join(proofs, ","), "CALLER="+in.device.DID)
}

// generate writes the client of the fixture in lang to dir.
func generate(t *testing.T, lang codegen.Lang, dir string) {
	t.Helper()
	def, err := appfolder.Load(fixture)
	if err != nil {
		t.Fatal(err)
	}
	out, err := codegen.Generate(codegen.FromDefinition(def), codegen.Options{Lang: lang})
	if err != nil {
		t.Fatal(err)
	}
	if err := out.Write(dir); err != nil {
		t.Fatal(err)
	}
}

// run runs a command in dir and fails the test with its output when it
// fails.
func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	raw, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestGoClientLive builds the generated Go client in a module of its
// own that needs only the standard library, and runs a program through
// it against a live instance: pages, a record, typed errors, a signed
// procedure.
func TestGoClientLive(t *testing.T) {
	t.Parallel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	dir := t.TempDir()
	generate(t, codegen.Go, filepath.Join(dir, "lexclient"))
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/app\n\ngo 1.23\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	copyFile(t, "testdata/goprog/main.go", filepath.Join(dir, "main.go"))
	buildEnv := append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off", "GOTOOLCHAIN=local", "GOPROXY=off", "CGO_ENABLED=0")
	run(t, dir, buildEnv, goBin, "vet", "./...")
	run(t, dir, buildEnv, goBin, "build", "-o", "prog", ".")

	in := startInstance(t)
	if out := run(t, dir, in.programEnv(t, 2), filepath.Join(dir, "prog")); strings.TrimSpace(out) != "ok" {
		t.Fatalf("program: %s", out)
	}
}

// TestTypeScriptClientLive compiles the generated TypeScript client and
// a program using it with tsc --strict and every stricter check (npm typescript, which
// scripts/test provisions as APPVIEW_TYPESCRIPT_DIR), and runs the
// program in Node against a live instance: pages, a record, typed
// errors, a signed procedure.
func TestTypeScriptClientLive(t *testing.T) {
	t.Parallel()
	tsDir := testproc.RequireEnv(t, "APPVIEW_TYPESCRIPT_DIR", "the TypeScript compiler (npm typescript)", "scripts/lib/typescript.sh")
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("APPVIEW_TYPESCRIPT_DIR is set but there is no node command")
	}
	dir := t.TempDir()
	generate(t, codegen.TypeScript, dir)
	copyFile(t, "testdata/tsprog/test.ts", filepath.Join(dir, "test.ts"))
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"type": "module"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, dir, os.Environ(), node, filepath.Join(tsDir, "node_modules", "typescript", "bin", "tsc"),
		"--strict", "--exactOptionalPropertyTypes", "--noUncheckedIndexedAccess", "--noImplicitOverride",
		"--noPropertyAccessFromIndexSignature", "--noImplicitReturns", "--noFallthroughCasesInSwitch",
		"--noUnusedLocals", "--noUnusedParameters", "--isolatedModules", "--erasableSyntaxOnly", "--verbatimModuleSyntax",
		"--target", "es2022", "--module", "nodenext", "--lib", "es2022,dom", "--outDir", "out",
		"client.ts", "test.ts")

	in := startInstance(t)
	if out := run(t, dir, in.programEnv(t, 2), node, filepath.Join("out", "test.js")); strings.TrimSpace(out) != "ok" {
		t.Fatalf("program: %s", out)
	}
}
