package appview_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

const (
	msgBadFragment    = "invalid fragment_id: use # then a letter and up to 63 letters, digits, _ and -"
	msgBadServiceType = "invalid service_type: use a letter and up to 63 letters and digits, e.g. AtprotoLabeler or BskyFeedGenerator"
	msgBadEntryID     = "invalid service entry id: a positive integer is expected"
	msgEntryNotFound  = "service entry not found"
)

// putRefNoteLexicons uploads the note record, createNote procedure and
// getNotes query lexicons.
func putRefNoteLexicons(t *testing.T, env *testenv.Env) {
	t.Helper()
	for _, up := range refNoteLexicons {
		if _, err := env.App.Lexicons().Put(context.Background(), up); err != nil {
			t.Fatal(err)
		}
	}
}

// createEntry adds a service entry through the admin API and returns its
// path, /admin/service-entries/{id}.
func createEntry(t *testing.T, admin *testenv.Admin, fragment, typ string) string {
	t.Helper()
	r := admin.Do(t, "POST", "/admin/service-entries", map[string]any{"fragment_id": fragment, "service_type": typ})
	expect(t, r, 201, "")
	return fmt.Sprintf("/admin/service-entries/%v", r.Object(t)["id"])
}

// TestServiceEntriesAdmin: every rule of the service-entry endpoints, and
// their bad input.
func TestServiceEntriesAdmin(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env := testenv.New(t, open(t), appview.Config{})
		admin := env.Bootstrap(t)
		putRefNoteLexicons(t, env)
		list := func() []map[string]any {
			r := admin.Do(t, "GET", "/admin/service-entries", nil)
			expect(t, r, 200, "")
			var out []map[string]any
			r.JSON(t, &out)
			return out
		}
		if l := list(); len(l) != 0 {
			t.Fatalf("empty: %v", l)
		}
		r := admin.Do(t, "POST", "/admin/service-entries", map[string]any{"fragment_id": "#bsky_appview", "service_type": "BskyAppView"})
		expect(t, r, 201, "")
		o := r.Object(t)
		id, _ := o["id"].(float64)
		if id < 1 || id != float64(int64(id)) || o["fragment_id"] != "#bsky_appview" || o["service_type"] != "BskyAppView" || o["access_mode"] != "all" ||
			o["created_at"] == nil || o["created_at"] != o["updated_at"] || len(o) != 6 {
			t.Fatalf("created: %s", r.Raw)
		}
		appview := fmt.Sprintf("/admin/service-entries/%v", id)
		feed := createEntry(t, admin, "feed", "BskyFeedGenerator") // "#" is optional
		if l := list(); len(l) != 2 || l[0]["id"] != id || l[1]["fragment_id"] != "#feed" || l[1]["access_mode"] != "all" {
			t.Fatalf("list: %v", l)
		}

		// Bad input on creation.
		expect(t, admin.Do(t, "POST", "/admin/verification-methods", map[string]any{"fragment_id": "#atproto", "generate": true, "key_type": "p256"}), 201, "")
		for _, c := range []struct {
			body map[string]any
			msg  string
		}{
			{map[string]any{"service_type": "BskyAppView"}, "fragment_id is required"},
			{map[string]any{"fragment_id": "#", "service_type": "BskyAppView"}, msgBadFragment},
			{map[string]any{"fragment_id": "#1abc", "service_type": "BskyAppView"}, msgBadFragment},
			{map[string]any{"fragment_id": "#a b", "service_type": "BskyAppView"}, msgBadFragment},
			{map[string]any{"fragment_id": "##x", "service_type": "BskyAppView"}, msgBadFragment},
			{map[string]any{"fragment_id": "#" + strings.Repeat("a", 65), "service_type": "BskyAppView"}, msgBadFragment},
			{map[string]any{"fragment_id": "#x"}, "service_type is required"},
			{map[string]any{"fragment_id": "#x", "service_type": ""}, "service_type is required"},
			{map[string]any{"fragment_id": "#x", "service_type": "Bsky App"}, msgBadServiceType},
			{map[string]any{"fragment_id": "#x", "service_type": "1Labeler"}, msgBadServiceType},
			{map[string]any{"fragment_id": "#x", "service_type": "Atproto_Labeler"}, msgBadServiceType},
			{map[string]any{"fragment_id": "#x", "service_type": "https://example.com/type"}, msgBadServiceType},
			{map[string]any{"fragment_id": "#x", "service_type": "T" + strings.Repeat("a", 64)}, msgBadServiceType},
			{map[string]any{"fragment_id": "bsky_appview", "service_type": "BskyAppView"}, "invalid fragment_id: another service entry has it"},
			{map[string]any{"fragment_id": "#atproto", "service_type": "AtprotoLabeler"}, "invalid fragment_id: a verification method has it (DID document ids must be unique)"},
			{map[string]any{"fragment_id": 7, "service_type": "BskyAppView"}, "invalid request body"},
		} {
			expect(t, admin.Do(t, "POST", "/admin/service-entries", c.body), 400, c.msg)
		}
		expect(t, admin.Do(t, "POST", "/admin/service-entries", []byte("{")), 400, "invalid request body")
		expect(t, admin.Do(t, "POST", "/admin/verification-methods", map[string]any{"fragment_id": "#feed", "generate": true, "key_type": "p256"}), 400,
			"invalid fragment_id: a service entry has it (DID document ids must be unique)")
		if l := list(); len(l) != 2 {
			t.Fatalf("bad input stored something: %v", l)
		}

		// PUT changes only the given fields.
		expect(t, admin.Do(t, "PUT", appview, map[string]any{"access_mode": "allowlist"}), 204, "")
		if e := list()[0]; e["fragment_id"] != "#bsky_appview" || e["service_type"] != "BskyAppView" || e["access_mode"] != "allowlist" || e["created_at"] != o["created_at"] {
			t.Fatalf("after PUT access_mode: %v", e)
		}
		expect(t, admin.Do(t, "PUT", appview, map[string]any{"fragment_id": "appview", "service_type": "BskyAppViewV2"}), 204, "")
		if e := list()[0]; e["fragment_id"] != "#appview" || e["service_type"] != "BskyAppViewV2" || e["access_mode"] != "allowlist" {
			t.Fatalf("after PUT fragment and type: %v", e)
		}
		expect(t, admin.Do(t, "PUT", appview, map[string]any{}), 204, "")
		expect(t, admin.Do(t, "PUT", appview, map[string]any{"access_mode": "disabled"}), 204, "")
		expect(t, admin.Do(t, "PUT", appview, map[string]any{"access_mode": "all"}), 204, "")
		for _, c := range []struct {
			body map[string]any
			msg  string
		}{
			{map[string]any{"access_mode": "none"}, "invalid access_mode: use all, allowlist or disabled"},
			{map[string]any{"access_mode": ""}, "invalid access_mode: use all, allowlist or disabled"},
			{map[string]any{"access_mode": "ALL"}, "invalid access_mode: use all, allowlist or disabled"},
			{map[string]any{"fragment_id": "#9"}, msgBadFragment},
			{map[string]any{"fragment_id": ""}, "fragment_id is required"},
			{map[string]any{"service_type": ""}, "service_type is required"},
			{map[string]any{"service_type": "a-b"}, msgBadServiceType},
			{map[string]any{"fragment_id": "#feed"}, "invalid fragment_id: another service entry has it"},
			{map[string]any{"fragment_id": "atproto"}, "invalid fragment_id: a verification method has it (DID document ids must be unique)"},
			{map[string]any{"access_mode": "allowlist", "service_type": "bad type"}, msgBadServiceType},
		} {
			expect(t, admin.Do(t, "PUT", appview, c.body), 400, c.msg)
		}
		if e := list()[0]; e["fragment_id"] != "#appview" || e["access_mode"] != "all" || e["service_type"] != "BskyAppViewV2" {
			t.Fatalf("a refused PUT changed something: %v", e)
		}
		expect(t, admin.Do(t, "PUT", "/admin/service-entries/999999", map[string]any{"access_mode": "all"}), 404, msgEntryNotFound)
		for _, bad := range []string{"abc", "0", "-1", "1.5", "99999999999999999999"} {
			expect(t, admin.Do(t, "PUT", "/admin/service-entries/"+bad, map[string]any{"access_mode": "all"}), 400, msgBadEntryID)
			expect(t, admin.Do(t, "DELETE", "/admin/service-entries/"+bad, nil), 400, msgBadEntryID)
			expect(t, admin.Do(t, "GET", "/admin/service-entries/"+bad+"/xrpcs", nil), 400, msgBadEntryID)
			expect(t, admin.Do(t, "GET", "/admin/service-entries/"+bad+"/allowlist", nil), 400, msgBadEntryID)
		}

		// Bound methods.
		names := func(path string) []string {
			r := admin.Do(t, "GET", path, nil)
			expect(t, r, 200, "")
			var out []string
			r.JSON(t, &out)
			return out
		}
		if got := names(appview + "/xrpcs"); got == nil || len(got) != 0 {
			t.Fatalf("no bindings: %v", got)
		}
		ids := func(l ...string) map[string]any { return map[string]any{"lexicon_ids": l} }
		expect(t, admin.Do(t, "POST", appview+"/xrpcs", ids("com.example.getNotes", "com.example.createNote", "com.example.getNotes")), 204, "")
		expect(t, admin.Do(t, "POST", appview+"/xrpcs", ids("com.example.getNotes")), 204, "") // again: no error
		expect(t, admin.Do(t, "POST", feed+"/xrpcs", ids("com.example.getNotes")), 204, "")
		if got := names(appview + "/xrpcs"); fmt.Sprint(got) != "[com.example.createNote com.example.getNotes]" {
			t.Fatalf("bindings: %v", got)
		}
		for _, c := range []struct {
			body any
			msg  string
		}{
			{ids("com.example.note"), "lexicon_ids: com.example.note is not a registered query or procedure lexicon"},
			{ids("com.example.nope"), "lexicon_ids: com.example.nope is not a registered query or procedure lexicon"},
			{ids("com.example.getNotes", "not an nsid"), `lexicon_ids: "not an nsid" is not a valid NSID`},
			{ids(), "lexicon_ids is required: a non-empty array"},
			{map[string]any{}, "lexicon_ids is required: a non-empty array"},
			{map[string]any{"lexicon_ids": "com.example.getNotes"}, "invalid request body"},
		} {
			expect(t, admin.Do(t, "POST", appview+"/xrpcs", c.body), 400, c.msg)
		}
		expect(t, admin.Do(t, "DELETE", appview+"/xrpcs", ids("bad nsid")), 400, `lexicon_ids: "bad nsid" is not a valid NSID`)
		expect(t, admin.Do(t, "POST", "/admin/service-entries/999999/xrpcs", ids("com.example.getNotes")), 404, msgEntryNotFound)
		expect(t, admin.Do(t, "DELETE", "/admin/service-entries/999999/xrpcs", ids("com.example.getNotes")), 404, msgEntryNotFound)
		expect(t, admin.Do(t, "GET", "/admin/service-entries/999999/xrpcs", nil), 404, msgEntryNotFound)

		// The entries of a lexicon.
		entries := func(nsid string) []map[string]any {
			r := admin.Do(t, "GET", "/admin/lexicons/"+nsid+"/services", nil)
			expect(t, r, 200, "")
			var out []map[string]any
			r.JSON(t, &out)
			return out
		}
		if l := entries("com.example.getNotes"); len(l) != 2 || l[0]["fragment_id"] != "#appview" || l[1]["fragment_id"] != "#feed" || len(l[0]) != 6 {
			t.Fatalf("entries of getNotes: %v", l)
		}
		if l := entries("com.example.note"); len(l) != 0 {
			t.Fatalf("entries of a record lexicon: %v", l)
		}
		expect(t, admin.Do(t, "GET", "/admin/lexicons/com.example.nope/services", nil), 404, "lexicon not found")

		// Unbinding (an absent binding is ignored).
		expect(t, admin.Do(t, "DELETE", appview+"/xrpcs", ids("com.example.getNotes", "com.example.never")), 204, "")
		if got := names(appview + "/xrpcs"); fmt.Sprint(got) != "[com.example.createNote]" {
			t.Fatalf("after unbind: %v", got)
		}
		if l := entries("com.example.getNotes"); len(l) != 1 || l[0]["fragment_id"] != "#feed" {
			t.Fatalf("entries after unbind: %v", l)
		}

		// The allowlist.
		dids := func(l ...string) map[string]any { return map[string]any{"dids": l} }
		if got := names(appview + "/allowlist"); got == nil || len(got) != 0 {
			t.Fatalf("empty allowlist: %v", got)
		}
		expect(t, admin.Do(t, "POST", appview+"/allowlist", dids("did:plc:bbb", "did:web:a.example", "did:plc:bbb")), 204, "")
		if got := names(appview + "/allowlist"); fmt.Sprint(got) != "[did:plc:bbb did:web:a.example]" {
			t.Fatalf("allowlist: %v", got)
		}
		expect(t, admin.Do(t, "POST", appview+"/allowlist", dids("alice.example")), 400, `dids: "alice.example" is not a valid DID`)
		expect(t, admin.Do(t, "POST", appview+"/allowlist", dids()), 400, "dids is required: a non-empty array")
		expect(t, admin.Do(t, "POST", "/admin/service-entries/999999/allowlist", dids("did:plc:bbb")), 404, msgEntryNotFound)
		expect(t, admin.Do(t, "DELETE", appview+"/allowlist", dids("did:plc:bbb")), 204, "")
		if got := names(appview + "/allowlist"); fmt.Sprint(got) != "[did:web:a.example]" {
			t.Fatalf("after disallow: %v", got)
		}

		// Deletion, with its bindings.
		expect(t, admin.Do(t, "DELETE", feed, nil), 204, "")
		expect(t, admin.Do(t, "DELETE", feed, nil), 404, msgEntryNotFound)
		expect(t, admin.Do(t, "GET", feed+"/xrpcs", nil), 404, msgEntryNotFound)
		if l := entries("com.example.getNotes"); len(l) != 0 {
			t.Fatalf("a deleted entry's binding: %v", l)
		}

		// A deleted lexicon keeps its bindings, which can still be removed.
		expect(t, admin.Do(t, "DELETE", "/admin/lexicons/com.example.createNote", nil), 204, "")
		if got := names(appview + "/xrpcs"); fmt.Sprint(got) != "[com.example.createNote]" {
			t.Fatalf("bindings of a deleted lexicon: %v", got)
		}
		expect(t, admin.Do(t, "POST", appview+"/xrpcs", ids("com.example.createNote")), 400,
			"lexicon_ids: com.example.createNote is not a registered query or procedure lexicon")
		expect(t, admin.Do(t, "DELETE", appview+"/xrpcs", ids("com.example.createNote")), 204, "")
		if got := names(appview + "/xrpcs"); len(got) != 0 {
			t.Fatalf("after unbinding a deleted lexicon: %v", got)
		}

		// Every change is in the event log.
		for _, typ := range []string{"created", "updated", "deleted", "bound", "unbound", "allowed", "disallowed"} {
			ev, _, err := env.Store.ListEvents(context.Background(), storage.EventFilter{Type: "identity.service_entry_" + typ, Limit: 10})
			if err != nil || len(ev) == 0 || ev[0].ActorDID != admin.Account.DID.String() || !strings.HasPrefix(ev[0].Subject, "#") {
				t.Errorf("event %s: %+v %v", typ, ev, err)
			}
		}

		viewer := env.AddAdmin(t, "lexicons:read")
		expect(t, viewer.Do(t, "GET", "/admin/service-entries", nil), 403, "insufficient permissions")
		expect(t, viewer.Do(t, "GET", "/admin/lexicons/com.example.getNotes/services", nil), 403, "insufficient permissions")
		expect(t, viewer.Do(t, "GET", appview+"/allowlist", nil), 403, "insufficient permissions")
	})
}

