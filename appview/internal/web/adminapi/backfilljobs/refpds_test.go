package backfilljobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bluesky-social/indigo/atproto/identity"
	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/testing/refpds"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// didDirectories resolves DIDs through the first directory that knows
// them: here the reference PDS's PLC for its accounts, and the test PLC for
// the admin.
type didDirectories []identity.Directory

func (d didDirectories) LookupDID(ctx context.Context, did syntax.DID) (*identity.Identity, error) {
	var errs []error
	for _, dir := range d {
		ident, err := dir.LookupDID(ctx, did)
		if err == nil {
			return ident, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

func (d didDirectories) LookupHandle(context.Context, syntax.Handle) (*identity.Identity, error) {
	return nil, identity.ErrHandleNotFound
}

func (d didDirectories) Lookup(ctx context.Context, a syntax.AtIdentifier) (*identity.Identity, error) {
	did, err := a.AsDID()
	if err != nil {
		return nil, identity.ErrHandleNotFound
	}
	return d.LookupDID(ctx, did)
}

func (d didDirectories) Purge(context.Context, syntax.AtIdentifier) error { return nil }

// TestReferencePDS backfills from the Bluesky reference PDS (npm
// @atproto/pds): a job naming two accounts indexes exactly their records
// of the collection, and a network job with RELAY_URL set to the PDS (which
// has no listReposByCollection) finds them through listRepos.
func TestReferencePDS(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts the reference PDS")
	}
	net := refpds.Start(t)
	alice, bob, carol := net.CreateAccount(t, "alice"), net.CreateAccount(t, "bob"), net.CreateAccount(t, "carol")
	want := map[string]string{} // uri → cid
	post := func(a *refpds.Account, text string) string {
		uri, cid := a.CreateRecord(t, postNSID, map[string]any{"text": text, "createdAt": time.Now().UTC().Format(time.RFC3339)})
		want[uri] = cid
		return uri
	}
	for i := range 3 {
		post(alice, fmt.Sprintf("alice %d", i))
	}
	post(bob, "bob 0")
	gone := post(bob, "bob 1")
	bob.DeleteRecord(t, postNSID, gone[strings.LastIndexByte(gone, '/')+1:])
	delete(want, gone)
	bob.CreateRecord(t, "app.test.other", map[string]any{"text": "not backfilled"})
	carol.CreateRecord(t, "app.test.other", map[string]any{"text": "not backfilled"})

	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		plc := testenv.NewPLC(t)
		dir := didDirectories{
			&identity.BaseDirectory{PLCURL: net.PLCURL, SkipHandleVerification: true},
			&identity.BaseDirectory{PLCURL: plc.URL, SkipHandleVerification: true},
		}
		store := open(t)
		env := testenv.NewUnstarted(t, store, appview.Config{
			Network: appview.NetworkConfig{PLCURL: net.PLCURL, Directory: dir},
			Ingest:  appview.IngestConfig{RelayURL: net.PDSURL},
		})
		env.PLC = plc
		if err := env.App.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		if _, err := env.App.Lexicons().Put(t.Context(), lexicon.Upload{Document: json.RawMessage(recordLexicon(postNSID)), Backfill: new(false)}); err != nil {
			t.Fatal(err)
		}
		w := &world{env: env, su: env.Bootstrap(t), dir: nil}

		id := w.create(t, map[string]any{"collection": postNSID, "dids": []string{alice.DID, bob.DID}})
		done := w.wait(t, id, "completed")
		if n(done.TotalRepos) != 2 || n(done.ProcessedRepos) != 2 || n(done.TotalRecords) != int64(len(want)) {
			t.Fatalf("job: %+v", done)
		}
		page, err := store.ListRecords(t.Context(), storage.ListQuery{Collection: postNSID, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, rec := range page.Records {
			got = append(got, rec.URI)
			if want[rec.URI] != rec.CID || rec.Rev == "" {
				t.Errorf("%s: cid %s rev %q, want cid %s", rec.URI, rec.CID, rec.Rev, want[rec.URI])
			}
		}
		if len(got) != len(want) || slices.Contains(got, gone) {
			t.Fatalf("indexed %v, want %d records", got, len(want))
		}
		if n, _ := store.CountRecords(t.Context(), ""); n != int64(len(want)) {
			t.Fatalf("%d records in all, want %d", n, len(want))
		}

		network := w.create(t, map[string]any{"collection": postNSID})
		done = w.wait(t, network, "completed")
		if n(done.TotalRepos) != 3 || n(done.ProcessedRepos) != 3 || n(done.TotalRecords) != int64(len(want)) {
			t.Fatalf("network job: %+v", done)
		}

		// deleteRecord on the PDS: the next backfill of the account, and
		// the next network backfill, remove the record. (Each record is
		// created and deleted here, so the PDS ends as it began.)
		held := func(uri string) bool {
			_, err := store.GetRecord(t.Context(), uri)
			if err != nil && !errors.Is(err, storage.ErrNotFound) {
				t.Fatal(err)
			}
			return err == nil
		}
		for _, scope := range []map[string]any{{"collection": postNSID, "did": alice.DID}, {"collection": postNSID}} {
			uri, _ := alice.CreateRecord(t, postNSID, map[string]any{"text": "short-lived", "createdAt": time.Now().UTC().Format(time.RFC3339)})
			w.wait(t, w.create(t, scope), "completed")
			if !held(uri) {
				t.Fatalf("%v: new record not backfilled", scope)
			}
			alice.DeleteRecord(t, postNSID, uri[strings.LastIndexByte(uri, '/')+1:])
			w.wait(t, w.create(t, scope), "completed")
			if held(uri) {
				t.Fatalf("%v: a record deleted from the PDS is still served after a backfill", scope)
			}
			if n, _ := store.CountRecords(t.Context(), postNSID); n != int64(len(want)) {
				t.Fatalf("%v: %d records, want %d", scope, n, len(want))
			}
		}
	})
}
