package appview_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/internal/oauthtest"
	"github.com/lexview/lexview/lexicon"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// TestDeviceSessionAsksForTheAccount: registering a device session asks
// for the account's repository at once (trigger oauth_session), without
// holding the answer: the registration answers 200 and the event log
// then records the fetch (failed here: the stand-in PDS serves no
// repositories).
func TestDeviceSessionAsksForTheAccount(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env := testenv.New(t, open(t), appview.Config{})
		doc := `{"lexicon":1,"id":"app.test.post","defs":{"main":{"type":"record","key":"tid","record":{"type":"object","properties":{}}}}}`
		if _, err := env.App.Lexicons().Put(context.Background(), lexicon.Upload{Document: json.RawMessage(doc), Backfill: new(false)}); err != nil {
			t.Fatal(err)
		}
		pds := oauthtest.New(t, oauthtest.Options{})
		did := env.PLC.NewAccount(t, false, pds.URL).DID.String()
		client, secret := env.NewClient(t, apiclients.NewClient{})
		app := testenv.AppClient{Key: client.Key, Secret: secret}
		p := env.Provision(t, app)
		access, refresh := pds.IssueTokens(did, p.Signer.JKT())
		if r := env.Do(t, "POST", "/oauth/sessions", p.Registration(did, access, refresh, pds.URL), app.Headers()...); r.Status != 200 {
			t.Fatalf("registration: %d %s", r.Status, r.Raw)
		}
		deadline := time.Now().Add(60 * time.Second)
		for {
			events, _, err := env.Store.ListEvents(context.Background(), storage.EventFilter{Type: "backfill.on_demand", Subject: did, Limit: 5})
			if err != nil {
				t.Fatal(err)
			}
			if len(events) > 0 {
				var d map[string]any
				if err := json.Unmarshal(events[0].Detail, &d); err != nil || d["trigger"] != "oauth_session" {
					t.Fatalf("entry: %s (%v)", events[0].Detail, err)
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("no backfill.on_demand entry after a device session was registered")
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}
