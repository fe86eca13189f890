package backfilljobs_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// sseMessage is one Server-Sent Events message, or a comment.
type sseMessage struct {
	Event   string
	Data    map[string]any
	Comment string
}

// stream opens the job's progress stream and delivers its messages until
// the server closes it (the channel is then closed).
func stream(t *testing.T, w *world, id string) (<-chan sseMessage, func()) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), "GET", w.env.URL+"/admin/backfill/"+id+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+w.su.Account.ServiceAuth(t))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	out := make(chan sseMessage, 4096)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		var msg sseMessage
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if msg.Event != "" || msg.Comment != "" {
					out <- msg
				}
				msg = sseMessage{}
			case strings.HasPrefix(line, ":"):
				msg.Comment = strings.TrimSpace(line[1:])
			case strings.HasPrefix(line, "event: "):
				msg.Event = line[len("event: "):]
			case strings.HasPrefix(line, "data: "):
				if err := json.Unmarshal([]byte(line[len("data: "):]), &msg.Data); err != nil {
					t.Errorf("data is not JSON: %q", line)
				}
			}
		}
	}()
	return out, func() { resp.Body.Close() }
}

// next waits for the next message.
func next(t *testing.T, c <-chan sseMessage) (sseMessage, bool) {
	t.Helper()
	select {
	case m, ok := <-c:
		return m, ok
	case <-time.After(10 * time.Second):
		t.Fatal("no message in 10s")
		return sseMessage{}, false
	}
}

func TestProgressStream(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		w := setup(t, open(t), "")
		w.slow(t)
		// A first job keeps the worker busy while the second one's stream opens.
		busy := w.create(t, map[string]any{"collection": postNSID, "dids": []string{w.account(t, 1), w.account(t, 1), w.account(t, 1)}})
		var dids []string
		for range 4 {
			dids = append(dids, w.account(t, 2))
		}
		id := w.create(t, map[string]any{"collection": postNSID, "dids": dids})
		msgs, closeStream := stream(t, w, id)
		defer closeStream()

		first, _ := next(t, msgs)
		if first.Event != "event" || first.Data["type"] != "job_counters" || first.Data["job_id"] != id ||
			first.Data["status"] != "running" || first.Data["stage"] != "pending" || first.Data["total_repos"] != nil {
			t.Fatalf("first message: %+v (busy job: %+v)", first, w.job(t, busy))
		}
		seen := map[string]int{}
		var last sseMessage
		for {
			m, ok := next(t, msgs)
			if !ok {
				break
			}
			if m.Event != "event" {
				continue
			}
			seen[m.Data["type"].(string)]++
			last = m
		}
		if last.Data["type"] != "job_completed" || last.Data["status"] != "completed" || last.Data["error"] != nil ||
			last.Data["total_records"] != float64(8) {
			t.Fatalf("last message: %+v", last.Data)
		}
		if seen["repo_discovered"] != 4 || seen["repo_resolved"] != 4 || seen["repo_fetched"] != 4 ||
			seen["job_stage_changed"] != 3 || seen["job_completed"] != 1 || seen["job_counters"] < 2 {
			t.Fatalf("events: %v", seen)
		}

		// A finished job: the snapshot, job_completed, and the end.
		msgs2, close2 := stream(t, w, id)
		defer close2()
		a, _ := next(t, msgs2)
		b, _ := next(t, msgs2)
		if a.Data["type"] != "job_counters" || a.Data["processed_repos"] != float64(4) || b.Data["type"] != "job_completed" {
			t.Fatalf("finished job stream: %+v / %+v", a.Data, b.Data)
		}
		if _, ok := next(t, msgs2); ok {
			t.Fatal("the stream of a finished job stayed open")
		}
	})
}

func TestProgressStreamKeepalive(t *testing.T) {
	t.Parallel()
	w := setupWith(t, storagetest.SQLite(t), "", appview.Config{StreamKeepalive: 50 * time.Millisecond})
	w.slow(t)
	var dids []string
	for range 6 {
		dids = append(dids, w.account(t, 1))
	}
	id := w.create(t, map[string]any{"collection": postNSID, "dids": dids})
	if r := w.su.Do(t, "POST", "/admin/backfill/"+id+"/pause", nil); r.Status != 200 {
		t.Fatalf("pause: %d %s", r.Status, r.Raw)
	}
	w.wait(t, id, "paused")
	msgs, closeStream := stream(t, w, id)
	first, _ := next(t, msgs)
	if first.Data["type"] != "job_counters" || first.Data["status"] != "paused" {
		t.Fatalf("first message: %+v", first)
	}
	if m, _ := next(t, msgs); m.Comment != "keepalive" {
		t.Fatalf("expected a keepalive, got %+v", m)
	}
	// Resuming streams progress to the open connection.
	if r := w.su.Do(t, "POST", "/admin/backfill/"+id+"/resume", nil); r.Status != 200 {
		t.Fatalf("resume: %d %s", r.Status, r.Raw)
	}
	for {
		m, ok := next(t, msgs)
		if !ok {
			t.Fatal("stream ended without job_completed")
		}
		if m.Data["type"] == "job_completed" {
			break
		}
	}
	closeStream()
}
