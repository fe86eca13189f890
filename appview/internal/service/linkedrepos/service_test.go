package linkedrepos_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/service/linkedrepos"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// authorizer records its requests and answers a fixed URL.
type authorizer struct {
	mu   sync.Mutex
	reqs []linkedrepos.AuthorizeRequest
	err  error
}

func (a *authorizer) AuthorizeURL(_ context.Context, req linkedrepos.AuthorizeRequest) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.reqs = append(a.reqs, req)
	return "https://pds.example/oauth/authorize?request_uri=x", a.err
}

func (a *authorizer) last() linkedrepos.AuthorizeRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.reqs[len(a.reqs)-1]
}

type env struct {
	svc   *linkedrepos.Service
	store storage.Store
	clock *clock
	auth  *authorizer
	// linked lists the accounts Options.Linked was called with.
	linked []string
}

func newEnv(t *testing.T, store storage.Store, withAuth bool) *env {
	t.Helper()
	c := &clock{t: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)}
	e := &env{store: store, clock: c}
	opt := linkedrepos.Options{Store: store, Now: c.Now,
		Events:  eventlog.New(eventlog.Options{Store: store, Now: c.Now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}),
		BaseURL: func(context.Context) string { return "https://lexview.example" },
		Linked:  func(did string) { e.linked = append(e.linked, did) }}
	if withAuth {
		e.auth = &authorizer{}
		opt.Authorizer = e.auth
	}
	e.svc = linkedrepos.New(opt)
	return e
}

func wantKind(t *testing.T, err error, kind fail.Kind, msg string) {
	t.Helper()
	if err == nil || fail.KindOf(err) != kind || msg != "" && !strings.Contains(fail.Message(err), msg) {
		t.Fatalf("got %v (%v), want %v %q", err, fail.KindOf(err), kind, msg)
	}
}

