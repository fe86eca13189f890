package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestExampleRuns builds the example, runs it as its users would, queries
// the API it serves, and stops it with SIGINT.
func TestExampleRuns(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "embed")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-db", filepath.Join(dir, "notes.db"), "-port", "0")
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()

	out := bufio.NewReader(stdout)
	keyLine, err := out.ReadString('\n')
	if err != nil {
		t.Fatalf("reading client key: %v", err)
	}
	key := strings.TrimSpace(strings.TrimPrefix(keyLine, "client key: "))
	line, err := out.ReadString('\n')
	if err != nil {
		t.Fatalf("reading address: %v", err)
	}
	base := strings.TrimSpace(strings.TrimPrefix(line, "serving on "))

	req, _ := http.NewRequest("GET", base+"/xrpc/com.example.listNotes?limit=2", nil)
	req.Header.Set("X-Client-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Records []map[string]any `json:"records"`
		Cursor  string           `json:"cursor"`
	}
	err = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("query: %d %v", resp.StatusCode, err)
	}
	if len(body.Records) != 2 || body.Records[0]["text"] != "third note" || body.Cursor == "" {
		t.Fatalf("unexpected page: %+v", body)
	}

	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("example did not exit cleanly: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("example did not stop after SIGINT")
	}
}
