package storagetest

import (
	"context"
	"errors"
	"testing"

	"github.com/lexview/lexview/storage"
)

// testAccountState: account states are stored with a batch, after its
// record operations and in order; an inactive state removes the account's
// records (and only its), and while it stands, upserts of the account's
// records are skipped, in that batch or later ones; an active state lets
// them be written again.
func testAccountState(t *testing.T, s storage.Store) {
	ctx := context.Background()
	if _, err := s.GetAccountState(ctx, "did:plc:a"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("GetAccountState on empty store = %v", err)
	}
	rec := func(did, rkey string) storage.Record { return Rec(did, "app.test.post", rkey, base, nil) }
	apply(t, s, put(rec("did:plc:a", "1")), put(rec("did:plc:a2", "2")), put(rec("did:plc:b", "3")))

	// A record queued before the deactivation, in the same batch, is
	// removed with the others: the state applies after the operations.
	off := storage.AccountState{DID: "did:plc:a", Status: "deactivated"}
	err := s.ApplyBatch(ctx, storage.Batch{Ops: []storage.RecordOp{put(rec("did:plc:a", "4"))},
		Cursors: []storage.StreamCursor{{Name: "source:firehose", Value: 9}}, Accounts: []storage.AccountState{off}})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetAccountState(ctx, "did:plc:a"); err != nil || got != off {
		t.Fatalf("GetAccountState = %+v, %v; want %+v", got, err, off)
	}
	if got, _ := s.GetStreamCursor(ctx, "source:firehose"); got != 9 {
		t.Fatalf("cursor stored with the state: %d", got)
	}
	wantURIs(t, s, "at://did:plc:a2/app.test.post/2", "at://did:plc:b/app.test.post/3")

	// Later writes of the inactive account are skipped; the others' go in.
	apply(t, s, put(rec("did:plc:a", "5")), put(rec("did:plc:b", "6")))
	wantURIs(t, s, "at://did:plc:a2/app.test.post/2", "at://did:plc:b/app.test.post/3", "at://did:plc:b/app.test.post/6")

	// Reactivated: stored, nothing written back by itself, later writes
	// go in. States in one batch apply in order: the last one stands.
	on := storage.AccountState{DID: "did:plc:a", Active: true}
	gone := storage.AccountState{DID: "did:plc:b", Status: "takendown"}
	if err := s.ApplyBatch(ctx, storage.Batch{Accounts: []storage.AccountState{gone, on}}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetAccountState(ctx, "did:plc:a"); err != nil || got != on {
		t.Fatalf("GetAccountState after reactivation = %+v, %v", got, err)
	}
	apply(t, s, put(rec("did:plc:a", "7")))
	wantURIs(t, s, "at://did:plc:a2/app.test.post/2", "at://did:plc:a/app.test.post/7")

	// A deletion after a reactivation in one batch: deleted it stays.
	del := storage.AccountState{DID: "did:plc:a", Status: "deleted"}
	if err := s.ApplyBatch(ctx, storage.Batch{Accounts: []storage.AccountState{on, del}}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetAccountState(ctx, "did:plc:a"); got != del {
		t.Fatalf("GetAccountState after deletion = %+v", got)
	}
	wantURIs(t, s, "at://did:plc:a2/app.test.post/2")
}

// wantURIs fails unless the store holds exactly the records at uris.
func wantURIs(t *testing.T, s storage.Store, uris ...string) {
	t.Helper()
	page, err := s.ListRecords(context.Background(), storage.ListQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, r := range page.Records {
		got[r.URI] = true
	}
	for _, u := range uris {
		if !got[u] {
			t.Errorf("record %s missing", u)
		}
		delete(got, u)
	}
	for u := range got {
		t.Errorf("record %s should not be stored", u)
	}
}
