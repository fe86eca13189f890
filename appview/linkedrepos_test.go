package appview_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/service/apiclients"
	"github.com/lexview/lexview/appview/internal/testing/refpds"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// TestLinkedReposAuthorize takes linked repo grants through the instance's
// OAuth client and the reference PDS: a grant pinned to an account's DID
// is authorized from the authorize_url the admin API returns, and an open
// grant by whoever follows its invite and signs in. The grants become
// active, bound to those accounts, and the used invite is gone. The
// invite page belongs to the public surface only. Its refreshes run every
// 500 ms beside the script's writes through the same grant: the two take
// turns on the session (oauthclient.Client.WithSession), so that no
// refresh token is spent twice.
func TestLinkedReposAuthorize(t *testing.T) {
	t.Parallel()
	n := refpds.Start(t)
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		backend := t.Name()[strings.LastIndexByte(t.Name(), '/')+1:]
		bob := n.CreateAccount(t, "linked-"+backend)
		carol := n.CreateAccount(t, "invited-"+backend)
		env := plcEnv(t, open(t), n.PLCURL, appview.Config{LinkedRepoRefresh: 500 * time.Millisecond})
		admin := env.Bootstrap(t)
		noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		grant := func(id string) map[string]any {
			t.Helper()
			var list struct {
				LinkedRepos []map[string]any `json:"linked_repos"`
			}
			admin.Do(t, "GET", "/admin/linked-repos", nil).JSON(t, &list)
			for _, g := range list.LinkedRepos {
				if g["id"] == id {
					return g
				}
			}
			t.Fatalf("grant %s not listed", id)
			return nil
		}
		// finish takes an authorization URL through the PDS as acct and
		// back to the instance's callback.
		finish := func(authorizeURL string, acct *refpds.Account) testenv.Response {
			t.Helper()
			flow := newHeadlessSignIn(t, nil, "", "")
			flow.discover(n.PDSPublicURL)
			loc := flow.authorize(authorizeURL, acct.Handle, acct.Password)
			if !strings.HasPrefix(loc.String(), env.URL+"/oauth/callback?") {
				t.Fatalf("the PDS redirects to %q", loc)
			}
			return testenv.Request(t, "GET", loc.String(), nil)
		}

		// A grant pinned to bob's DID, authorized from the admin API.
		r := admin.Do(t, "POST", "/admin/linked-repos", map[string]any{"scopes": "transition:generic", "handle": bob.DID, "reason": "weekly digest"})
		if r.Status != 200 {
			t.Fatalf("create: %d %s", r.Status, r.Raw)
		}
		pinned, _ := r.Object(t)["id"].(string)
		r = admin.Do(t, "POST", "/admin/linked-repos/"+pinned+"/authorize", nil)
		authorizeURL, _ := r.Object(t)["authorize_url"].(string)
		if r.Status != 200 || authorizeURL == "" {
			t.Fatalf("authorize: %d %s", r.Status, r.Raw)
		}
		r = finish(authorizeURL, bob)
		if o := r.Object(t); r.Status != 200 || o["grant_id"] != pinned || o["did"] != bob.DID || o["status"] != "active" {
			t.Fatalf("callback: %d %s", r.Status, r.Raw)
		}
		g := grant(pinned)
		if g["status"] != "active" || g["did"] != bob.DID || g["authorized_at"] == nil {
			t.Fatalf("pinned grant after authorization: %v", g)
		}
		// waitFor polls the pinned grant until ok holds.
		waitFor := func(what string, ok func(g map[string]any) bool) map[string]any {
			t.Helper()
			deadline := time.Now().Add(60 * time.Second)
			for {
				g := grant(pinned)
				if ok(g) {
					return g
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s: grant %v", what, g)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
		// The background refresh keeps the session alive.
		authorizedAt := g["last_refreshed_at"]
		waitFor("a refresh", func(g map[string]any) bool { return g["status"] == "active" && g["last_refreshed_at"] != authorizedAt })

		// A procedure script writes into bob's repository through the
		// grant: the record is at the PDS and in the index at once, and
		// the script deletes it again the same way.
		publish := newLinkedPublisher(t, env, admin)
		r = publish.call(t, map[string]any{"repo": bob.DID, "text": "digest #1"})
		uri, _ := r.Object(t)["uri"].(string)
		if r.Status != 200 || !strings.HasPrefix(uri, "at://"+bob.DID+"/app.test.note/") || r.Object(t)["cid"] == "" {
			t.Fatalf("linked.create: %d %s", r.Status, r.Raw)
		}
		rkey := uri[strings.LastIndexByte(uri, '/')+1:]
		var atPDS struct {
			Value map[string]any `json:"value"`
		}
		n.Query(t, "com.atproto.repo.getRecord", url.Values{"repo": {bob.DID}, "collection": {"app.test.note"}, "rkey": {rkey}}, &atPDS)
		if atPDS.Value["text"] != "digest #1" || atPDS.Value["$type"] != "app.test.note" {
			t.Fatalf("the record at the PDS: %v", atPDS.Value)
		}
		if got := publish.indexed(t, bob.DID); len(got) != 1 || got[0] != uri {
			t.Fatalf("indexed %v, want [%s]", got, uri)
		}
		r = publish.call(t, map[string]any{"repo": bob.DID, "rkey": rkey, "delete": true})
		if r.Status != 200 {
			t.Fatalf("linked.delete: %d %s", r.Status, r.Raw)
		}
		if err := n.XRPC(context.Background(), "com.atproto.repo.getRecord", "", url.Values{"repo": {bob.DID}, "collection": {"app.test.note"}, "rkey": {rkey}}, nil, nil); err == nil {
			t.Fatal("the deleted record is still at the PDS")
		}
		if got := publish.indexed(t, bob.DID); len(got) != 0 {
			t.Fatalf("indexed after the delete: %v", got)
		}
		var events struct {
			Events []struct {
				Subject string         `json:"subject"`
				Detail  map[string]any `json:"detail"`
			} `json:"events"`
		}
		admin.Do(t, "GET", "/admin/events?event_type=linked_repo.write", nil).JSON(t, &events)
		if len(events.Events) != 2 || events.Events[0].Subject != pinned || events.Events[0].Detail["action"] != "delete" ||
			events.Events[1].Detail["uri"] != uri || events.Events[1].Detail["trigger"] != "xrpc.procedure:app.test.publish" {
			t.Fatalf("write events: %+v", events.Events)
		}

		// An open grant, taken through its invite by carol.
		r = admin.Do(t, "POST", "/admin/linked-repos", map[string]any{"scopes": "atproto", "reason": "guest posts"})
		openID, _ := r.Object(t)["id"].(string)
		r = admin.Do(t, "POST", "/admin/linked-repos/"+openID+"/invite", nil)
		inviteURL, _ := r.Object(t)["invite_url"].(string)
		if r.Status != 200 || !strings.HasPrefix(inviteURL, env.URL+"/invite/") {
			t.Fatalf("invite on the primary domain %s: %d %s", env.URL, r.Status, r.Raw)
		}
		if p := testenv.Request(t, "GET", inviteURL, nil); p.Status != 200 || !strings.Contains(string(p.Raw), "guest posts") ||
			!strings.Contains(string(p.Raw), "<form") {
			t.Fatalf("invite page: %d %s", p.Status, p.Raw)
		}
		startInvite := func(handle string) string {
			t.Helper()
			resp, err := noRedirect.PostForm(inviteURL, url.Values{"handle": {handle}})
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") == "" {
				t.Fatalf("invite sign-in: %d", resp.StatusCode)
			}
			return resp.Header.Get("Location")
		}
		// bob follows it first, but his DID already has a grant: the
		// binding is refused, nothing is stored, the invite stays usable.
		r = finish(startInvite(bob.DID), bob)
		if r.Status != http.StatusConflict || r.Error(t) != "a linked repo grant already exists for the DID" {
			t.Fatalf("a second grant for bob's DID: %d %s", r.Status, r.Raw)
		}
		if g := grant(openID); g["status"] != "pending" || g["did"] != nil {
			t.Fatalf("open grant after a refused binding: %v", g)
		}
		if p := testenv.Request(t, "GET", inviteURL, nil); p.Status != 200 {
			t.Fatalf("the invite after a refused binding: %d", p.Status)
		}
		r = finish(startInvite(carol.DID), carol)
		if o := r.Object(t); r.Status != 200 || o["grant_id"] != openID || o["did"] != carol.DID {
			t.Fatalf("invite callback: %d %s", r.Status, r.Raw)
		}
		if g := grant(openID); g["status"] != "active" || g["did"] != carol.DID {
			t.Fatalf("open grant after the invite: %v", g)
		}
		// carol granted only `atproto`: a script's write is refused
		// before it reaches her PDS.
		if r := publish.call(t, map[string]any{"repo": carol.DID, "text": "not allowed"}); r.Status != 500 {
			t.Fatalf("a write outside the grant's scopes: %d %s", r.Status, r.Raw)
		}
		var carolNotes struct {
			Records []any `json:"records"`
		}
		n.Query(t, "com.atproto.repo.listRecords", url.Values{"repo": {carol.DID}, "collection": {"app.test.note"}}, &carolNotes)
		if len(carolNotes.Records) != 0 {
			t.Fatalf("carol's repository has %d notes", len(carolNotes.Records))
		}
		if p := testenv.Request(t, "GET", inviteURL, nil); p.Status != http.StatusGone {
			t.Fatalf("a used invite: %d", p.Status)
		}

		// The client metadata declares every grant's scopes (an
		// authorization server refuses undeclared ones).
		admin.Do(t, "POST", "/admin/linked-repos", map[string]any{"scopes": "repo:app.example.post?action=create"})
		var meta struct {
			Scope string `json:"scope"`
		}
		testenv.Request(t, "GET", env.URL+"/oauth-client-metadata.json", nil).JSON(t, &meta)
		if meta.Scope != "atproto transition:generic repo:app.example.post?action=create" {
			t.Fatalf("client metadata scope %q", meta.Scope)
		}

		// bob's account goes (deleted by the PDS's administrator): the
		// next refresh is refused and the grant needs a new authorization;
		// carol's grant is unaffected.
		if err := n.XRPC(context.Background(), "com.atproto.admin.deleteAccount", n.AdminAuth(), nil, map[string]any{"did": bob.DID}, nil); err != nil {
			t.Fatal(err)
		}
		g = waitFor("needs_reauth", func(g map[string]any) bool { return g["status"] == "needs_reauth" })
		if msg, _ := g["last_error"].(string); msg == "" {
			t.Fatalf("needs_reauth without last_error: %v", g)
		}
		if g := grant(openID); g["status"] != "active" {
			t.Fatalf("carol's grant after bob's failed: %v", g)
		}

		path := strings.TrimPrefix(inviteURL, env.URL)
		if !servedBy(t, env.App.XRPCHandler(), path) || servedBy(t, env.App.AdminHandler(), path) {
			t.Fatal("the invite page belongs to the public surface only")
		}
	})
}

