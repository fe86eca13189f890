package storagetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lexview/lexview/storage"
)

// BenchApplyLabels measures ApplyLabels: events of perEvent labels (each
// with a 64-byte signature, on distinct subjects) from one labeler, each
// event one call, as a subscription stores them. It reports labels/s.
func BenchApplyLabels(b *testing.B, perEvent int, open func(testing.TB) storage.Store) {
	s := open(b)
	ctx := context.Background()
	const src = "did:plc:benchlabeler"
	if _, err := s.PutLabeler(ctx, src, benchEpoch); err != nil {
		b.Fatal(err)
	}
	sig := make([]byte, 64)
	events := make([][]storage.Label, 1024)
	n := 0
	for i := range events {
		events[i] = make([]storage.Label, perEvent)
		for j := range events[i] {
			events[i][j] = storage.Label{
				Src: src, URI: BenchRecord(BenchCollection, n).URI, Val: "spam",
				Cts: benchEpoch.Add(time.Duration(n) * time.Millisecond), Sig: sig, Ver: 1,
			}
			n++
		}
	}
	b.ResetTimer()
	start := time.Now()
	for i := 0; b.Loop(); i++ {
		ev := events[i%len(events)]
		if i >= len(events) { // later rounds: newer labels replace the stored ones
			for j := range ev {
				ev[j].Cts = ev[j].Cts.Add(time.Hour)
			}
		}
		if err := s.ApplyLabels(ctx, storage.LabelBatch{Src: src, Labels: ev, Cursor: int64(i + 1)}); err != nil {
			b.Fatal(fmt.Errorf("event %d: %w", i, err))
		}
	}
	b.ReportMetric(float64(b.N*perEvent)/time.Since(start).Seconds(), "labels/s")
}
