package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// logLines decodes the JSON log lines of r onto the returned channel,
// closed at the end of r.
func logLines(r io.Reader) <-chan map[string]any {
	out := make(chan map[string]any, 64)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			var l map[string]any
			if json.Unmarshal(sc.Bytes(), &l) == nil {
				out <- l
			}
		}
	}()
	return out
}

// untilLog returns the log lines up to and including the first for which
// last is true, failing the test after 30 s.
func untilLog(t *testing.T, lines <-chan map[string]any, last func(l map[string]any) bool) []map[string]any {
	t.Helper()
	var seen []map[string]any
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the log ended; it said %v", seen)
			}
			seen = append(seen, l)
			if last(l) {
				return seen
			}
		case <-timeout:
			t.Fatalf("timed out; the log said %v", seen)
		}
	}
}

// TestServeAnnouncesDashboardAndClaim: `serve` on an unclaimed instance
// logs, after where it listens, the dashboard's URL and a short warning
// naming the claim command as this binary was run, then the claim token;
// the token is the same after a restart, until the instance is claimed.
func TestServeAnnouncesDashboardAndClaim(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin, dir := binary(t), t.TempDir()
	env := serveEnv("sqlite://"+filepath.Join(dir, "appview.db"), "PORT=0")
	serveOnce := func() (publicURL, token string, lines []map[string]any) {
		cmd := exec.Command(bin, "serve")
		cmd.Env, cmd.Dir = env, dir
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			cmd.Process.Kill()
			cmd.Wait()
		}()
		lines = untilLog(t, logLines(stderr), func(l map[string]any) bool { return l["claim_token"] != nil })
		for _, l := range lines {
			if l["msg"] == "lexview listening" {
				publicURL, _ = l["public_url"].(string)
			}
		}
		token, _ = lines[len(lines)-1]["claim_token"].(string)
		return publicURL, token, lines
	}

	publicURL, token, lines := serveOnce()
	var order []string
	for _, l := range lines {
		msg, _ := l["msg"].(string)
		switch {
		case msg == "lexview listening", msg == "dashboard":
			order = append(order, msg)
		case strings.HasPrefix(msg, "THIS INSTANCE HAS NO ADMIN YET"):
			order = append(order, "warning")
			want := "claim it with `" + bin + " admin bootstrap --did <your DID>`"
			if !strings.Contains(msg, want) || len(msg)-len(bin) > 120 || l["level"] != "WARN" {
				t.Errorf("claim warning %q, want it to say %q in 120 characters besides the binary's path", msg, want)
			}
		}
		if msg == "dashboard" && l["url"] != publicURL+"/dashboard/" {
			t.Errorf("dashboard line %v, want url %s/dashboard/", l, publicURL)
		}
	}
	if strings.Join(order, ",") != "lexview listening,dashboard,warning" {
		t.Errorf("log order %v; the log said %v", order, lines)
	}
	if !strings.HasPrefix(token, "hvclaim_") {
		t.Fatalf("claim token %q", token)
	}
	if _, again, _ := serveOnce(); again != token {
		t.Errorf("the claim token changed at restart: %s, then %s", token, again)
	}
}
