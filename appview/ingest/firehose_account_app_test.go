package ingest_test

import (
	"context"
	"testing"

	comatproto "github.com/bluesky-social/indigo/api/atproto"

	"github.com/lexview/lexview/appview/ingest"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

func accountEvent(did string, active bool, status string) *comatproto.SyncSubscribeRepos_Account {
	e := &comatproto.SyncSubscribeRepos_Account{Did: did, Active: active, Time: "2026-01-01T00:00:00Z"}
	if status != "" {
		e.Status = &status
	}
	return e
}

// TestFirehoseAccountStatus follows accounts through #account events in an
// App, on both stores: a deactivated account's records are removed and
// its commits skipped (event log: source.event_skipped, account_inactive);
// reactivated, its repository is fetched again by CAR and its records are
// back, the one committed while it was inactive included; taken-down and
// deleted accounts' records are removed and their statuses stored; other
// accounts' records stay.
func TestFirehoseAccountStatus(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		ctx := context.Background()
		w := newResyncWorld(t, open(t))
		alice, bob, carol, dave := w.account("did:plc:alice"), w.account("did:plc:bob"), w.account("did:plc:carol"), w.account("did:plc:dave")
		w.publish(w.commit(alice, pdsPost(alice.DID, 0), pdsPost(alice.DID, 1)), w.commit(bob, pdsPost(bob.DID, 0)),
			w.commit(carol, pdsPost(carol.DID, 0)), w.commit(dave, pdsPost(dave.DID, 0)))
		if n := len(w.posts(alice.DID)); n != 2 {
			t.Fatalf("alice has %d posts", n)
		}

		// Deactivated: records gone, commits skipped.
		w.publish(accountEvent(alice.DID, false, "deactivated"))
		eventually(t, "alice's records removed", func() bool { return len(w.posts(alice.DID)) == 0 })
		if st, err := w.store.GetAccountState(ctx, alice.DID); err != nil || st.Active || st.Status != "deactivated" {
			t.Fatalf("alice's state %+v, %v", st, err)
		}
		if evs := w.events("ingest.account_inactive", alice.DID); len(evs) != 1 || detail(t, evs[0])["status"] != "deactivated" {
			t.Fatalf("ingest.account_inactive entries %+v", evs)
		}
		w.publish(w.commit(alice, pdsPost(alice.DID, 2)))
		if got := w.posts(alice.DID); len(got) != 0 {
			t.Fatalf("a commit of a deactivated account was indexed: %v", got)
		}
		skipped := w.events("source.event_skipped", ingest.FirehoseName)
		if len(skipped) != 1 || detail(t, skipped[0])["reason"] != ingest.SkipInactive || detail(t, skipped[0])["did"] != alice.DID {
			t.Fatalf("skipped events %+v", skipped)
		}

		// Reactivated: fetched again, by CAR, with every record.
		w.pdsHolds(alice, 3)
		w.publish(accountEvent(alice.DID, true, ""))
		eventually(t, "alice resynced", func() bool { return len(w.events("source.resynced", alice.DID)) == 1 })
		if got := w.posts(alice.DID); len(got) != 3 || got["3k00000000002"] != "record 2 of "+alice.DID {
			t.Fatalf("alice's posts after reactivation: %v", got)
		}
		if gaps := w.events("source.resync_needed", alice.DID); len(gaps) != 1 || detail(t, gaps[0])["reason"] != ingest.GapReactivated {
			t.Fatalf("resync requests %+v", gaps)
		}
		if st, err := w.store.GetAccountState(ctx, alice.DID); err != nil || !st.Active {
			t.Fatalf("alice's state %+v, %v", st, err)
		}
		// An active event for an account that was never inactive fetches
		// nothing.
		w.publish(accountEvent(bob.DID, true, ""))

		// Taken down and deleted.
		w.publish(accountEvent(bob.DID, false, "takendown"), accountEvent(carol.DID, false, "deleted"))
		eventually(t, "bob's and carol's records removed", func() bool {
			return len(w.posts(bob.DID)) == 0 && len(w.posts(carol.DID)) == 0
		})
		for did, status := range map[string]string{bob.DID: "takendown", carol.DID: "deleted"} {
			if st, err := w.store.GetAccountState(ctx, did); err != nil || st.Active || st.Status != status {
				t.Fatalf("%s's state %+v, %v; want %s", did, st, err, status)
			}
		}
		if n := len(w.events("source.resync_needed", bob.DID)); n != 0 {
			t.Fatalf("bob: %d resync requests", n)
		}

		// A commit handed over just before the account event (queued in the
		// writer, not yet committed) does not outlive it.
		w.publish(w.commit(dave, pdsPost(dave.DID, 1)), accountEvent(dave.DID, false, "suspended"))
		eventually(t, "dave's records removed", func() bool { return len(w.posts(dave.DID)) == 0 })
		if got := w.posts(alice.DID); len(got) != 3 {
			t.Fatalf("alice's posts: %v", got)
		}
	})
}
