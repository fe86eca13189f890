package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lexview/lexview/storage/storagetest"
)

// TestREADMEWalkthrough runs the README's five-minute walkthrough against
// the real binary, on SQLite and on PostgreSQL: bootstrap an admin key,
// upload a record and a query lexicon, create an API client, import
// records, query them with the client key, and run the bucket dry. The
// walkthrough is offline: PLC_URL and RELAY_URL point at a local stand-in
// that counts the requests it gets, and it must get none.
func TestREADMEWalkthrough(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := binary(t)
	databases := map[string]func(t *testing.T) string{
		"sqlite":   func(t *testing.T) string { return "sqlite://" + filepath.Join(t.TempDir(), "appview.db") },
		"postgres": func(t *testing.T) string { return storagetest.PostgresURL(t) },
	}
	for name, dbURL := range databases {
		t.Run(name, func(t *testing.T) { walkthrough(t, bin, dbURL(t)) })
	}
}

func walkthrough(t *testing.T, bin, dbURL string) {
	dir := t.TempDir()
	// The network: any request reaching it is a walkthrough that is not
	// offline.
	var outbound atomic.Int64
	network := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		outbound.Add(1)
		t.Logf("outbound request: %s %s", r.Method, r.URL)
		http.Error(w, "offline", http.StatusServiceUnavailable)
	}))
	defer network.Close()
	env := append(os.Environ(), "DATABASE_URL="+dbURL, "JETSTREAM_URL=off", "PORT=0", "LOG_FORMAT=json",
		"PLC_URL="+network.URL, "RELAY_URL="+network.URL, "TOKEN_ENCRYPTION_KEY=MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	command := func(args ...string) *exec.Cmd {
		cmd := exec.Command(bin, args...)
		cmd.Env, cmd.Dir = env, dir
		return cmd
	}

	// 1. Mint the first admin key.
	out, err := command("admin", "bootstrap", "--did", "did:plc:walkthrough").Output()
	if err != nil {
		t.Fatalf("admin bootstrap: %v", err)
	}
	adminKey := strings.TrimSpace(string(out))
	if !strings.HasPrefix(adminKey, "hv_") {
		t.Fatalf("bootstrap printed %q", out)
	}
	if err := command("admin", "bootstrap", "--did", "did:plc:walkthrough").Run(); err == nil {
		t.Fatal("a second bootstrap succeeded")
	}

	// 2. Start the server and read its address from the log.
	serve := command("serve")
	stderr, _ := serve.StderrPipe()
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	defer serve.Process.Kill()
	base, _ := listening(t, stderr)

	call := func(method, path, auth string, body any, headers ...string) (int, map[string]any) {
		t.Helper()
		if auth != "" {
			headers = append(headers, "Authorization", "Bearer "+auth)
		}
		return callJSON(t, method, base+path, body, headers...)
	}

	// 3. Upload a record lexicon, without backfill (it would crawl the
	// network for the collection's history), and a query lexicon.
	status, body := call("POST", "/admin/lexicons", adminKey, map[string]any{"backfill": false, "lexicon_json": json.RawMessage(
		`{"lexicon":1,"id":"com.example.note","defs":{"main":{"type":"record","key":"tid","record":{"type":"object","properties":{"text":{"type":"string"}}}}}}`)})
	if status != 201 || len(body) != 2 || body["id"] != "com.example.note" || body["revision"] != float64(1) {
		t.Fatalf("upload record lexicon: %d %v", status, body)
	}
	status, body = call("POST", "/admin/lexicons", adminKey, map[string]any{"target_collection": "com.example.note",
		"lexicon_json": json.RawMessage(`{"lexicon":1,"id":"com.example.listNotes","defs":{"main":{"type":"query"}}}`)})
	if status != 201 {
		t.Fatalf("upload query lexicon: %d %v", status, body)
	}

	// 4. Create an API client with a small bucket.
	status, body = call("POST", "/admin/api-clients", adminKey, map[string]any{
		"name": "walkthrough", "client_id_url": "https://notes.example/client-metadata.json",
		"client_uri": "https://notes.example", "redirect_uris": []string{"https://notes.example/callback"},
		"rate_limit_capacity": 5, "rate_limit_refill_rate": 0.01,
	})
	if status != 201 {
		t.Fatalf("create API client: %d %v", status, body)
	}
	clientKey, _ := body["client_key"].(string)

	// 5. Store records.
	var lines strings.Builder
	for i := 2; i <= 4; i++ { // record keys are TIDs, as the README's are
		fmt.Fprintf(&lines, `{"uri":"at://did:plc:walkthrough/com.example.note/3ldemoaaaa%d22","cid":%q,"record":{"$type":"com.example.note","text":"note %d"}}`+"\n", i, testCID, i)
	}
	records := filepath.Join(dir, "notes.jsonl")
	os.WriteFile(records, []byte(lines.String()), 0o600)
	if out, err := command("records", "import", records).CombinedOutput(); err != nil {
		t.Fatalf("records import: %v\n%s", err, out)
	}

	// 6. Query with the client key, until the bucket is empty.
	status, body = call("GET", "/xrpc/com.example.listNotes?limit=2", "", nil, "X-Client-Key", clientKey)
	if status != 200 || len(body["records"].([]any)) != 2 || body["cursor"] == nil {
		t.Fatalf("query: %d %v", status, body)
	}
	limited := false
	for range 10 {
		if status, body = call("GET", "/xrpc/com.example.listNotes", "", nil, "X-Client-Key", clientKey); status == 429 {
			limited = body["error"] == "rate limit exceeded"
			break
		}
	}
	if !limited {
		t.Fatalf("bucket never emptied: last %d %v", status, body)
	}

	// No backfill job, no network.
	if status, raw := callRaw(t, "GET", base+"/admin/backfill/status", nil, "Authorization", "Bearer "+adminKey); status != 200 || strings.TrimSpace(string(raw)) != "[]" {
		t.Fatalf("backfill jobs: %d %s", status, raw)
	}

	// 7. Stop gracefully.
	serve.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- serve.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve exit: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop on SIGTERM")
	}
	if n := outbound.Load(); n != 0 {
		t.Fatalf("the offline walkthrough made %d requests to PLC_URL or RELAY_URL", n)
	}
}
