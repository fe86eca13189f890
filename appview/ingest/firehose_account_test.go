package ingest_test

import (
	"testing"

	comatproto "github.com/bluesky-social/indigo/api/atproto"

	"github.com/lexview/lexview/appview/ingest"
	"github.com/lexview/lexview/storage"
)

// TestFirehoseSkipsInactiveAccounts: after an #account event making an
// account inactive, its commits and #sync events are skipped (reported
// with the reason account_inactive and counted), others' are not; once it
// is active again its commits are indexed. A source that starts anew
// knows the status stored for an account it has not seen.
func TestFirehoseSkipsInactiveAccounts(t *testing.T) {
	t.Parallel()
	e := newFirehoseEnv(t, "app.test.post")
	e.start()
	alice, bob := e.repo("did:plc:alice"), e.repo("did:plc:bob")
	e.publish(e.commit(alice, post("a", "one")))
	takendown := "takendown"
	e.publish(&comatproto.SyncSubscribeRepos_Account{Did: alice.DID, Status: &takendown, Time: "2026-01-01T00:00:00Z"})
	sync, err := alice.Sync()
	if err != nil {
		t.Fatal(err)
	}
	e.publish(e.commit(alice, post("b", "while taken down")), sync, e.commit(bob, post("c", "bob's")))
	got := e.sink.snapshot()
	if len(got.skipped) != 2 {
		t.Fatalf("skipped %+v, want alice's commit and #sync", got.skipped)
	}
	for i, kind := range []string{"commit", "sync"} {
		if s := got.skipped[i]; s.Reason != ingest.SkipInactive || s.Kind != kind || s.DID != alice.DID || s.Err != "the account is takendown" {
			t.Fatalf("skipped[%d] = %+v", i, s)
		}
	}
	if keys := changeKeys(got.changes); len(keys) != 2 || keys[0] != "alice/a" || keys[1] != "bob/c" {
		t.Fatalf("changes %v", keys)
	}
	if n := e.src.Counts(); n.Inactive != 2 || n.Refused != 0 || len(got.resyncs) != 0 {
		t.Fatalf("counts %+v, resyncs %+v", n, got.resyncs)
	}
	if len(got.accounts) != 1 || got.accounts[0] != (ingest.AccountEvent{DID: alice.DID, Status: takendown}) {
		t.Fatalf("accounts %+v", got.accounts)
	}

	// Active again: the next commit is indexed (its since is the last
	// commit applied, so no gap: the skipped one never reached the state).
	e.publish(&comatproto.SyncSubscribeRepos_Account{Did: alice.DID, Active: true, Time: "2026-01-01T00:00:00Z"})
	e.publish(e.commit(alice, post("d", "back")))
	got = e.sink.snapshot()
	if keys := changeKeys(got.changes); len(keys) != 3 || keys[2] != "alice/d" {
		t.Fatalf("changes after reactivation %v", keys)
	}

	// A new source reads the stored status of an account it has not seen.
	e.stop()
	e.sink.mu.Lock()
	e.sink.statuses[bob.DID] = storage.AccountState{DID: bob.DID, Status: "deactivated"}
	e.sink.mu.Unlock()
	e.start()
	e.publish(e.commit(bob, post("e", "while deactivated")))
	got = e.sink.snapshot()
	if last := got.skipped[len(got.skipped)-1]; last.Reason != ingest.SkipInactive || last.DID != bob.DID || last.Err != "the account is deactivated" {
		t.Fatalf("skipped %+v", got.skipped)
	}
	if keys := changeKeys(got.changes); len(keys) != 3 {
		t.Fatalf("changes %v", keys)
	}
}

// changeKeys names changes as "did-suffix/rkey".
func changeKeys(changes []storage.Change) []string {
	out := make([]string, len(changes))
	for i, c := range changes {
		out[i] = c.DID[len("did:plc:"):] + "/" + c.RKey
	}
	return out
}
