package linkedrepos_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bluesky-social/indigo/atproto/atcrypto"
	indigooauth "github.com/bluesky-social/indigo/atproto/auth/oauth"
	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/service/linkedrepos"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// standInPDS answers repository writes by access token: "good" writes,
// "expired" is told its token expired (and the token endpoint refuses
// the refresh), and a record with "bad": true is an InvalidRecord.
func standInPDS(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/oauth/token" {
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"error":"invalid_grant","error_description":"refresh token revoked"}`))
			return
		}
		if r.Header.Get("DPoP") == "" {
			t.Errorf("a write without a DPoP proof")
		}
		if r.Header.Get("Authorization") == "DPoP expired" {
			w.Header().Set("WWW-Authenticate", `DPoP error="invalid_token", error_description="token expired"`)
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":"InvalidToken"}`))
			return
		}
		var in struct {
			Repo, Collection, RKey string
			Record                 map[string]any
		}
		json.NewDecoder(r.Body).Decode(&in)
		if in.Record["bad"] == true {
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"error":"InvalidRecord","message":"record is bad"}`))
			return
		}
		rkey := in.RKey
		if rkey == "" {
			rkey = "3lchosen"
		}
		json.NewEncoder(w).Encode(map[string]any{"uri": "at://" + in.Repo + "/" + in.Collection + "/" + rkey,
			"cid": "bafyreicid", "commit": map[string]any{"cid": "bafyreicommit", "rev": "3lrev"}})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// tokenSessions resumes every session as one that sends its session ID
// as the access token to the stand-in PDS.
type tokenSessions struct {
	pds    string
	opened int
}

func (s *tokenSessions) WithSession(_ context.Context, did syntax.DID, sessionID string, fn func(*indigooauth.ClientSession) error) error {
	s.opened++
	key, err := atcrypto.GeneratePrivateKeyP256()
	if err != nil {
		return err
	}
	cfg := indigooauth.NewPublicConfig("https://lexview.example/oauth-client-metadata.json", "https://lexview.example/oauth/callback", []string{"atproto"})
	return fn(&indigooauth.ClientSession{Client: http.DefaultClient, Config: &cfg, DPoPPrivateKey: key,
		Data: &indigooauth.ClientSessionData{AccountDID: did, SessionID: sessionID, HostURL: s.pds, AuthServerURL: s.pds,
			AuthServerTokenEndpoint: s.pds + "/oauth/token", AccessToken: sessionID, RefreshToken: "r"}})
}

func TestWrite(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		e := newEnv(t, open(t), false)
		ctx := context.Background()
		sessions := &tokenSessions{pds: standInPDS(t).URL}
		grant := func(did, scopes, session string) storage.LinkedRepoGrant {
			t.Helper()
			g, err := e.svc.Create(ctx, "did:plc:admin", linkedrepos.CreateInput{Scopes: scopes, Handle: did})
			if err != nil {
				t.Fatal(err)
			}
			if session != "" {
				if err := e.svc.MarkAuthorized(ctx, g.ID, linkedrepos.Account{DID: did}, linkedrepos.Session{Sealed: session}); err != nil {
					t.Fatal(err)
				}
			}
			return g
		}
		news := grant("did:plc:news", "repo:app.example.post?action=create&action=update", "good")
		grant("did:plc:pending", "transition:generic", "")
		gone := grant("did:plc:gone", "transition:generic", "expired")
		post := func(repo, action, rkey string) linkedrepos.Write {
			return linkedrepos.Write{Repo: repo, Action: action, Collection: "app.example.post", RKey: rkey,
				Record: json.RawMessage(`{"$type":"app.example.post","text":"hi"}`), ActorDID: "did:plc:caller", Trigger: "xrpc.procedure:app.example.publish"}
		}

		// Refusals before any session is opened.
		for _, tc := range []struct {
			w    linkedrepos.Write
			kind fail.Kind
			msg  string
		}{
			{post("news.example.com", linkedrepos.ActionCreate, ""), fail.Invalid, "not a DID"},
			{post("did:plc:news", linkedrepos.ActionUpdate, ""), fail.Invalid, "update needs an rkey"},
			{post("did:plc:news", "upsert", "a"), fail.Invalid, "unknown write action"},
			{post("did:plc:news", linkedrepos.ActionCreate, "no/slash"), fail.Invalid, "not a record key"},
			{linkedrepos.Write{Repo: "did:plc:news", Action: linkedrepos.ActionCreate, Collection: "app.example.post"}, fail.Invalid, "record is missing"},
			{linkedrepos.Write{Repo: "did:plc:news", Action: linkedrepos.ActionCreate, Collection: "post", Record: json.RawMessage(`{}`)}, fail.Invalid, "not an NSID"},
			{post("did:plc:stranger", linkedrepos.ActionCreate, ""), fail.NotFound, "no linked repo grant for did:plc:stranger"},
			{post("did:plc:pending", linkedrepos.ActionCreate, ""), fail.Forbidden, "is pending, not active"},
			{post("did:plc:news", linkedrepos.ActionDelete, "a"), fail.Forbidden, "do not allow delete in app.example.post"},
			{linkedrepos.Write{Repo: "did:plc:news", Action: linkedrepos.ActionCreate, Collection: "app.example.like", Record: json.RawMessage(`{}`)},
				fail.Forbidden, "do not allow create in app.example.like"},
		} {
			_, err := e.svc.Write(ctx, sessions, tc.w)
			wantKind(t, err, tc.kind, tc.msg)
		}
		if sessions.opened != 0 {
			t.Fatalf("a refused write opened %d sessions", sessions.opened)
		}

		// A write the grant covers goes to the PDS with a DPoP proof.
		got, err := e.svc.Write(ctx, sessions, post("did:plc:news", linkedrepos.ActionCreate, ""))
		if err != nil || got != (linkedrepos.Written{URI: "at://did:plc:news/app.example.post/3lchosen", CID: "bafyreicid", Rev: "3lrev"}) {
			t.Fatalf("create: %+v %v", got, err)
		}
		got, err = e.svc.Write(ctx, sessions, post("did:plc:news", linkedrepos.ActionUpdate, "self"))
		if err != nil || got.URI != "at://did:plc:news/app.example.post/self" {
			t.Fatalf("update: %+v %v", got, err)
		}

		// The PDS's refusal comes back with its status and message; the
		// grant stays active.
		bad := post("did:plc:news", linkedrepos.ActionCreate, "")
		bad.Record = json.RawMessage(`{"bad":true}`)
		if _, err := e.svc.Write(ctx, sessions, bad); err == nil || !strings.Contains(err.Error(), "the PDS answered 400: InvalidRecord: record is bad") {
			t.Fatalf("PDS refusal: %v", err)
		}
		if g, _ := e.svc.Get(ctx, news.ID); g.Status != storage.LinkedRepoActive {
			t.Fatalf("after a refused record: %s", g.Status)
		}

		// A session whose tokens can no longer be refreshed moves the
		// grant to needs_reauth, like the background refresher would.
		if _, err := e.svc.Write(ctx, sessions, post("did:plc:gone", linkedrepos.ActionCreate, "")); err == nil || !strings.Contains(err.Error(), "could not be refreshed") {
			t.Fatalf("expired session: %v", err)
		}
		if g, _ := e.svc.Get(ctx, gone.ID); g.Status != storage.LinkedRepoNeedsReauth || !strings.Contains(g.LastError, "token refresh failed") {
			t.Fatalf("after a failed refresh: %s %q", g.Status, g.LastError)
		}

		types := eventTypes(t, e.store)
		want := []string{"linked_repo.write", "linked_repo.write", "linked_repo.write_failed", "linked_repo.write_failed", "linked_repo.refresh_failed"}
		if got := types[len(types)-len(want):]; strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("events %v, want them to end with %v", types, want)
		}
		list, _, _ := e.store.ListEvents(ctx, storage.EventFilter{Type: "linked_repo.write", Limit: 10})
		var detail map[string]string
		json.Unmarshal(list[len(list)-1].Detail, &detail)
		if list[len(list)-1].ActorDID != "did:plc:caller" || list[len(list)-1].Subject != news.ID ||
			detail["uri"] != "at://did:plc:news/app.example.post/3lchosen" || detail["trigger"] != "xrpc.procedure:app.example.publish" {
			t.Fatalf("write event: %+v %v", list[len(list)-1], detail)
		}
	})
}
