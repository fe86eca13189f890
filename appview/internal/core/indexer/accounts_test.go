package indexer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lexview/lexview/storage"
)

// TestWriterAccountsAfterEarlierChanges: an inactive account state
// submitted after a change of the account (not yet committed) removes it
// too, and the account's later changes are not written; once it is active
// again they are. On both backends, with and without bulk lanes.
func TestWriterAccountsAfterEarlierChanges(t *testing.T) {
	forEachMode(t, func(t *testing.T, open func(testing.TB) storage.Store, bulkWriters int) {
		store := open(t)
		w := setup(t, store, bulkWriters)
		ctx := context.Background()
		if _, err := w.Write(ctx, "test", []storage.Change{note(storage.OpCreate, "a", "3k001", "one")}); err != nil {
			t.Fatal(err)
		}
		// Queued just before the account event, committed with it or
		// before it: either way it must not survive it.
		if _, err := w.Submit(ctx, "test", []storage.Change{note(storage.OpCreate, "b", "3k002", "two")}, nil); err != nil {
			t.Fatal(err)
		}
		done, err := w.SubmitAccounts(ctx, "test", []storage.AccountState{{DID: "did:plc:w", Status: "takendown"}})
		if err != nil {
			t.Fatal(err)
		}
		waitDone(t, done)
		for _, rkey := range []string{"a", "b"} {
			if _, err := store.GetRecord(ctx, "at://did:plc:w/app.test.note/"+rkey); !errors.Is(err, storage.ErrNotFound) {
				t.Fatalf("record %s after the takedown: %v", rkey, err)
			}
		}
		if _, err := w.WriteBulk(ctx, "backfill", []storage.Change{note(storage.OpCreate, "c", "3k003", "three")}); err != nil {
			t.Fatal(err)
		}
		if _, err := store.GetRecord(ctx, "at://did:plc:w/app.test.note/c"); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("a write while taken down was stored: %v", err)
		}
		done, err = w.SubmitAccounts(ctx, "test", []storage.AccountState{{DID: "did:plc:w", Active: true}})
		if err != nil {
			t.Fatal(err)
		}
		waitDone(t, done)
		if _, err := w.Write(ctx, "test", []storage.Change{note(storage.OpCreate, "d", "3k004", "four")}); err != nil {
			t.Fatal(err)
		}
		if _, err := store.GetRecord(ctx, "at://did:plc:w/app.test.note/d"); err != nil {
			t.Fatalf("a write once active again: %v", err)
		}
		if st, err := store.GetAccountState(ctx, "did:plc:w"); err != nil || !st.Active {
			t.Fatalf("account state %+v, %v", st, err)
		}
	})
}

func waitDone(t *testing.T, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the account states were not committed")
	}
}
