package backfill_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/bluesky-social/indigo/atproto/atcrypto"

	"github.com/lexview/lexview/backfill"
	"github.com/lexview/lexview/internal/backfilltest"
	"github.com/lexview/lexview/internal/repocar/repocartest"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// signingKey returns a new account signing key and its public half.
func signingKey(t testing.TB) (atcrypto.PrivateKey, atcrypto.PublicKey) {
	t.Helper()
	k, err := atcrypto.GeneratePrivateKeyK256()
	if err != nil {
		t.Fatal(err)
	}
	pub, err := k.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	return k, pub
}

// TestBackfillByCAR: repositories are fetched whole with getRepo and
// verified; the records of the wanted collection are indexed with the
// commit's rev and CID (no listRecords call); a PDS without getRepo is
// listed instead; a spoiled export (a tampered record, a foreign
// signature) fails its repository and indexes none of its records; each
// repository's row says how it was fetched; stored records the export
// lacks are removed, newer live versions stay.
func TestBackfillByCAR(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		p, car, plain := backfilltest.NewPLC(t), backfilltest.NewPDS(t), backfilltest.NewPDS(t)
		strangerKey, _ := signingKey(t)
		for i := range 4 {
			key, pub := signingKey(t)
			p.AddKey(did(i), car.URL(), pub)
			car.ServeRepo(did(i), key)
			car.AddRepo(did(i), postNSID, 5, "3kaaaaaaaaa"+string(rune('a'+i))+"2")
			car.AddRepo(did(i), likeNSID, 2, "3kaaaaaaaaa"+string(rune('a'+i))+"2")
		}
		car.SpoilRepo(did(2), repocartest.Spoil{TamperRecord: postNSID + "/3k00000000001"})
		car.SpoilRepo(did(3), repocartest.Spoil{SignWith: strangerKey})
		p.Add(did(4), plain.URL())
		plain.AddRepo(did(4), postNSID, 4, "3kaaaaaaaaae2")

		store := open(t)
		uri := func(i int, rkey string) string { return "at://" + did(i) + "/" + postNSID + "/" + rkey }
		// Stored before the backfill: a record the repository no longer
		// holds (removed), and a version newer than the export (kept).
		err := store.ApplyBatch(context.Background(), storage.Batch{Ops: []storage.RecordOp{
			{Record: storage.Record{URI: uri(0, "3k00000000099"), DID: did(0), Collection: postNSID, RKey: "3k00000000099",
				CID: backfilltest.CID, Rev: "3kaaaaaaaaa02", Value: []byte(`{"$type":"app.test.post","text":"gone"}`)}},
			{Record: storage.Record{URI: uri(1, "3k00000000000"), DID: did(1), Collection: postNSID, RKey: "3k00000000000",
				CID: backfilltest.CID, Rev: "3kzzzzzzzzzz2", Value: []byte(`{"$type":"app.test.post","text":"newer"}`)}},
		}})
		if err != nil {
			t.Fatal(err)
		}
		h := newHarness(t, store, p, "")
		mgr := h.start()
		job, err := mgr.Create(t.Context(), backfill.Request{Collection: postNSID,
			Accounts: []string{did(0), did(1), did(2), did(3), did(4)}})
		if err != nil {
			t.Fatal(err)
		}
		done := h.waitStatus(job.ID, storage.BackfillCompletedWithErrors)
		if counters(done) != "5/5/3/14" || num(done.FailedRepos) != 2 {
			t.Fatalf("job: %s", describe(done))
		}
		repos := h.repos(job.ID)
		for i, want := range []string{"car fetched", "car fetched", "car failed", "car failed", "list_records fetched"} {
			r := repos[did(i)]
			if got := r.FetchMethod + " " + r.Status; got != want {
				t.Errorf("%s: %s (%s), want %s", did(i), got, r.Error, want)
			}
		}
		if e := repos[did(2)].Error; !strings.Contains(e, "does not match its hashes") {
			t.Errorf("tampered export: %q", e)
		}
		if e := repos[did(3)].Error; !strings.Contains(e, "signature does not verify") {
			t.Errorf("foreign signature: %q", e)
		}
		// 5 posts of each sound repository, 4 listed: the newer version of
		// did(1)'s first post stays; the spoiled ones index nothing, and
		// no like (not wanted) is indexed.
		if n := h.count(postNSID); n != 14 {
			t.Errorf("%d posts indexed, want 14", n)
		}
		if n := h.count(likeNSID); n != 0 {
			t.Errorf("%d likes indexed, want 0", n)
		}
		rec, err := store.GetRecord(t.Context(), uri(0, "3k00000000003"))
		var value struct{ Text string }
		if err != nil || rec.Rev != "3kaaaaaaaaaa2" || !strings.HasPrefix(rec.CID, "bafyrei") ||
			json.Unmarshal(rec.Value, &value) != nil || value.Text != "record 3 of "+did(0) {
			t.Errorf("a record from the export: %+v %s %v", rec, rec.Value, err)
		}
		if _, err := store.GetRecord(t.Context(), uri(0, "3k00000000099")); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("a record the export lacks stays: %v", err)
		}
		if rec, _ := store.GetRecord(t.Context(), uri(1, "3k00000000000")); !strings.Contains(string(rec.Value), "newer") {
			t.Errorf("a newer live version was overwritten: %s", rec.Value)
		}
		if car.ListCalls() != 0 || car.GetRepoCalls() != 4 || plain.ListCalls() == 0 {
			t.Errorf("calls: car PDS listRecords %d getRepo %d, plain PDS listRecords %d",
				car.ListCalls(), car.GetRepoCalls(), plain.ListCalls())
		}
	})
}

