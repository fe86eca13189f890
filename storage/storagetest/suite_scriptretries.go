package storagetest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lexview/lexview/storage"
)

func addScriptRetryT(t *testing.T, s storage.Store, r storage.ScriptRetry) storage.ScriptRetry {
	t.Helper()
	got, err := s.AddScriptRetry(context.Background(), r)
	if err != nil {
		t.Fatalf("AddScriptRetry: %v", err)
	}
	return got
}

func claimIDs(t *testing.T, s storage.Store, now, until time.Time, limit int) []string {
	t.Helper()
	claimed, err := s.ClaimScriptRetries(context.Background(), now, until, limit)
	if err != nil {
		t.Fatalf("ClaimScriptRetries: %v", err)
	}
	ids := make([]string, len(claimed))
	for i, r := range claimed {
		if !r.DueAt.Equal(until) {
			t.Fatalf("claimed %s due %v, want %v", r.ID, r.DueAt, until)
		}
		ids[i] = r.ID
	}
	slices.Sort(ids)
	return ids
}

// testScriptRetries: pending retries round-trip, are rescheduled and
// deleted, and are never listed, counted or read as dead letters until
// promoted to one.
func testScriptRetries(t *testing.T, s storage.Store) {
	ctx := context.Background()
	letter := addDeadLetterT(t, s, deadLetter("app.test.a", "dead", base))
	in := storage.ScriptRetry{DeadLetter: deadLetter("app.test.a", "1", base), DueAt: base.Add(2 * time.Second)}
	in.Attempts = 1
	first := addScriptRetryT(t, s, in)
	second := addScriptRetryT(t, s, storage.ScriptRetry{DeadLetter: storage.DeadLetter{Kind: storage.DeadLetterRecord,
		URI: "at://did:plc:dl/app.test.b/2", DID: "did:plc:dl", Collection: "app.test.b", RKey: "2", Action: "delete",
		Error: "boom", Attempts: 1}, DueAt: base.Add(time.Second)})
	if first.ID == "" || second.ID == "" || !first.CreatedAt.Equal(base) || second.CreatedAt.IsZero() {
		t.Fatalf("added: %+v %+v", first, second)
	}
	if _, err := s.AddScriptRetry(ctx, storage.ScriptRetry{DeadLetter: storage.DeadLetter{ID: first.ID}, DueAt: base}); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("duplicate id: %v", err)
	}

	// Not dead letters.
	page, _, err := s.ListDeadLetters(ctx, storage.DeadLetterQuery{})
	if err != nil || len(page) != 1 || page[0].ID != letter.ID {
		t.Fatalf("dead letters beside pending retries: %+v %v", page, err)
	}
	if n, err := s.CountDeadLetters(ctx, storage.DeadLetterQuery{}); err != nil || n != 1 {
		t.Fatalf("count: %d %v", n, err)
	}
	if _, err := s.GetDeadLetter(ctx, first.ID); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("a pending retry read as a dead letter: %v", err)
	}
	if err := s.RecordDeadLetterFailure(ctx, first.ID, "x", 2); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("a pending retry updated as a dead letter: %v", err)
	}

	if next, err := s.NextScriptRetryDue(ctx); err != nil || !next.Equal(second.DueAt) {
		t.Fatalf("next due: %v %v, want %v", next, err, second.DueAt)
	}
	// The round trip, through a claim.
	until := base.Add(time.Hour)
	claimed, err := s.ClaimScriptRetries(ctx, base.Add(5*time.Second), until, 0)
	if err != nil || len(claimed) != 2 {
		t.Fatalf("claim: %+v %v", claimed, err)
	}
	slices.SortFunc(claimed, func(a, b storage.ScriptRetry) int { return a.CreatedAt.Compare(b.CreatedAt) })
	got := claimed[0]
	sameJSON(t, got.Record, in.Record)
	want := in
	want.ID, want.DueAt = first.ID, until
	if !sameRetry(got, want) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, want)
	}
	if claimed[1].Record != nil || claimed[1].Action != "delete" {
		t.Fatalf("a delete's retry: %+v", claimed[1])
	}

	// Rescheduled: the failure is kept, and the retry is due again.
	due := base.Add(10 * time.Second)
	if err := s.RescheduleScriptRetry(ctx, first.ID, "still failing", 2, due); err != nil {
		t.Fatal(err)
	}
	if next, err := s.NextScriptRetryDue(ctx); err != nil || !next.Equal(due) {
		t.Fatalf("next due after reschedule: %v %v", next, err)
	}
	again, err := s.ClaimScriptRetries(ctx, due, until, 10)
	if err != nil || len(again) != 1 || again[0].Error != "still failing" || again[0].Attempts != 2 {
		t.Fatalf("claim after reschedule: %+v %v", again, err)
	}

	// Deleted.
	if err := s.DeleteScriptRetry(ctx, second.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteScriptRetry(ctx, second.ID); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("delete twice: %v", err)
	}
	if err := s.RescheduleScriptRetry(ctx, second.ID, "x", 3, due); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("reschedule a deleted retry: %v", err)
	}

	// Promoted: a dead letter of the same ID, created at the promotion.
	at := base.Add(time.Minute)
	d, err := s.PromoteScriptRetry(ctx, first.ID, "failed every retry", 3, at)
	if err != nil || d.ID != first.ID || d.Attempts != 3 || d.Error != "failed every retry" || !d.CreatedAt.Equal(at) {
		t.Fatalf("promoted: %+v %v", d, err)
	}
	stored, err := s.GetDeadLetter(ctx, first.ID)
	if err != nil || stored.Kind != storage.DeadLetterRecord || !stored.ResolvedAt.IsZero() || stored.URI != in.URI ||
		stored.Attempts != 3 || !stored.CreatedAt.Equal(at) {
		t.Fatalf("the promoted dead letter: %+v %v", stored, err)
	}
	sameJSON(t, stored.Record, in.Record)
	if n, _ := s.CountDeadLetters(ctx, storage.DeadLetterQuery{}); n != 2 {
		t.Fatalf("dead letters after the promotion: %d", n)
	}
	if _, err := s.PromoteScriptRetry(ctx, first.ID, "x", 4, at); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("promote twice: %v", err)
	}
	if next, err := s.NextScriptRetryDue(ctx); err != nil || !next.IsZero() {
		t.Fatalf("next due with none left: %v %v", next, err)
	}
}

