package appview_test

import (
	"context"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/testing/refpds"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// TestReferencePDSBackfillByCAR backfills two accounts of the reference
// PDS by CAR: their getRepo exports are verified against the reference
// PLC's DID documents, and afterwards Lexview holds exactly the records
// the PDS lists (URIs and CIDs), created, updated and deleted ones
// included, with a stale stored record removed; each repository was
// fetched by CAR.
func TestReferencePDSBackfillByCAR(t *testing.T) {
	t.Parallel()
	n := refpds.Start(t)
	const collection = "com.example.refbackfill.note"
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		store := open(t)
		env := plcEnv(t, store, n.PLCURL, appview.Config{})
		admin := env.Bootstrap(t)
		r := admin.Do(t, "POST", "/admin/lexicons", map[string]any{"lexicon_json": noteSchema(collection, "text"), "backfill": false})
		expect(t, r, 201, "")

		suffix := t.Name()[strings.LastIndexByte(t.Name(), '/')+1:]
		alice, bob := n.CreateAccount(t, "bfa-"+suffix), n.CreateAccount(t, "bfb-"+suffix)
		for i := range 3 {
			alice.CreateRecord(t, collection, map[string]any{"text": "alice " + string(rune('a'+i))})
		}
		alice.CreateRecord(t, "com.example.refbackfill.other", map[string]any{"text": "not wanted"})
		bob.PutRecord(t, collection, "3kbobnote0001", map[string]any{"text": "first"})
		bob.PutRecord(t, collection, "3kbobnote0001", map[string]any{"text": "edited"})
		bob.PutRecord(t, collection, "3kbobnote0002", map[string]any{"text": "gone soon"})
		bob.DeleteRecord(t, collection, "3kbobnote0002")

		// A record Lexview holds that alice's repository does not.
		stale := "at://" + alice.DID + "/" + collection + "/3kstalestale2"
		err := store.ApplyBatch(context.Background(), storage.Batch{Ops: []storage.RecordOp{{Record: storage.Record{
			URI: stale, DID: alice.DID, Collection: collection, RKey: "3kstalestale2", CID: "bafyreib2rxk3rybk3aobmv5cjuql3bm2twh4jo5uxgf5j7kqjcbbuqe5xm",
			Rev: "2222222222222", Value: []byte(`{"$type":"` + collection + `","text":"stale"}`),
		}}}})
		if err != nil {
			t.Fatal(err)
		}

		r = admin.Do(t, "POST", "/admin/backfill", map[string]any{"collection": collection, "dids": []string{alice.DID, bob.DID}})
		expect(t, r, 201, "")
		id, _ := r.Object(t)["id"].(string)
		waitBackfill(t, admin, id)

		r = admin.Do(t, "GET", "/admin/backfill/"+id+"/repos", nil)
		var repos struct {
			Repos []struct {
				DID         string  `json:"did"`
				Status      string  `json:"status"`
				FetchMethod *string `json:"fetch_method"`
			} `json:"repos"`
		}
		r.JSON(t, &repos)
		if len(repos.Repos) != 2 {
			t.Fatalf("repos: %s", r.Raw)
		}
		for _, rp := range repos.Repos {
			if rp.Status != "fetched" || rp.FetchMethod == nil || *rp.FetchMethod != "car" {
				t.Errorf("repo %s: %s", rp.DID, r.Raw)
			}
		}
		for _, acct := range []*refpds.Account{alice, bob} {
			want := pdsRecords(t, acct, collection)
			got := indexedRecords(t, admin, acct.DID, collection)
			if !slices.Equal(got, want) {
				t.Errorf("%s: Lexview holds\n%q\nthe PDS holds\n%q", acct.Handle, got, want)
			}
		}
		if _, err := store.GetRecord(context.Background(), stale); err == nil {
			t.Error("the stale record was not removed")
		}
	})
}

// waitBackfill waits until job id completes (30 s at most).
func waitBackfill(t *testing.T, admin *testenv.Admin, id string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := admin.Do(t, "GET", "/admin/backfill/status", nil)
		var jobs []struct {
			ID, Status string
			Error      *string
		}
		r.JSON(t, &jobs)
		for _, j := range jobs {
			if j.ID != id {
				continue
			}
			switch j.Status {
			case "completed":
				return
			case "failed", "cancelled":
				t.Fatalf("backfill %s: %s", j.Status, r.Raw)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("backfill did not complete: %s", r.Raw)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// pdsRecords lists an account's records of collection at its PDS as
// "uri cid", sorted.
func pdsRecords(t *testing.T, acct *refpds.Account, collection string) []string {
	t.Helper()
	var out struct {
		Records []struct{ URI, CID string } `json:"records"`
	}
	acct.Query(t, "com.atproto.repo.listRecords", url.Values{"repo": {acct.DID}, "collection": {collection}, "limit": {"100"}}, &out)
	var list []string
	for _, rec := range out.Records {
		list = append(list, rec.URI+" "+rec.CID)
	}
	slices.Sort(list)
	return list
}

// indexedRecords lists the records Lexview holds of an account's
// collection as "uri cid", sorted.
func indexedRecords(t *testing.T, admin *testenv.Admin, did, collection string) []string {
	t.Helper()
	r := admin.Do(t, "GET", "/admin/records?"+url.Values{"collection": {collection}, "did": {did}, "limit": {"100"}}.Encode(), nil)
	var out struct {
		Records []struct{ URI, CID string } `json:"records"`
	}
	r.JSON(t, &out)
	var list []string
	for _, rec := range out.Records {
		list = append(list, rec.URI+" "+rec.CID)
	}
	slices.Sort(list)
	return list
}
