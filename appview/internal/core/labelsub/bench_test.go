package labelsub_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/bluesky-social/indigo/atproto/labeling"

	"github.com/lexview/lexview/appview/internal/testing/labelertest"
	"github.com/lexview/lexview/storage"
)

// BenchmarkIngest measures label ingestion end to end: a stand-in
// labeler replays b.N signed labels (perEvent to an event) over
// WebSocket, and a subscription decodes, verifies and stores them. The
// labels/s figure is the one to read; signing happens before the timer.
//
//	go test -run '^$' -bench Ingest -benchtime 20000x ./appview/internal/core/labelsub
func BenchmarkIngest(b *testing.B) {
	for _, st := range benchStores() {
		for _, k256 := range []bool{false, true} {
			for _, perEvent := range []int{1, 10} {
				alg := "p256"
				if k256 {
					alg = "k256"
				}
				b.Run(fmt.Sprintf("%s/%s/labels-per-event=%d", st.name, alg, perEvent), func(b *testing.B) {
					benchIngest(b, st.open(b), k256, perEvent)
				})
			}
		}
	}
}

func benchIngest(b *testing.B, store storage.LabelStore, k256 bool, perEvent int) {
	ws := &waitStore{LabelStore: store, reached: make(chan struct{})}
	h := newHarness(b, ws)
	lab := labelertest.New(b, h.plc, labelertest.Options{K256: k256})
	var batch []labeling.Label
	for i := range b.N {
		batch = append(batch, lab.Label(post(i), "spam"))
		if len(batch) == perEvent || i == b.N-1 {
			lab.Emit(batch...)
			batch = nil
		}
	}
	ws.target = lab.Seq()
	if _, err := store.PutLabeler(context.Background(), lab.DID, time.Now()); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	cpu0 := cpuTime()
	start := time.Now()
	h.start()
	select {
	case <-ws.reached:
	case <-time.After(5 * time.Minute):
		b.Fatal("labels not all stored")
	}
	elapsed, cpu := time.Since(start), cpuTime()-cpu0
	b.StopTimer()
	h.stop()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "labels/s")
	// CPU time per label (the whole process: the stand-in's sending
	// included) is the figure least disturbed by a shared machine.
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/label")
}

// cpuTime is the user and system CPU time of the process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// waitStore closes reached once the cursor target is stored.
type waitStore struct {
	storage.LabelStore
	target  int64
	reached chan struct{}
}

func (s *waitStore) ApplyLabels(ctx context.Context, batch storage.LabelBatch) error {
	if err := s.LabelStore.ApplyLabels(ctx, batch); err != nil {
		return err
	}
	if batch.Cursor == s.target {
		close(s.reached)
	}
	return nil
}