func eventTypes(t *testing.T, s storage.Store) []string {
	t.Helper()
	list, _, err := s.ListEvents(context.Background(), storage.EventFilter{Category: "linked_repo", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(list))
	for i, e := range list {
		out[len(list)-1-i] = e.Type
	}
	return out
}

func TestGrants(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		e := newEnv(t, open(t), false)
		ctx := context.Background()
		g, err := e.svc.Create(ctx, "did:plc:admin", linkedrepos.CreateInput{Scopes: "repo:app.example.post", Reason: "to post"})
		if err != nil {
			t.Fatal(err)
		}
		if g.Scopes != "atproto repo:app.example.post" || g.Status != storage.LinkedRepoPending || g.DID != "" || g.Handle != "" ||
			g.CreatedBy != "did:plc:admin" || !g.CreatedAt.Equal(e.clock.Now()) {
			t.Fatalf("created: %+v", g)
		}
		e.clock.Advance(time.Second)
		pinned, err := e.svc.Create(ctx, "did:plc:admin", linkedrepos.CreateInput{Scopes: "atproto", Handle: " DID:plc:alice "})
		wantKind(t, err, fail.Invalid, "handle must be a handle or a DID")
		pinned, err = e.svc.Create(ctx, "did:plc:admin", linkedrepos.CreateInput{Scopes: "atproto", Handle: "did:plc:alice"})
		if err != nil || pinned.DID != "did:plc:alice" || pinned.Handle != "did:plc:alice" {
			t.Fatalf("pinned by DID: %+v %v", pinned, err)
		}
		e.clock.Advance(time.Second)
		byHandle, err := e.svc.Create(ctx, "did:plc:admin", linkedrepos.CreateInput{Scopes: "atproto", Handle: "Bob.Example.COM"})
		if err != nil || byHandle.DID != "" || byHandle.Handle != "bob.example.com" {
			t.Fatalf("pinned by handle: %+v %v", byHandle, err)
		}
		// A second grant for a DID is a 409.
		_, err = e.svc.Create(ctx, "did:plc:admin", linkedrepos.CreateInput{Scopes: "atproto", Handle: "did:plc:alice"})
		wantKind(t, err, fail.Conflict, "a linked repo grant already exists for the DID")

		for _, in := range []linkedrepos.CreateInput{
			{Scopes: ""},
			{Scopes: "atproto repo:nonsid"},
			{Scopes: "atproto what"},
			{Scopes: "atproto", Handle: "not a handle"},
			{Scopes: "atproto", Handle: "did:web"},
			{Scopes: "atproto", Reason: strings.Repeat("é", linkedrepos.MaxReasonLength+1)},
			{Scopes: "atproto", Reason: "bad \xff utf-8"},
		} {
			_, err := e.svc.Create(ctx, "did:plc:admin", in)
			wantKind(t, err, fail.Invalid, "")
		}
		e.clock.Advance(time.Second)
		if _, err := e.svc.Create(ctx, "did:plc:admin", linkedrepos.CreateInput{Scopes: "atproto", Reason: strings.Repeat("é", linkedrepos.MaxReasonLength)}); err != nil {
			t.Fatalf("reason at the limit: %v", err)
		}

		list, err := e.svc.List(ctx)
		if err != nil || len(list) != 4 || list[1].ID != byHandle.ID || list[2].ID != pinned.ID || list[3].ID != g.ID {
			t.Fatalf("list, newest first: %+v %v", list, err)
		}

		_, err = e.svc.Get(ctx, storage.NewID())
		wantKind(t, err, fail.NotFound, "")
		wantKind(t, e.svc.Delete(ctx, "did:plc:admin", storage.NewID()), fail.NotFound, "")
		if err := e.svc.Delete(ctx, "did:plc:admin", pinned.ID); err != nil {
			t.Fatal(err)
		}
		// The DID is free again.
		if _, err := e.svc.Create(ctx, "did:plc:admin", linkedrepos.CreateInput{Scopes: "atproto", Handle: "did:plc:alice"}); err != nil {
			t.Fatal(err)
		}
		want := "linked_repo.created linked_repo.created linked_repo.created linked_repo.created linked_repo.deleted linked_repo.created"
		if got := strings.Join(eventTypes(t, e.store), " "); got != want {
			t.Fatalf("events: %s", got)
		}
	})
}

func TestAuthorize(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		store := open(t)
		ctx := context.Background()
		without := newEnv(t, store, false)
		openGrant, _ := without.svc.Create(ctx, "did:plc:admin", linkedrepos.CreateInput{Scopes: "atproto"})
		pinned, _ := without.svc.Create(ctx, "did:plc:admin", linkedrepos.CreateInput{Scopes: "atproto repo:app.example.post", Handle: "alice.example.com"})

		_, err := without.svc.Authorize(ctx, storage.NewID())
		wantKind(t, err, fail.NotFound, "")
		_, err = without.svc.Authorize(ctx, openGrant.ID)
		wantKind(t, err, fail.Invalid, "use an invite")
		_, err = without.svc.Authorize(ctx, pinned.ID)
		wantKind(t, err, fail.Unavailable, "the instance's OAuth client is not available yet")
		if without.svc.SignInAvailable() {
			t.Fatal("sign-in available without an authorizer")
		}

		with := newEnv(t, store, true)
		u, err := with.svc.Authorize(ctx, pinned.ID)
		if err != nil || u != "https://pds.example/oauth/authorize?request_uri=x" {
			t.Fatalf("authorize: %q %v", u, err)
		}
		if r := with.auth.last(); r != (linkedrepos.AuthorizeRequest{GrantID: pinned.ID, LoginHint: "alice.example.com", Scope: pinned.Scopes}) {
			t.Fatalf("request: %+v", r)
		}
		with.auth.err = errors.New("PAR refused")
		if _, err := with.svc.Authorize(ctx, pinned.ID); err == nil || fail.KindOf(err) != fail.Internal {
			t.Fatalf("authorizer failure: %v", err)
		}
	})
}