// TestServiceEntriesGateProxiedCalls: a service-auth caller (a call
// proxied by a PDS) reaches a method bound to service entries only as
// their access modes allow, with `aud` naming an entry by fragment or
// being the bare DID; methods bound to nothing and callers without a
// service-auth token are unaffected. Tokens are signed by stand-in
// accounts (TestServiceEntriesReferencePDS uses the reference PDS).
func TestServiceEntriesGateProxiedCalls(t *testing.T) {
	t.Parallel()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		env := testenv.New(t, open(t), appview.Config{})
		admin := env.Bootstrap(t)
		putRefNoteLexicons(t, env)
		client, _ := env.NewClient(t, apiclients.NewClient{})
		did := env.App.InstanceDID(context.Background())
		alice := env.PLC.NewAccount(t, true, "https://pds.test")
		bob := env.PLC.NewAccount(t, false, "https://pds.test")
		const method = "com.example.getNotes"
		call := func(acct *testenv.Account, aud, lxm string) testenv.Response {
			h := []string{"X-Client-Key", client.Key}
			if acct != nil {
				claims := map[string]any{"iss": acct.DID.String(), "aud": aud, "exp": time.Now().Add(time.Minute).Unix()}
				if lxm != "" {
					claims["lxm"] = lxm
				}
				h = append(h, testenv.Bearer(acct.JWT(t, nil, claims))...)
			}
			return env.Do(t, "GET", "/xrpc/"+method, nil, h...)
		}
		const notServed = "service entry does not serve this method: #"
		const notAllowed, disabled = "caller is not on the service entry's allowlist", "method is disabled for proxied calls"

		// Bound to nothing: today's behaviour, whatever the fragment.
		expect(t, call(alice, did, method), 200, "")
		expect(t, call(alice, did+"#anything", ""), 200, "")
		expect(t, call(alice, did, "com.example.createNote"), 401, "invalid service auth token: the token is bound to another method (lxm com.example.createNote)")

		appview := createEntry(t, admin, "#bsky_appview", "BskyAppView")
		feed := createEntry(t, admin, "#feed", "BskyFeedGenerator")
		expect(t, admin.Do(t, "POST", appview+"/xrpcs", map[string]any{"lexicon_ids": []string{method}}), 204, "")

		// all: everyone, bare or through the entry; not through another.
		expect(t, call(alice, did, method), 200, "")
		expect(t, call(alice, did+"#bsky_appview", method), 200, "")
		expect(t, call(alice, did+"#feed", method), 403, notServed+"feed")
		expect(t, call(alice, did+"#nope", method), 403, notServed+"nope")

		// allowlist: only the callers on it.
		expect(t, admin.Do(t, "PUT", appview, map[string]any{"access_mode": "allowlist"}), 204, "")
		expect(t, call(alice, did, method), 403, notAllowed)
		expect(t, call(alice, did+"#bsky_appview", method), 403, notAllowed)
		expect(t, admin.Do(t, "POST", appview+"/allowlist", map[string]any{"dids": []string{alice.DID.String()}}), 204, "")
		expect(t, call(alice, did, method), 200, "")
		expect(t, call(alice, did+"#bsky_appview", ""), 200, "")
		expect(t, call(bob, did, method), 403, notAllowed)

		// disabled: nobody proxied; callers without service auth pass.
		expect(t, admin.Do(t, "PUT", appview, map[string]any{"access_mode": "disabled"}), 204, "")
		expect(t, call(alice, did, method), 403, disabled)
		expect(t, call(alice, did+"#bsky_appview", method), 403, disabled)
		expect(t, call(nil, "", ""), 200, "")

		// Bound to a disabled and an open entry: a bare aud gets in through
		// the open one; naming the disabled one does not.
		expect(t, admin.Do(t, "POST", feed+"/xrpcs", map[string]any{"lexicon_ids": []string{method}}), 204, "")
		expect(t, call(bob, did, method), 200, "")
		expect(t, call(bob, did+"#feed", method), 200, "")
		expect(t, call(bob, did+"#bsky_appview", method), 403, disabled)
		// Unbound again, the method is open again.
		expect(t, admin.Do(t, "DELETE", appview+"/xrpcs", map[string]any{"lexicon_ids": []string{method}}), 204, "")
		expect(t, admin.Do(t, "DELETE", feed, nil), 204, "")
		expect(t, call(bob, did+"#bsky_appview", method), 200, "")
	})
}