// linkedPublisher is a procedure whose script writes into linked
// repositories, and a caller with an API client to call it.
type linkedPublisher struct {
	env    *testenv.Env
	caller *testenv.Account
	key    string
}

// publishScript creates input.text in input.repo, or deletes input.rkey
// there when input.delete is set.
const publishScript = `function handle()
  if input.delete then
    return {deleted = linked.delete(input.repo, "app.test.note", input.rkey)}
  end
  return linked.create(input.repo, "app.test.note", {text = input.text})
end`

func newLinkedPublisher(t *testing.T, env *testenv.Env, admin *testenv.Admin) *linkedPublisher {
	t.Helper()
	putNoteLexicons(t, env)
	r := admin.Do(t, "POST", "/admin/lexicons", map[string]any{
		"lexicon_json":      json.RawMessage(`{"lexicon":1,"id":"app.test.publish","defs":{"main":{"type":"procedure","input":{"encoding":"application/json"}}}}`),
		"target_collection": "app.test.note",
	})
	if r.Status != 200 && r.Status != 201 {
		t.Fatalf("procedure lexicon: %d %s", r.Status, r.Raw)
	}
	if r := admin.Do(t, "POST", "/admin/scripts", map[string]any{"trigger": "xrpc.procedure:app.test.publish", "source": publishScript}); r.Status != 200 && r.Status != 201 {
		t.Fatalf("script: %d %s", r.Status, r.Raw)
	}
	client, _ := env.NewClient(t, apiclients.NewClient{})
	return &linkedPublisher{env: env, caller: env.PLC.NewAccount(t, false, "https://pds.test"), key: client.Key}
}

func (p *linkedPublisher) call(t *testing.T, input map[string]any) testenv.Response {
	t.Helper()
	return p.env.Do(t, "POST", "/xrpc/app.test.publish", input, append(testenv.Bearer(p.caller.ServiceAuth(t)), "X-Client-Key", p.key)...)
}

// indexed lists the URIs of did's notes in Lexview's index.
func (p *linkedPublisher) indexed(t *testing.T, did string) []string {
	t.Helper()
	var page struct {
		Records []struct {
			URI string `json:"uri"`
		} `json:"records"`
	}
	r := p.env.Do(t, "GET", "/xrpc/app.test.listNotes?did="+url.QueryEscape(did), nil, "X-Client-Key", p.key)
	if r.Status != 200 {
		t.Fatalf("listNotes: %d %s", r.Status, r.Raw)
	}
	r.JSON(t, &page)
	out := []string{}
	for _, rec := range page.Records {
		out = append(out, rec.URI)
	}
	return out
}

// servedBy reports whether h answers path with the page rather than the
// catch-all JSON 404.
func servedBy(t *testing.T, h http.Handler, path string) bool {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	return strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html")
}
