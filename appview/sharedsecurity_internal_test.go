package appview

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// TestSweepDPoPProofs: the sweep forgets the proofs of the shared replay
// table that expired more than dpopSweepSlack ago, and keeps the others;
// the App checks proofs against the table on PostgreSQL only.
func TestSweepDPoPProofs(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		store := open(t)
		a, err := New(Config{
			Store:                 store,
			Ingest:                IngestConfig{JetstreamURL: "off"},
			Logger:                slog.New(slog.NewTextHandler(io.Discard, nil)),
			Security:              SecurityConfig{TokenEncryptionKey: "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="},
			EventLogRetentionDays: -1,
			Now:                   func() time.Time { return now },
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Shutdown(context.Background()) })
		if shared := a.sharedReplays() != nil; shared != (store.Dialect() == "postgres") {
			t.Fatalf("%s: shared replay check %v", store.Dialect(), shared)
		}
		ctx := context.Background()
		expiries := []time.Time{now.Add(-time.Hour), now.Add(-dpopSweepSlack - time.Second), now.Add(-time.Second), now.Add(time.Minute)}
		for i, exp := range expiries {
			if ok, err := store.RememberDPoPProof(ctx, []byte{byte(i)}, exp, now.Add(-2*time.Hour)); err != nil || !ok {
				t.Fatalf("remember %d: %v %v", i, ok, err)
			}
		}
		if n, err := a.sweepDPoPProofs(ctx); err != nil || n != 2 {
			t.Fatalf("sweep: %d %v, want the 2 expired for longer than the slack", n, err)
		}
		if ok, err := store.RememberDPoPProof(ctx, []byte{3}, now.Add(time.Minute), now); err != nil || ok {
			t.Fatalf("the live proof was swept: %v %v", ok, err)
		}
		if n, err := store.PurgeDPoPProofs(ctx, now); err != nil || n != 1 {
			t.Fatalf("the proof within the slack: %d %v, want it kept by the sweep", n, err)
		}
	})
}