// sameRetry compares two retries field by field, Record excluded.
func sameRetry(a, b storage.ScriptRetry) bool {
	return a.ID == b.ID && a.Kind == b.Kind && a.LexiconID == b.LexiconID && a.URI == b.URI && a.DID == b.DID &&
		a.Collection == b.Collection && a.RKey == b.RKey && a.Action == b.Action && a.CID == b.CID && a.Rev == b.Rev &&
		a.Error == b.Error && a.Attempts == b.Attempts && a.CreatedAt.Equal(b.CreatedAt) && a.DueAt.Equal(b.DueAt)
}

// testScriptRetryClaims: a claim takes the due retries, earliest first,
// and holds them until its end; concurrent claims never share a retry.
func testScriptRetryClaims(t *testing.T, s storage.Store) {
	var ids []string
	for i := range 20 {
		r := addScriptRetryT(t, s, storage.ScriptRetry{DeadLetter: deadLetter("app.test.a", "k", base),
			DueAt: base.Add(time.Duration(i) * time.Second)})
		ids = append(ids, r.ID)
	}
	if got := claimIDs(t, s, base.Add(-time.Second), base.Add(time.Hour), 10); len(got) != 0 {
		t.Fatalf("claimed before due: %v", got)
	}
	// The earliest due first.
	held := base.Add(time.Hour)
	if got, want := claimIDs(t, s, base.Add(4*time.Second), held, 3), sorted(ids[:3]); !slices.Equal(got, want) {
		t.Fatalf("earliest due: %v, want %v", got, want)
	}
	// Held until the claim ends, then due again.
	if got, want := claimIDs(t, s, base.Add(4*time.Second), held, 10), sorted(ids[3:5]); !slices.Equal(got, want) {
		t.Fatalf("the rest of the due: %v, want %v", got, want)
	}
	if got := claimIDs(t, s, base.Add(4*time.Second), held, 10); len(got) != 0 {
		t.Fatalf("claimed twice: %v", got)
	}

	// Concurrent claims split the due retries between them.
	now := base.Add(30 * time.Second)
	var (
		mu  sync.Mutex
		all []string
		wg  sync.WaitGroup
	)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				claimed, err := s.ClaimScriptRetries(context.Background(), now, held, 2)
				if err != nil {
					t.Errorf("concurrent claim: %v", err)
					return
				}
				if len(claimed) == 0 {
					return
				}
				mu.Lock()
				for _, r := range claimed {
					all = append(all, r.ID)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	slices.Sort(all)
	if want := sorted(ids[5:]); !slices.Equal(all, want) {
		t.Fatalf("concurrent claims took %v, want each of %v once", all, want)
	}
	if got, want := claimIDs(t, s, held, held.Add(time.Hour), 100), sorted(ids); !slices.Equal(got, want) {
		t.Fatalf("after the claims ran out: %v, want %v", got, want)
	}
}

func sorted(ids []string) []string {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}