// TestStatusTransitions: pending → active on authorization, active →
// needs_reauth on a refresh failure, back to active on re-authorization;
// refreshes move last_refreshed_at; the binding rule and the DID's
// uniqueness hold; delete removes the session.
func TestStatusTransitions(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		e := newEnv(t, open(t), false)
		ctx := context.Background()
		g, _ := e.svc.Create(ctx, "did:plc:admin", linkedrepos.CreateInput{Scopes: "atproto", Handle: "alice.example.com"})
		other, _ := e.svc.Create(ctx, "did:plc:admin", linkedrepos.CreateInput{Scopes: "atproto", Handle: "did:plc:taken"})
		sess := linkedrepos.Session{Sealed: "sealed-a", ExpiresAt: e.clock.Now().Add(time.Hour)}
		alice := linkedrepos.Account{DID: "did:plc:alice", Handle: "alice.example.com"}

		wantKind(t, e.svc.MarkRefreshed(ctx, g.ID, sess), fail.Invalid, "not active")
		wantKind(t, e.svc.MarkNeedsReauth(ctx, g.ID, errors.New("x")), fail.Invalid, "not active")
		wantKind(t, e.svc.MarkAuthorized(ctx, g.ID, linkedrepos.Account{DID: "did:plc:bob", Handle: "bob.example.com"}, sess), fail.Forbidden, "pinned")
		wantKind(t, e.svc.MarkAuthorized(ctx, g.ID, alice, linkedrepos.Session{}), fail.Invalid, "empty")
		wantKind(t, e.svc.MarkAuthorized(ctx, storage.NewID(), alice, sess), fail.NotFound, "")
		if _, err := e.store.GetLinkedRepoSession(ctx, g.ID); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("a refused authorization stored a session: %v", err)
		}

		e.clock.Advance(time.Minute)
		authorizedAt := e.clock.Now()
		if err := e.svc.MarkAuthorized(ctx, g.ID, alice, sess); err != nil {
			t.Fatal(err)
		}
		got, _ := e.svc.Get(ctx, g.ID)
		if got.Status != storage.LinkedRepoActive || got.DID != "did:plc:alice" || !got.AuthorizedAt.Equal(authorizedAt) || !got.LastRefreshedAt.Equal(authorizedAt) {
			t.Fatalf("authorized: %+v", got)
		}
		if st, err := e.store.GetLinkedRepoSession(ctx, g.ID); err != nil || st.Sealed != "sealed-a" || !st.ExpiresAt.Equal(sess.ExpiresAt) {
			t.Fatalf("session: %+v %v", st, err)
		}

		e.clock.Advance(time.Minute)
		if err := e.svc.MarkRefreshed(ctx, g.ID, linkedrepos.Session{Sealed: "sealed-b", ExpiresAt: e.clock.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		got, _ = e.svc.Get(ctx, g.ID)
		if !got.LastRefreshedAt.Equal(e.clock.Now()) || !got.AuthorizedAt.Equal(authorizedAt) {
			t.Fatalf("refreshed: %+v", got)
		}

		if err := e.svc.MarkNeedsReauth(ctx, g.ID, errors.New("invalid_grant: refresh token revoked")); err != nil {
			t.Fatal(err)
		}
		got, _ = e.svc.Get(ctx, g.ID)
		if got.Status != storage.LinkedRepoNeedsReauth || got.LastError != "invalid_grant: refresh token revoked" {
			t.Fatalf("needs reauth: %+v", got)
		}
		wantKind(t, e.svc.MarkRefreshed(ctx, g.ID, sess), fail.Invalid, "not active")
		long := errors.New(strings.Repeat("e", linkedrepos.MaxErrorLength+50))
		if err := e.svc.MarkNeedsReauth(ctx, g.ID, long); err != nil {
			t.Fatal(err)
		}
		if got, _ = e.svc.Get(ctx, g.ID); len(got.LastError) != linkedrepos.MaxErrorLength {
			t.Fatalf("last_error not bounded: %d", len(got.LastError))
		}

		// Re-authorization: only the bound DID, even with the pinned handle.
		wantKind(t, e.svc.MarkAuthorized(ctx, g.ID, linkedrepos.Account{DID: "did:plc:mallory", Handle: "alice.example.com"}, sess), fail.Forbidden, "")
		e.clock.Advance(time.Minute)
		if err := e.svc.MarkAuthorized(ctx, g.ID, alice, linkedrepos.Session{Sealed: "sealed-c", ExpiresAt: e.clock.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		got, _ = e.svc.Get(ctx, g.ID)
		if got.Status != storage.LinkedRepoActive || got.LastError != "" || !got.AuthorizedAt.Equal(e.clock.Now()) {
			t.Fatalf("re-authorized: %+v", got)
		}

		// An open grant authorized by a DID another grant has: 409.
		openGrant, _ := e.svc.Create(ctx, "did:plc:admin", linkedrepos.CreateInput{Scopes: "atproto"})
		wantKind(t, e.svc.MarkAuthorized(ctx, openGrant.ID, linkedrepos.Account{DID: other.DID}, sess), fail.Conflict, "already exists")

		if err := e.svc.Delete(ctx, "did:plc:admin", g.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := e.store.GetLinkedRepoSession(ctx, g.ID); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("session kept after delete: %v", err)
		}
		types := strings.Join(eventTypes(t, e.store), " ")
		for _, want := range []string{"linked_repo.authorized", "linked_repo.refresh_failed", "linked_repo.deleted"} {
			if !strings.Contains(types, want) {
				t.Fatalf("no %s event: %s", want, types)
			}
		}
		list, _, _ := e.store.ListEvents(ctx, storage.EventFilter{Type: "linked_repo.refresh_failed", Limit: 10})
		if len(list) != 2 || list[0].Severity != eventlog.Warn {
			t.Fatalf("refresh failure events: %+v", list)
		}
	})
}

func TestInvites(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		e := newEnv(t, open(t), true)
		ctx := context.Background()
		g, _ := e.svc.Create(ctx, "did:plc:admin", linkedrepos.CreateInput{Scopes: "atproto repo:app.example.post", Reason: "why"})
		n := func(v int64) *int64 { return &v }

		for _, bad := range []int64{-1, 0, 59, 2_592_001} {
			_, err := e.svc.Invite(ctx, "did:plc:admin", g.ID, n(bad))
			wantKind(t, err, fail.Invalid, "expires_in must be between 60 and 2592000 seconds")
		}
		_, err := e.svc.Invite(ctx, "did:plc:admin", storage.NewID(), nil)
		wantKind(t, err, fail.NotFound, "")

		def, err := e.svc.Invite(ctx, "did:plc:admin", g.ID, nil)
		if err != nil || !def.ExpiresAt.Equal(e.clock.Now().Add(7*24*time.Hour)) {
			t.Fatalf("default lifetime: %+v %v", def, err)
		}
		token, ok := strings.CutPrefix(def.URL, "https://lexview.example/invite/")
		raw, derr := base64.RawURLEncoding.DecodeString(token)
		if !ok || derr != nil || len(raw) < 16 {
			t.Fatalf("invite URL %q: token of %d bytes, %v", def.URL, len(raw), derr)
		}
		sum := sha256.Sum256([]byte(token))
		if linkedrepos.InviteID(token) != hex.EncodeToString(sum[:]) {
			t.Fatal("InviteID is not the hex SHA-256 of the token")
		}
		e.clock.Advance(time.Second)
		short, _ := e.svc.Invite(ctx, "did:plc:admin", g.ID, n(60))
		e.clock.Advance(time.Second)
		longest, err := e.svc.Invite(ctx, "did:plc:admin", g.ID, n(2_592_000))
		if err != nil || !longest.ExpiresAt.Equal(e.clock.Now().Add(30*24*time.Hour)) {
			t.Fatalf("longest: %+v %v", longest, err)
		}
		if short.URL == def.URL || longest.URL == def.URL {
			t.Fatal("two invites share a token")
		}
		// No token is stored: only its hash.
		for _, u := range []string{def.URL, short.URL, longest.URL} {
			tok := u[strings.LastIndex(u, "/")+1:]
			if _, err := e.store.GetLinkedRepoInvite(ctx, tok); !errors.Is(err, storage.ErrNotFound) {
				t.Fatal("the token itself is an invite id")
			}
		}

		ids := func() []string {
			t.Helper()
			list, err := e.svc.Invites(ctx, g.ID)
			if err != nil {
				t.Fatal(err)
			}
			out := make([]string, len(list))
			for i, inv := range list {
				out[i] = inv.ID
			}
			return out
		}
		idOf := func(u string) string { return linkedrepos.InviteID(u[strings.LastIndex(u, "/")+1:]) }
		if got := ids(); len(got) != 3 || got[0] != idOf(longest.URL) || got[2] != idOf(def.URL) {
			t.Fatalf("invites: %v", got)
		}
		_, err = e.svc.Invites(ctx, storage.NewID())
		wantKind(t, err, fail.NotFound, "")

		// The page opens an outstanding invite.
		tok := func(u string) string { return u[strings.LastIndex(u, "/")+1:] }
		o, err := e.svc.OpenInvite(ctx, tok(short.URL))
		if err != nil || o.Grant.ID != g.ID || o.Grant.Reason != "why" {
			t.Fatalf("open: %+v %v", o, err)
		}
		_, err = e.svc.OpenInvite(ctx, "guessed-token")
		wantKind(t, err, fail.NotFound, "invite not found")

		// Expiry: the 60-second invite ends.
		e.clock.Advance(time.Minute)
		if got := ids(); len(got) != 2 {
			t.Fatalf("after expiry: %v", got)
		}
		if _, err := e.svc.OpenInvite(ctx, tok(short.URL)); !errors.Is(err, linkedrepos.ErrInviteEnded) {
			t.Fatalf("open an expired invite: %v", err)
		}
		wantKind(t, e.svc.RevokeInvite(ctx, "did:plc:admin", g.ID, idOf(short.URL)), fail.NotFound, "invite not found")

		// Revoke.
		wantKind(t, e.svc.RevokeInvite(ctx, "did:plc:admin", g.ID, "unknown"), fail.NotFound, "")
		wantKind(t, e.svc.RevokeInvite(ctx, "did:plc:admin", storage.NewID(), idOf(def.URL)), fail.NotFound, "")
		if err := e.svc.RevokeInvite(ctx, "did:plc:admin", g.ID, idOf(def.URL)); err != nil {
			t.Fatal(err)
		}
		wantKind(t, e.svc.RevokeInvite(ctx, "did:plc:admin", g.ID, idOf(def.URL)), fail.NotFound, "")
		if _, err := e.svc.OpenInvite(ctx, tok(def.URL)); !errors.Is(err, linkedrepos.ErrInviteEnded) {
			t.Fatalf("open a revoked invite: %v", err)
		}
		if _, err := e.svc.StartInvite(ctx, tok(def.URL), ""); !errors.Is(err, linkedrepos.ErrInviteEnded) {
			t.Fatalf("start a revoked invite: %v", err)
		}

		// Sign-in through the remaining invite: an open grant lets the
		// follower name the account; a bad name is a 400.
		_, err = e.svc.StartInvite(ctx, tok(longest.URL), "not a handle")
		wantKind(t, err, fail.Invalid, "")
		u, err := e.svc.StartInvite(ctx, tok(longest.URL), "Carol.Example.com")
		if err != nil || u == "" {
			t.Fatal(err)
		}
		if r := e.auth.last(); r != (linkedrepos.AuthorizeRequest{GrantID: g.ID, InviteID: idOf(longest.URL), LoginHint: "carol.example.com", Scope: g.Scopes}) {
			t.Fatalf("invite sign-in request: %+v", r)
		}
		// Starting does not use the invite up.
		if got := ids(); len(got) != 1 {
			t.Fatalf("started invite no longer listed: %v", got)
		}

		carol := linkedrepos.Account{DID: "did:plc:carol", Handle: "carol.example.com"}
		sess := linkedrepos.Session{Sealed: "sealed", ExpiresAt: e.clock.Now().Add(time.Hour)}
		wantKind(t, e.svc.RedeemInvite(ctx, g.ID, "unknown", carol, sess), fail.NotFound, "")
		other, _ := e.svc.Create(ctx, "did:plc:admin", linkedrepos.CreateInput{Scopes: "atproto"})
		wantKind(t, e.svc.RedeemInvite(ctx, other.ID, idOf(longest.URL), carol, sess), fail.NotFound, "")
		// A DID another grant has: 409, and the invite stays usable.
		if _, err := e.svc.Create(ctx, "did:plc:admin", linkedrepos.CreateInput{Scopes: "atproto", Handle: "did:plc:erin"}); err != nil {
			t.Fatal(err)
		}
		wantKind(t, e.svc.RedeemInvite(ctx, g.ID, idOf(longest.URL), linkedrepos.Account{DID: "did:plc:erin"}, sess), fail.Conflict, "")
		if got := ids(); len(got) != 1 {
			t.Fatalf("a refused redemption used the invite: %v", got)
		}
		if err := e.svc.RedeemInvite(ctx, g.ID, idOf(longest.URL), carol, sess); err != nil {
			t.Fatal(err)
		}
		got, _ := e.svc.Get(ctx, g.ID)
		if got.DID != "did:plc:carol" || got.Status != storage.LinkedRepoActive {
			t.Fatalf("bound through the invite: %+v", got)
		}
		// Single use.
		if err := e.svc.RedeemInvite(ctx, g.ID, idOf(longest.URL), carol, sess); !errors.Is(err, linkedrepos.ErrInviteEnded) {
			t.Fatalf("redeem twice: %v", err)
		}
		if _, err := e.svc.OpenInvite(ctx, tok(longest.URL)); !errors.Is(err, linkedrepos.ErrInviteEnded) {
			t.Fatalf("open a used invite: %v", err)
		}
		if got := ids(); len(got) != 0 {
			t.Fatalf("used invite still listed: %v", got)
		}

		// A pinned grant's invite signs in the pinned account, whatever
		// the follower types; a wrong account leaves the invite usable.
		pinned, _ := e.svc.Create(ctx, "did:plc:admin", linkedrepos.CreateInput{Scopes: "atproto", Handle: "did:plc:dave"})
		inv, _ := e.svc.Invite(ctx, "did:plc:admin", pinned.ID, nil)
		if _, err := e.svc.StartInvite(ctx, tok(inv.URL), "someone.else.com"); err != nil {
			t.Fatal(err)
		}
		if r := e.auth.last(); r.LoginHint != "did:plc:dave" {
			t.Fatalf("pinned invite hint: %+v", r)
		}
		wantKind(t, e.svc.RedeemInvite(ctx, pinned.ID, idOf(inv.URL), carol, sess), fail.Forbidden, "")
		if err := e.svc.RedeemInvite(ctx, pinned.ID, idOf(inv.URL), linkedrepos.Account{DID: "did:plc:dave"}, sess); err != nil {
			t.Fatal(err)
		}
	})
}

func TestInviteSignInUnavailable(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		e := newEnv(t, open(t), false)
		ctx := context.Background()
		g, _ := e.svc.Create(ctx, "did:plc:admin", linkedrepos.CreateInput{Scopes: "atproto"})
		inv, err := e.svc.Invite(ctx, "did:plc:admin", g.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = e.svc.StartInvite(ctx, inv.URL[strings.LastIndex(inv.URL, "/")+1:], "")
		wantKind(t, err, fail.Unavailable, "not available yet")
	})
}
