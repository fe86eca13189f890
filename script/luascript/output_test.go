package luascript

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lexview/lexview/script"
)

// lineLog collects a logger's JSON lines.
type lineLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// lines returns the records with message msg.
func (l *lineLog) lines(msg string) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.buf.String()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// TestOutputIsBounded: a script printing in a loop writes at most
// maxRunLines lines per run, and its runs together pass the per-script
// bucket; what is dropped is counted and reported once per
// dropReportEvery, in the process log and the event log. Another script
// keeps its own bucket.
func TestOutputIsBounded(t *testing.T) {
	var out lineLog
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	e := New(Options{Logger: slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug})), Now: now})
	p, err := e.Compile("loud", `function handle() for i = 1, 5000 do print("line", i) end return true end`)
	if err != nil {
		t.Fatal(err)
	}
	events := 0
	run := func(method string) {
		t.Helper()
		inv := &script.Invocation{Host: countingHost{logs: &events}, Kind: script.KindQuery, Method: method}
		if _, err := p.Run(context.Background(), inv); err != nil {
			t.Fatal(err)
		}
	}
	run("app.test.loud")
	if n := len(out.lines("script print")); n != maxRunLines {
		t.Fatalf("first run: %d lines printed, want %d", n, maxRunLines)
	}
	dropped := out.lines("script output dropped")
	if len(dropped) != 1 || dropped[0]["lines"] != float64(5000-maxRunLines) || events != 1 {
		t.Fatalf("first run: dropped reports %v, %d event-log entries", dropped, events)
	}

	// At once again: the script's bucket is empty; the drops are counted
	// but not reported before dropReportEvery.
	run("app.test.loud")
	if n := len(out.lines("script print")); n != maxRunLines {
		t.Fatalf("second run at once: %d lines printed in all, want %d", n, maxRunLines)
	}
	if n := len(out.lines("script output dropped")); n != 1 {
		t.Fatalf("second run at once: %d reports", n)
	}
	// Another script has its own bucket.
	run("app.test.other")
	if n := len(out.lines("script print")); n != 2*maxRunLines {
		t.Fatalf("another script: %d lines printed in all, want %d", n, 2*maxRunLines)
	}

	// A second later the bucket has refilled by scriptLineRate; after
	// dropReportEvery the drops of both runs are reported.
	mu.Lock()
	clock = clock.Add(time.Second)
	mu.Unlock()
	run("app.test.loud")
	if n := len(out.lines("script print")); n != 2*maxRunLines+scriptLineRate {
		t.Fatalf("a second later: %d lines printed in all, want %d", n, 2*maxRunLines+scriptLineRate)
	}
	mu.Lock()
	clock = clock.Add(dropReportEvery)
	mu.Unlock()
	run("app.test.loud")
	reports := out.lines("script output dropped")
	var loud []map[string]any
	for _, r := range reports {
		if r["script"] == outputKey(&script.Invocation{Kind: script.KindQuery, Method: "app.test.loud"}) {
			loud = append(loud, r)
		}
	}
	if len(loud) != 2 {
		t.Fatalf("reports %v", reports)
	}
	// Runs 2, 3 and 4 of the loud script dropped all but what the bucket
	// let through.
	if got, want := loud[1]["lines"], float64(3*5000-scriptLineRate-maxRunLines); got != want {
		t.Errorf("second report counts %v dropped lines, want %v", got, want)
	}
}
