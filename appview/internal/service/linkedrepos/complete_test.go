package linkedrepos_test

import (
	"context"
	"errors"
	"testing"

	"github.com/bluesky-social/indigo/atproto/identity"
	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/service/linkedrepos"
	"github.com/lexview/lexview/appview/internal/service/oauthclient"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

// flows records the sessions ended.
type flows struct{ ended []string }

func (f *flows) Authorize(context.Context, oauthclient.Request) (string, error) { return "", nil }
func (f *flows) EndSession(_ context.Context, did syntax.DID, sessionID string) error {
	f.ended = append(f.ended, did.String()+" "+sessionID)
	return nil
}

// handles resolves alice.example.com to did:plc:alice, nothing else.
type handles struct{}

func (handles) LookupHandle(_ context.Context, h syntax.Handle) (*identity.Identity, error) {
	if h == "alice.example.com" {
		return &identity.Identity{DID: "did:plc:alice", Handle: h}, nil
	}
	return nil, errors.New("no such handle")
}

// TestCompleteAuthorization: a finished flow binds its grant to the
// account (keeping the pinned handle only when it resolves to that
// account now) and keeps the session; a refused binding ends the new
// session and stores nothing. Only a bound account is handed to
// Options.Linked (the on-demand backfill of its repository).
func TestCompleteAuthorization(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		e := newEnv(t, open(t), false)
		ctx := context.Background()
		f := &flows{}
		g, _ := e.svc.Create(ctx, "did:plc:admin", linkedrepos.CreateInput{Scopes: "atproto", Handle: "alice.example.com"})

		res := oauthclient.Result{Purpose: linkedrepos.PurposeLinkedRepo, Subject: g.ID, DID: "did:plc:bob", SessionID: "s-bob"}
		_, err := e.svc.CompleteAuthorization(ctx, res, f, handles{})
		wantKind(t, err, fail.Forbidden, "pinned")
		if len(f.ended) != 1 || f.ended[0] != "did:plc:bob s-bob" {
			t.Fatalf("the refused session was not ended: %v", f.ended)
		}
		if _, err := e.store.GetLinkedRepoSession(ctx, g.ID); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("a refused authorization stored a session: %v", err)
		}

		res = oauthclient.Result{Purpose: linkedrepos.PurposeLinkedRepo, Subject: g.ID, DID: "did:plc:alice", SessionID: "s-alice"}
		out, err := e.svc.CompleteAuthorization(ctx, res, f, handles{})
		if err != nil || out != (linkedrepos.Authorized{GrantID: g.ID, DID: "did:plc:alice", Status: "active"}) {
			t.Fatalf("completed: %+v %v", out, err)
		}
		got, _ := e.svc.Get(ctx, g.ID)
		if got.Status != storage.LinkedRepoActive || got.DID != "did:plc:alice" || got.Handle != "alice.example.com" {
			t.Fatalf("grant: %+v", got)
		}
		if st, err := e.store.GetLinkedRepoSession(ctx, g.ID); err != nil || st.Sealed != "s-alice" {
			t.Fatalf("session: %+v %v", st, err)
		}
		if len(f.ended) != 1 {
			t.Fatalf("a bound session was ended: %v", f.ended)
		}
		if len(e.linked) != 1 || e.linked[0] != "did:plc:alice" {
			t.Fatalf("linked accounts: %v", e.linked)
		}

		res.Subject = storage.NewID()
		_, err = e.svc.CompleteAuthorization(ctx, res, f, handles{})
		wantKind(t, err, fail.NotFound, "")
		if len(f.ended) != 2 {
			t.Fatalf("the session of an unknown grant was not ended: %v", f.ended)
		}
		if len(e.linked) != 1 {
			t.Fatalf("a refused authorization was linked: %v", e.linked)
		}
	})
}
