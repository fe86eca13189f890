package appview_test

import (
	"context"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/testing/refpds"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/internal/dnstest"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

const schemaCollection = "com.atproto.lexicon.schema"

// noteSchema is a record lexicon with the given properties (all strings).
func noteSchema(id string, props ...string) map[string]any {
	p := map[string]any{}
	for _, name := range props {
		p[name] = map[string]any{"type": "string", "maxLength": 300}
	}
	return map[string]any{"lexicon": 1, "id": id, "defs": map[string]any{"main": map[string]any{
		"type": "record", "key": "tid", "record": map[string]any{"type": "object", "required": []string{props[0]}, "properties": p},
	}}}
}

func listSchema(id string) map[string]any {
	return map[string]any{"lexicon": 1, "id": id, "defs": map[string]any{"main": map[string]any{
		"type": "query", "output": map[string]any{"encoding": "application/json"},
	}}}
}

// netLexEnv is an instance whose lexicon DNS is dns, on the reference
// PDS's PLC, re-checking network lexicons every recheck.
type netLexEnv struct {
	*testenv.Env
	admin *testenv.Admin
	key   string
}

func newNetLexEnv(t *testing.T, store storage.Store, n *refpds.Network, dns *dnstest.Server, recheck time.Duration) *netLexEnv {
	env := plcEnv(t, store, n.PLCURL, appview.Config{Network: appview.NetworkConfig{LexiconDNSServer: dns.Addr, LexiconRecheck: recheck}})
	c, _ := env.NewClient(t, apiclients.NewClient{})
	return &netLexEnv{Env: env, admin: env.Bootstrap(t), key: c.Key}
}

func (e *netLexEnv) xrpc(t *testing.T, method, path string, body any) testenv.Response {
	t.Helper()
	return e.Do(t, method, path, body, "X-Client-Key", e.key)
}

// TestNetworkLexicons publishes real com.atproto.lexicon.schema records
// under an account of the reference PDS, points the authority's _lexicon
// TXT record at it on a loopback DNS server, and takes network lexicons
// through the admin API: resolve without storing, add (routes and
// indexing at once), list, failures naming their step, a new revision
// picked up by the periodic re-check, a schema deleted at the authority
// staying in use, and removal; and the XRPC proxy forwarding a method with
// no local lexicon to the authority's PDS.
func TestNetworkLexicons(t *testing.T) {
	t.Parallel()
	n := refpds.Start(t)
	dns := dnstest.Start(t)
	ctx := context.Background()
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		backend := t.Name()[strings.LastIndexByte(t.Name(), '/')+1:]
		acct := n.CreateAccount(t, "lex-"+backend)
		authority := "lexview" + backend
		postNSID, listNSID := "org."+authority+".note.post", "org."+authority+".note.list"
		dns.SetTXT("_lexicon.note."+authority+".org", "junk", "did="+acct.DID)
		acct.PutRecord(t, schemaCollection, postNSID, noteSchema(postNSID, "text"))
		acct.PutRecord(t, schemaCollection, listNSID, listSchema(listNSID))
		// A schema whose id is another NSID, and one that is no lexicon.
		wrongNSID, junkNSID := "org."+authority+".note.wrong", "org."+authority+".note.junk"
		acct.PutRecord(t, schemaCollection, wrongNSID, noteSchema(postNSID, "text"))
		acct.PutRecord(t, schemaCollection, junkNSID, map[string]any{"lexicon": 1, "id": junkNSID, "defs": map[string]any{"main": map[string]any{"type": "nonsense"}}})

		env := newNetLexEnv(t, open(t), n, dns, 500*time.Millisecond)
		admin := env.admin

		// Resolve answers what each step found and stores nothing.
		r := admin.Do(t, "GET", "/admin/network-lexicons/resolve/"+postNSID, nil)
		o := r.Object(t)
		if r.Status != 200 || o["authority_did"] != acct.DID || o["authority"] != "note."+authority+".org" || o["pds"] != n.PDSPublicURL ||
			o["lexicon_type"] != "record" || o["uri"] != "at://"+acct.DID+"/"+schemaCollection+"/"+postNSID || o["cid"] == "" {
			t.Fatalf("resolve: %d %s", r.Status, r.Raw)
		}
		if s, _ := o["schema"].(map[string]any); s["id"] != postNSID || s["$type"] != nil {
			t.Fatalf("resolved schema %v", o["schema"])
		}
		if r := admin.Do(t, "GET", "/admin/network-lexicons", nil); r.Status != 200 || string(r.Raw) != "[]" {
			t.Fatalf("list after resolve: %d %s", r.Status, r.Raw)
		}
		expect(t, admin.Do(t, "GET", "/admin/lexicons/"+postNSID, nil), 404, "")

		// Add: 201 {nsid, authority_did, revision}; the record lexicon is
		// indexed and the query lexicon routed at once.
		r = admin.Do(t, "POST", "/admin/network-lexicons", map[string]any{"nsid": postNSID})
		if o := r.Object(t); r.Status != 201 || o["nsid"] != postNSID || o["authority_did"] != acct.DID || o["revision"] != 1.0 {
			t.Fatalf("add: %d %s", r.Status, r.Raw)
		}
		r = admin.Do(t, "POST", "/admin/network-lexicons", map[string]any{"nsid": listNSID, "target_collection": postNSID})
		expect(t, r, 201, "")
		if l := admin.Do(t, "GET", "/admin/lexicons/"+listNSID, nil).Object(t); l["lexicon_type"] != "query" || l["target_collection"] != postNSID {
			t.Fatalf("stored query lexicon %v", l)
		}
		if !slices.Contains(env.App.Lexicons().Snapshot().RecordCollections(), postNSID) {
			t.Fatalf("%s is not indexed", postNSID)
		}
		rec, _ := json.Marshal(map[string]any{"$type": postNSID, "text": "hello"})
		if _, err := env.App.Writer().Write(ctx, "test", []storage.Change{{Op: storage.OpCreate, DID: acct.DID, Collection: postNSID,
			RKey: "3kaaaaaaaaaa2", CID: "bafyreib2rxk3rybk3aobmv5cjuql3bm2twh4jo5uxgf5mdsrydvdfjk4zm", Record: rec}}); err != nil {
			t.Fatal(err)
		}
		r = env.xrpc(t, "GET", "/xrpc/"+listNSID, nil)
		if recs, _ := r.Object(t)["records"].([]any); r.Status != 200 || len(recs) != 1 {
			t.Fatalf("the network query lexicon lists: %d %s", r.Status, r.Raw)
		}

		var rows []map[string]any
		admin.Do(t, "GET", "/admin/network-lexicons", nil).JSON(t, &rows)
		if len(rows) != 2 || rows[0]["nsid"] != listNSID || rows[0]["target_collection"] != postNSID || rows[1]["nsid"] != postNSID ||
			rows[1]["authority_did"] != acct.DID || rows[1]["target_collection"] != nil || rows[1]["last_fetched_at"] == nil || rows[1]["created_at"] == nil {
			t.Fatalf("list: %v", rows)
		}

		// Failures name their step: 400 for a definitive answer.
		for _, c := range []struct{ nsid, msg string }{
			{"not-an-nsid", "nsid: not a valid NSID"},
			{"org.nowhere" + backend + ".x.y", "dns: no TXT record at _lexicon.x.nowhere" + backend + ".org"},
			{"org." + authority + ".note.absent", "record: no record " + schemaCollection + "/org." + authority + ".note.absent"},
			{wrongNSID, "lexicon: the schema's id"},
			{junkNSID, "lexicon: not a valid lexicon"},
		} {
			r := admin.Do(t, "POST", "/admin/network-lexicons", map[string]any{"nsid": c.nsid})
			if r.Status != 400 || !strings.Contains(r.Error(t), c.msg) {
				t.Fatalf("add %s: %d %s, want 400 containing %q", c.nsid, r.Status, r.Raw, c.msg)
			}
			if r := admin.Do(t, "GET", "/admin/network-lexicons/resolve/"+url.PathEscape(c.nsid), nil); r.Status != 400 || !strings.Contains(r.Error(t), c.msg) {
				t.Fatalf("resolve %s: %d %s", c.nsid, r.Status, r.Raw)
			}
		}
		expect(t, admin.Do(t, "POST", "/admin/network-lexicons", map[string]any{}), 400, "nsid is required")
		// A DID with no document: 400 at the did step.
		dns.SetTXT("_lexicon.ghost."+authority+".org", "did=did:plc:ghostghostghostghostghost")
		if r := admin.Do(t, "POST", "/admin/network-lexicons", map[string]any{"nsid": "org." + authority + ".ghost.x"}); r.Status != 400 ||
			!strings.Contains(r.Error(t), "did: DID did:plc:ghostghostghostghostghost does not resolve") {
			t.Fatalf("ghost DID: %d %s", r.Status, r.Raw)
		}

		// Permissions: lexicons:read resolves and lists, cannot add or remove.
		reader := env.AddAdmin(t, admins.LexiconsRead)
		expect(t, reader.Do(t, "GET", "/admin/network-lexicons", nil), 200, "")
		expect(t, reader.Do(t, "POST", "/admin/network-lexicons", map[string]any{"nsid": postNSID}), 403, "")
		expect(t, reader.Do(t, "DELETE", "/admin/network-lexicons/"+postNSID, nil), 403, "")

		// A new revision published at the authority is picked up by the
		// re-check: revision, last_fetched_at, the event log.
		row := func(nsid string) map[string]any {
			var rows []map[string]any
			admin.Do(t, "GET", "/admin/network-lexicons", nil).JSON(t, &rows)
			for _, r := range rows {
				if r["nsid"] == nsid {
					return r
				}
			}
			return nil
		}
		before := row(postNSID)
		acct.PutRecord(t, schemaCollection, postNSID, noteSchema(postNSID, "text", "title"))
		waitFor(t, "the new revision", func() bool { return row(postNSID)["cid"] != before["cid"] })
		if l := admin.Do(t, "GET", "/admin/lexicons/"+postNSID, nil).Object(t); l["revision"] != 2.0 || !strings.Contains(string(mustJSON(t, l["lexicon_json"])), `"title"`) {
			t.Fatalf("stored %v", l)
		}
		after := row(postNSID)
		if after["cid"] == before["cid"] || after["last_fetched_at"] == before["last_fetched_at"] || after["created_at"] != before["created_at"] {
			t.Fatalf("row before %v after %v", before, after)
		}
		// The entry is recorded after the row is stored: wait for it.
		var events struct {
			Events []map[string]any `json:"events"`
		}
		waitFor(t, "the lexicon.network_updated entry", func() bool {
			events.Events = nil
			admin.Do(t, "GET", "/admin/events?event_type=lexicon.network_updated&subject="+postNSID, nil).JSON(t, &events)
			return len(events.Events) > 0
		})
		if len(events.Events) != 1 {
			t.Fatalf("lexicon.network_updated events: %v", events)
		}
		// The query lexicon keeps its target collection through re-checks.
		if l := admin.Do(t, "GET", "/admin/lexicons/"+listNSID, nil).Object(t); l["revision"] != 1.0 || l["target_collection"] != postNSID {
			t.Fatalf("unchanged query lexicon %v", l)
		}

		// Deleted at the authority: stays in use, marked once.
		acct.DeleteRecord(t, schemaCollection, postNSID)
		waitFor(t, "the upstream deletion", func() bool { return row(postNSID)["upstream_deleted_at"] != nil })
		expect(t, admin.Do(t, "GET", "/admin/lexicons/"+postNSID, nil), 200, "")
		time.Sleep(1200 * time.Millisecond) // two more re-checks
		admin.Do(t, "GET", "/admin/events?event_type=lexicon.network_deleted_upstream&subject="+postNSID, nil).JSON(t, &events)
		if len(events.Events) != 1 || events.Events[0]["severity"] != "warn" {
			t.Fatalf("lexicon.network_deleted_upstream events: %v", events)
		}

		// Removal deletes the lexicon too.
		expect(t, admin.Do(t, "DELETE", "/admin/network-lexicons/"+listNSID, nil), 204, "")
		expect(t, admin.Do(t, "GET", "/admin/lexicons/"+listNSID, nil), 404, "")
		// The XRPC proxy against the reference PDS: with the account as the
		// authority of com.atproto.repo.*, a method this instance has no
		// lexicon for is answered by the account's PDS.
		dns.SetTXT("_lexicon.repo.atproto.com", "did="+acct.DID)
		r = env.xrpc(t, "GET", "/xrpc/com.atproto.repo.describeRepo?repo="+url.QueryEscape(acct.DID), nil)
		if o := r.Object(t); r.Status != 200 || o["did"] != acct.DID || o["handle"] != acct.Handle {
			t.Fatalf("forwarded describeRepo: %d %s", r.Status, r.Raw)
		}
		// A removed lexicon's method would be forwarded the same way; with
		// the proxy disabled it is not found.
		expect(t, admin.Do(t, "PUT", "/admin/settings/xrpc-proxy", map[string]any{"mode": "disabled"}), 200, "")
		expect(t, env.xrpc(t, "GET", "/xrpc/com.atproto.repo.describeRepo?repo="+url.QueryEscape(acct.DID), nil), 404, "method not found")
		expect(t, env.xrpc(t, "GET", "/xrpc/"+listNSID, nil), 404, "method not found")
		expect(t, admin.Do(t, "DELETE", "/admin/network-lexicons/"+listNSID, nil), 404, "network lexicon not found")
		if rows := row(listNSID); rows != nil {
			t.Fatalf("still listed: %v", rows)
		}

		// An upstream failure is a 500 naming the step.
		dns.SetTXT("_lexicon.down."+authority+".org", "did="+acct.DID)
		dns.SetFailing(true)
		r = admin.Do(t, "GET", "/admin/network-lexicons/resolve/org."+authority+".down.x", nil)
		dns.SetFailing(false)
		if r.Status != 500 || !strings.Contains(r.Error(t), "dns: looking up TXT") {
			t.Fatalf("DNS failing: %d %s", r.Status, r.Raw)
		}
	})
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