// TestBackfillByCARRetriesCutDownloads: a getRepo download the network
// cuts short mid-body is fetched again with the bounded backoff of any
// failed request: cut twice, the repository is fetched on the third try;
// cut every time, it fails after the retries (1 + Options.Retries requests)
// naming the cause, as before; an export refused by verification is not
// fetched again.
func TestBackfillByCARRetriesCutDownloads(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		p, pds := backfilltest.NewPLC(t), backfilltest.NewPDS(t)
		for i := range 3 {
			key, pub := signingKey(t)
			p.AddKey(did(i), pds.URL(), pub)
			pds.ServeRepo(did(i), key)
			pds.AddRepo(did(i), postNSID, 4, "3kaaaaaaaaaa2")
		}
		pds.CutRepo(did(0), 2)
		pds.CutRepo(did(1), 100)
		pds.SpoilRepo(did(2), repocartest.Spoil{TamperRecord: postNSID + "/3k00000000001"})
		h := newHarness(t, open(t), p, "")
		h.tune = func(c *backfill.Options) { c.Retries = 3 }
		mgr := h.start()
		job, err := mgr.Create(t.Context(), backfill.Request{Collection: postNSID, Accounts: []string{did(0), did(1), did(2)}})
		if err != nil {
			t.Fatal(err)
		}
		done := h.waitStatus(job.ID, storage.BackfillCompletedWithErrors)
		if counters(done) != "3/3/1/4" {
			t.Fatalf("job: %s", describe(done))
		}
		repos := h.repos(job.ID)
		if r := repos[did(0)]; r.Status != storage.RepoFetched || r.FetchMethod != backfill.FetchCAR || r.RecordsFetched != 4 {
			t.Errorf("cut twice: %+v", r)
		}
		if r := repos[did(1)]; r.Status != storage.RepoFailed || !strings.Contains(r.Error, "unexpected EOF") ||
			r.FailureReason != backfill.ReasonUnreachable {
			t.Errorf("cut every time: %+v", r)
		}
		if r := repos[did(2)]; r.Status != storage.RepoFailed || !strings.Contains(r.Error, "does not match its hashes") ||
			r.FailureReason != backfill.ReasonVerification {
			t.Errorf("tampered: %+v", r)
		}
		// 3 for did(0), 4 for did(1), 1 for did(2).
		if n := pds.GetRepoCalls(); n != 8 {
			t.Errorf("%d getRepo requests, want 8", n)
		}
		if n := h.count(postNSID); n != 4 {
			t.Errorf("%d posts indexed, want 4", n)
		}
	})
}

// TestBackfillListRecordsSetting: with backfill.fetch = list_records the
// repositories are listed even where getRepo is offered.
func TestBackfillListRecordsSetting(t *testing.T) {
	t.Parallel()
	p, pds := backfilltest.NewPLC(t), backfilltest.NewPDS(t)
	key, pub := signingKey(t)
	p.AddKey(did(0), pds.URL(), pub)
	pds.ServeRepo(did(0), key)
	pds.AddRepo(did(0), postNSID, 3, "3kaaaaaaaaaa2")
	h := newHarness(t, storagetest.SQLite(t), p, "")
	h.setting(backfill.SettingFetch, backfill.FetchListRecords)
	mgr := h.start()
	job, err := mgr.Create(t.Context(), backfill.Request{Accounts: []string{did(0)}})
	if err != nil {
		t.Fatal(err)
	}
	h.waitStatus(job.ID, storage.BackfillCompleted)
	if r := h.repos(job.ID)[did(0)]; r.FetchMethod != backfill.FetchListRecords || pds.GetRepoCalls() != 0 || h.count(postNSID) != 3 {
		t.Fatalf("repo %+v, getRepo calls %d, %d posts", r, pds.GetRepoCalls(), h.count(postNSID))
	}
}

// TestResync: a repository is fetched whole and verified outside any job,
// its records of every record collection written and a record it no
// longer holds removed; a spoiled export writes nothing.
func TestResync(t *testing.T) {
	t.Parallel()
	p, pds := backfilltest.NewPLC(t), backfilltest.NewPDS(t)
	key, pub := signingKey(t)
	p.AddKey(did(0), pds.URL(), pub)
	pds.ServeRepo(did(0), key)
	pds.AddRepo(did(0), postNSID, 3, "3kaaaaaaaaaa2")
	pds.AddRepo(did(0), likeNSID, 2, "3kaaaaaaaaaa2")
	h := newHarness(t, storagetest.SQLite(t), p, "")
	mgr := h.start()
	res, err := mgr.Resync(t.Context(), did(0))
	if err != nil || res.Rev != "3kaaaaaaaaaa2" || res.Records != 5 || h.count(postNSID) != 3 || h.count(likeNSID) != 2 {
		t.Fatalf("resync: %+v %v; %d posts %d likes", res, err, h.count(postNSID), h.count(likeNSID))
	}
	pds.DeleteRecord(did(0), postNSID, "3k00000000001", "3kaaaaaaaaab2")
	if res, err = mgr.Resync(t.Context(), did(0)); err != nil || res.Deleted != 1 || h.count(postNSID) != 2 {
		t.Fatalf("second resync: %+v %v; %d posts", res, err, h.count(postNSID))
	}
	strangerKey, _ := signingKey(t)
	pds.SpoilRepo(did(0), repocartest.Spoil{SignWith: strangerKey})
	pds.AddRepo(did(0), postNSID, 1, "3kaaaaaaaaac2")
	if _, err := mgr.Resync(t.Context(), did(0)); err == nil || h.count(postNSID) != 2 {
		t.Fatalf("spoiled resync: %v; %d posts", err, h.count(postNSID))
	}
}
