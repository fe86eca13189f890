package appview_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/testing/refpds"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// TestReferencePDSOnDemandBackfill is the on-demand backfill end to end
// against the reference PDS: an account holding records signs in to the
// dashboard (OAuth with its PDS), and its repository is fetched at once,
// as a verified CAR export, with no job: its records of the record
// collection are indexed, the other collection's are not, and the event
// log says so (backfill.on_demand, trigger sign_in).
func TestReferencePDSOnDemandBackfill(t *testing.T) {
	t.Parallel()
	n := refpds.Start(t)
	const post = "app.test.ondemand.post"
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		ctx := context.Background()
		store := open(t)
		env := testenv.New(t, store, appview.Config{
			Network:  appview.NetworkConfig{PLCURL: n.PLCURL},
			Security: appview.SecurityConfig{SessionSecret: testSessionSecret},
		})
		doc := `{"lexicon":1,"id":"` + post + `","defs":{"main":{"type":"record","key":"tid","record":{"type":"object","required":["text"],"properties":{"text":{"type":"string"}}}}}}`
		if _, err := env.App.Lexicons().Put(ctx, lexicon.Upload{Document: json.RawMessage(doc), Backfill: new(false)}); err != nil {
			t.Fatal(err)
		}
		alice := n.CreateAccount(t, "ondemand-"+t.Name()[strings.LastIndexByte(t.Name(), '/')+1:])
		want := map[string]string{}
		for _, text := range []string{"one", "two", "three"} {
			uri, cid := alice.CreateRecord(t, post, map[string]any{"text": text, "createdAt": time.Now().UTC().Format(time.RFC3339)})
			want[uri] = cid
		}
		alice.CreateRecord(t, "app.test.ondemand.other", map[string]any{"text": "not wanted"})

		noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := noRedirect.Get(env.URL + "/auth/login?handle=" + url.QueryEscape(alice.DID))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		flow := newHeadlessSignIn(t, nil, "", "")
		flow.discover(n.PDSPublicURL)
		cb := flow.authorize(resp.Header.Get("Location"), alice.Handle, alice.Password)
		if r := testenv.Request(t, "GET", cb.String(), nil); r.Status != 200 || r.Object(t)["did"] != alice.DID {
			t.Fatalf("callback: %d %s", r.Status, r.Raw)
		}

		deadline := time.Now().Add(60 * time.Second)
		var entry storage.Event
		for {
			events, _, err := store.ListEvents(ctx, storage.EventFilter{Type: "backfill.on_demand", Subject: alice.DID, Limit: 5})
			if err != nil {
				t.Fatal(err)
			}
			if len(events) > 0 {
				entry = events[0]
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("no backfill.on_demand entry after the sign-in")
			}
			time.Sleep(20 * time.Millisecond)
		}
		var detail map[string]any
		if err := json.Unmarshal(entry.Detail, &detail); err != nil {
			t.Fatal(err)
		}
		if detail["trigger"] != "sign_in" || detail["outcome"] != "fetched" || detail["fetch_method"] != "car" || detail["records"] != 3.0 {
			t.Fatalf("entry: %s", entry.Detail)
		}
		page, err := store.ListRecords(ctx, storage.ListQuery{Collection: post, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Records) != len(want) {
			t.Fatalf("%d records indexed, want %d", len(page.Records), len(want))
		}
		for _, rec := range page.Records {
			if want[rec.URI] != rec.CID || rec.Rev == "" {
				t.Errorf("%s: cid %s rev %q, want cid %s", rec.URI, rec.CID, rec.Rev, want[rec.URI])
			}
		}
		if all, _ := store.CountRecords(ctx, ""); all != int64(len(want)) {
			t.Fatalf("%d records in all, want %d", all, len(want))
		}
		if jobs, _ := store.ListBackfillJobs(ctx); len(jobs) != 0 {
			t.Fatalf("a job was created: %+v", jobs)
		}
	})
}
