package appview

import (
	"testing"
	"time"
)

// TestResyncQueue: one run at a time per repository; requests during a
// run are merged into one more run, which waits for what they wait for;
// once the runs stop, a request starts them again.
func TestResyncQueue(t *testing.T) {
	t.Parallel()
	var q resyncQueue
	if !q.request("did:plc:a", nil) {
		t.Fatal("the first request does not start the runs")
	}
	if !q.request("did:plc:b", nil) {
		t.Fatal("another repository's request does not start its runs")
	}
	committed := make(chan struct{})
	runs := 0
	for after := range q.runs("did:plc:a", nil) {
		runs++
		switch runs {
		case 1:
			if after != nil {
				t.Fatal("the first run waits")
			}
			// Two requests while it runs: merged into one more run.
			if q.request("did:plc:a", committed) || q.request("did:plc:a", nil) {
				t.Fatal("a request during a run starts runs of its own")
			}
		case 2:
			if after == nil {
				t.Fatal("the second run does not wait for the commit")
			}
			select {
			case <-after:
				t.Fatal("the second run may start before the commit")
			case <-time.After(20 * time.Millisecond):
			}
			close(committed)
			<-after
		default:
			t.Fatalf("run %d", runs)
		}
	}
	if runs != 2 {
		t.Fatalf("%d runs, want 2", runs)
	}
	if !q.request("did:plc:a", nil) {
		t.Fatal("a request after the runs does not start them again")
	}
	q.abandon("did:plc:a")
	if !q.request("did:plc:a", nil) {
		t.Fatal("a request after abandon does not start the runs")
	}
}
