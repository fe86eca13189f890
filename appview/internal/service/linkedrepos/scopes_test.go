package linkedrepos

import (
	"strings"
	"testing"

	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/storage"
)

func TestNormalizeScopes(t *testing.T) {
	good := []struct{ in, want string }{
		{"atproto", "atproto"},
		{"repo:app.example.post", "atproto repo:app.example.post"},
		{"  repo:app.example.post\tatproto\n", "atproto repo:app.example.post"},
		{"atproto atproto transition:generic transition:generic", "atproto transition:generic"},
		{"atproto repo:app.example.post?action=create&action=delete repo?collection=a.b.c&collection=d.e.f",
			"atproto repo:app.example.post?action=create&action=delete repo?collection=a.b.c&collection=d.e.f"},
		{"atproto repo:* blob:*/* rpc:app.example.get?aud=*", "atproto repo:* blob:*/* rpc:app.example.get?aud=*"},
		{"atproto account:email identity:handle include:app.example.authFull", "atproto account:email identity:handle include:app.example.authFull"},
	}
	for _, tc := range good {
		got, err := NormalizeScopes(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("NormalizeScopes(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	bad := []struct{ in, msg string }{
		{"", "scopes is required"},
		{" \t\n", "scopes is required"},
		{"atproto repo:notansid", `invalid NSID "notansid" in scope "repo:notansid"`},
		{"atproto repo?collection=app.example.post&collection=bad..nsid", `invalid NSID "bad..nsid"`},
		{"atproto repo:app.example.post?action=fly", `malformed scope "repo:app.example.post?action=fly"`},
		{"atproto repo", `malformed scope "repo"`},
		{"atproto bogus", `malformed scope "bogus"`},
		{"atproto transition:everything", `malformed scope "transition:everything"`},
		{"atproto rpc:app.example.get?aud=%zz", "malformed scope"},
		{"atproto repo:app.example.pöst", "malformed scope"},
		{"atproto repo:app.example.post?colour=red", "malformed scope"},
		{"atproto " + strings.Repeat("x", MaxScopesLength), "scopes must be at most"},
	}
	for _, tc := range bad {
		_, err := NormalizeScopes(tc.in)
		if fail.KindOf(err) != fail.Invalid || !strings.Contains(fail.Message(err), tc.msg) {
			t.Errorf("NormalizeScopes(%.40q) = %v; want a 400 containing %q", tc.in, err, tc.msg)
		}
	}
}

func TestCheckBinding(t *testing.T) {
	open := storage.LinkedRepoGrant{ID: "g"}
	byDID := storage.LinkedRepoGrant{ID: "g", DID: "did:plc:alice", Handle: "did:plc:alice"}
	byHandle := storage.LinkedRepoGrant{ID: "g", Handle: "alice.example.com"}
	bound := storage.LinkedRepoGrant{ID: "g", DID: "did:plc:carol", Status: storage.LinkedRepoNeedsReauth}
	alice := Account{DID: "did:plc:alice", Handle: "alice.example.com"}
	bob := Account{DID: "did:plc:bob", Handle: "bob.example.com"}
	tests := []struct {
		name string
		g    storage.LinkedRepoGrant
		acct Account
		kind fail.Kind // fail.Internal means allowed
	}{
		{"open grant, anyone", open, bob, fail.Internal},
		{"pinned DID, that account", byDID, alice, fail.Internal},
		{"pinned DID, another account", byDID, bob, fail.Forbidden},
		{"pinned DID, same handle other DID", byDID, Account{DID: "did:plc:mallory", Handle: "alice.example.com"}, fail.Forbidden},
		{"pinned handle, that account", byHandle, alice, fail.Internal},
		{"pinned handle, case differs", byHandle, Account{DID: "did:plc:alice", Handle: "Alice.Example.COM"}, fail.Internal},
		{"pinned handle, another account", byHandle, bob, fail.Forbidden},
		{"pinned handle, account without a verified handle", byHandle, Account{DID: "did:plc:alice"}, fail.Forbidden},
		{"re-authorization by the bound DID", bound, Account{DID: "did:plc:carol"}, fail.Internal},
		{"re-authorization by another DID", bound, bob, fail.Forbidden},
		{"not a DID", open, Account{DID: "alice"}, fail.Invalid},
	}
	for _, tc := range tests {
		err := CheckBinding(tc.g, tc.acct)
		if tc.kind == fail.Internal && err != nil || tc.kind != fail.Internal && fail.KindOf(err) != tc.kind {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

func TestCovers(t *testing.T) {
	tests := []struct {
		scopes, collection, action string
		want                       bool
	}{
		{"atproto", "app.example.post", ActionCreate, false},
		{"atproto transition:generic", "app.example.post", ActionDelete, true},
		{"atproto repo:app.example.post", "app.example.post", ActionCreate, true},
		{"atproto repo:app.example.post", "app.example.post", ActionUpdate, true},
		{"atproto repo:app.example.post", "app.example.post", ActionDelete, true},
		{"atproto repo:app.example.post", "app.example.like", ActionCreate, false},
		{"atproto repo:app.example.post?action=create", "app.example.post", ActionCreate, true},
		{"atproto repo:app.example.post?action=create", "app.example.post", ActionDelete, false},
		{"atproto repo:app.example.post?action=create repo:app.example.post?action=delete", "app.example.post", ActionDelete, true},
		{"atproto repo?collection=app.example.post&collection=app.example.like&action=update", "app.example.like", ActionUpdate, true},
		{"atproto repo?collection=app.example.post&collection=app.example.like&action=update", "app.example.like", ActionCreate, false},
		{"atproto repo:*", "com.other.thing", ActionCreate, true},
		{"atproto repo:*?action=delete", "com.other.thing", ActionCreate, false},
		{"atproto include:app.example.authFull", "app.example.post", ActionCreate, false},
		{"atproto rpc:app.example.post?aud=*", "app.example.post", ActionCreate, false},
	}
	for _, tc := range tests {
		if got := Covers(tc.scopes, tc.collection, tc.action); got != tc.want {
			t.Errorf("Covers(%q, %q, %q) = %v; want %v", tc.scopes, tc.collection, tc.action, got, tc.want)
		}
	}
}
