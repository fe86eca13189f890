package ingest_test

import (
	"context"
	"testing"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/testing/firehosetest"
	"github.com/lexview/lexview/internal/backfilltest"
	"github.com/lexview/lexview/internal/jetstreamtest"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// TestJetstreamAccountStatus: Jetstream's account events go through the
// same path as the firehose's. A deactivated account's records are
// removed, and its commits after that are not indexed (the store skips
// the records of an account it holds inactive); reactivated, its
// repository is fetched again by CAR. On both stores.
func TestJetstreamAccountStatus(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		ctx := context.Background()
		store := open(t)
		js := jetstreamtest.New(t)
		plc, pds := backfilltest.NewPLC(t), backfilltest.NewPDS(t)
		app := startApp(t, store, appview.Config{
			Ingest:  appview.IngestConfig{JetstreamURL: js.URL, RelayURL: pds.URL()},
			Network: appview.NetworkConfig{Directory: plc.Directory(), PLCURL: plc.URL(), AllowPrivateNetworks: true},
		})
		defer stop(t, app)
		putLexicon(t, app, "app.test.post")
		eventually(t, "a subscription", func() bool { return js.Connected() == 1 })
		// alice's repository is exported by the PDS stand-in, signed.
		alice, err := firehosetest.NewRepo("did:plc:alice")
		if err != nil {
			t.Fatal(err)
		}
		pub, err := alice.Key.PublicKey()
		if err != nil {
			t.Fatal(err)
		}
		plc.AddKey(alice.DID, pds.URL(), pub)
		pds.ServeRepo(alice.DID, alice.Key)
		pds.AddRepo(alice.DID, "app.test.post", 2, "3kaaaaaaaaac2")
		w := &resyncWorld{t: t, store: store}
		postOf := func(rkey string) map[string]any {
			return map[string]any{"$type": "app.test.post", "text": "live " + rkey}
		}

		js.Commit(alice.DID, "create", "app.test.post", "3k00000000000", "3kaaaaaaaaaa1", cid, postOf("3k00000000000"))
		eventually(t, "alice's post", func() bool { return len(w.posts(alice.DID)) == 1 })
		js.Publish(map[string]any{"did": alice.DID, "kind": "account", "account": map[string]any{"active": false, "status": "deactivated"}})
		eventually(t, "alice's records removed", func() bool { return len(w.posts(alice.DID)) == 0 })
		js.Commit(alice.DID, "create", "app.test.post", "3k00000000001", "3kaaaaaaaaaa2", cid, postOf("3k00000000001"))
		js.Commit("did:plc:bob", "create", "app.test.post", "3kbbb", "3kaaaaaaaaaa3", cid, postOf("3kbbb"))
		eventually(t, "bob's post", func() bool { return len(w.posts("did:plc:bob")) == 1 })
		if got := w.posts(alice.DID); len(got) != 0 {
			t.Fatalf("a deactivated account's commit was indexed: %v", got)
		}
		if st, err := store.GetAccountState(ctx, alice.DID); err != nil || st.Active || st.Status != "deactivated" {
			t.Fatalf("alice's state %+v, %v", st, err)
		}

		js.Publish(map[string]any{"did": alice.DID, "kind": "account", "account": map[string]any{"active": true}})
		eventually(t, "alice resynced", func() bool { return len(w.events("source.resynced", alice.DID)) == 1 })
		want := map[string]string{"3k00000000000": "record 0 of " + alice.DID, "3k00000000001": "record 1 of " + alice.DID}
		if got := w.posts(alice.DID); len(got) != 2 || got["3k00000000000"] != want["3k00000000000"] || got["3k00000000001"] != want["3k00000000001"] {
			t.Fatalf("alice's posts after reactivation %v, want %v", got, want)
		}
	})
}
