package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer a child process writes while the test
// reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// devFolder writes a small app folder to dir: the query
// com.example.dev.hello, whose script answers {greeting = word}.
func devFolder(t *testing.T, dir, word string) {
	t.Helper()
	for name, content := range map[string]string{
		"lexicons/hello.json":               `{"lexicon": 1, "id": "com.example.dev.hello", "defs": {"main": {"type": "query"}}}`,
		"scripts/com.example.dev.hello.lua": greeting(word),
	} {
		writeFile(t, filepath.Join(dir, name), content)
	}
}

func greeting(word string) string {
	return "function handle()\n  return {greeting = \"" + word + "\"}\nend\n"
}

func writeFile(t *testing.T, file, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond until it holds, failing the test after a deadline
// far above what it needs.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still not %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDevCommand runs `appview dev DIR` as its user would, with no
// database configured: it makes its database under .lexview/ (where
// `admin bootstrap --database-url` claims it), prints its URLs and the
// plan it applied, and serves the folder's query; an edit of the script
// changes the answer over HTTP; a script that does not compile is
// printed with its file and line and listed under GET /admin/stats
// app_folder while the instance keeps answering as before; the fix
// clears it. Then `serve --app` applies a folder at start and watches it
// too.
func TestDevCommand(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	app := filepath.Join(dir, "app")
	devFolder(t, app, "one")
	env := serveEnv("", "PORT=0")
	bootstrap := exec.Command(binary(t), "admin", "bootstrap", "--database-url", devDatabaseURL, "--did", "did:plc:devcommandadmin")
	bootstrap.Env, bootstrap.Dir = env, dir
	out, err := bootstrap.Output()
	if err != nil {
		t.Fatalf("admin bootstrap: %v", err)
	}
	admin := []string{"Authorization", "Bearer " + strings.TrimSpace(string(out))}

	var stdout syncBuffer
	addr, _ := startCommand(t, env, dir, &stdout, "dev", "app")
	if _, err := os.Stat(filepath.Join(dir, ".lexview", "dev.db")); err != nil {
		t.Fatalf("dev's database: %v", err)
	}
	for _, want := range []string{"dashboard  " + addr + "/dashboard\n", "app: applied\n  + lexicon com.example.dev.hello (query, new)\n"} {
		waitFor(t, fmt.Sprintf("dev to print %q", want), func() bool { return strings.Contains(stdout.String(), want) })
	}
	status, body := callJSON(t, "POST", addr+"/admin/api-clients", map[string]any{
		"name": "dev", "client_id_url": "https://app.example/client-metadata.json",
		"client_uri": "https://app.example", "redirect_uris": []string{"https://app.example/callback"},
	}, admin...)
	if status != 201 {
		t.Fatalf("create API client: %d %v", status, body)
	}
	clientKey, _ := body["client_key"].(string)
	answers := func(word string) func() bool {
		return func() bool {
			status, body := callJSON(t, "GET", addr+"/xrpc/com.example.dev.hello", nil, "X-Client-Key", clientKey)
			return status == 200 && body["greeting"] == word
		}
	}
	waitFor(t, "answering one", answers("one"))

	script := filepath.Join(app, "scripts", "com.example.dev.hello.lua")
	writeFile(t, script, greeting("two"))
	waitFor(t, "answering the edited script's two", answers("two"))

	appFolder := func() map[string]any {
		status, body := callJSON(t, "GET", addr+"/admin/stats", nil, admin...)
		if status != 200 {
			t.Fatalf("stats: %d %v", status, body)
		}
		st, _ := body["app_folder"].(map[string]any)
		return st
	}
	writeFile(t, script, "function handle()\n  return {\nend\n")
	waitFor(t, "the broken script listed", func() bool {
		problems, _ := appFolder()["problems"].([]any)
		return len(problems) == 1
	})
	st := appFolder()
	if p := st["problems"].([]any)[0].(map[string]any); p["file"] != "scripts/com.example.dev.hello.lua" || p["line"] != 3.0 ||
		st["dir"] != "app" || st["watching"] != true || st["prune"] != true || st["applied_at"] == nil {
		t.Errorf("app_folder: %v", st)
	}
	if !strings.Contains(stdout.String(), "app: not applied; the instance keeps what it had:\n  scripts/com.example.dev.hello.lua:3: script has a syntax error") {
		t.Errorf("dev did not print the problem:\n%s", stdout.String())
	}
	if !answers("two")() {
		t.Error("the broken script changed the answer")
	}
	writeFile(t, script, greeting("three"))
	waitFor(t, "answering the fixed script's three", answers("three"))
	waitFor(t, "the problem cleared", func() bool {
		st := appFolder()
		problems, _ := st["problems"].([]any)
		changes, _ := st["changes"].([]any)
		return len(problems) == 0 && len(changes) == 1
	})

	// serve --app: the same loop, without pruning unless asked.
	other := filepath.Join(dir, "other")
	devFolder(t, other, "served")
	serveDB := "sqlite://" + filepath.Join(dir, "serve.db")
	bootstrap = exec.Command(binary(t), "admin", "bootstrap", "--database-url", serveDB, "--did", "did:plc:devcommandadmin")
	bootstrap.Env, bootstrap.Dir = env, dir
	if out, err = bootstrap.Output(); err != nil {
		t.Fatalf("admin bootstrap: %v", err)
	}
	admin = []string{"Authorization", "Bearer " + strings.TrimSpace(string(out))}
	addr, _ = startServe(t, serveEnv(serveDB, "PORT=0"), dir, "--app", other)
	st = appFolder()
	if changes, _ := st["changes"].([]any); st["dir"] != other || st["prune"] != false || len(changes) != 1 ||
		changes[0] != "+ lexicon com.example.dev.hello (query, new)" {
		t.Errorf("serve --app: app_folder %v", st)
	}
}
