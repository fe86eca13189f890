package plc_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/bluesky-social/indigo/atproto/atcrypto"
	"github.com/bluesky-social/indigo/atproto/identity"
	"github.com/bluesky-social/indigo/atproto/syntax"

	"github.com/lexview/lexview/appview/internal/core/plc"
	"github.com/lexview/lexview/appview/internal/testing/refpds"
)

func newKey(t *testing.T) (*atcrypto.PrivateKeyK256, string) {
	t.Helper()
	k, err := atcrypto.GeneratePrivateKeyK256()
	if err != nil {
		t.Fatal(err)
	}
	pub, err := k.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	return k, pub.DIDKey()
}

func TestOperationSignature(t *testing.T) {
	rot, rotDID := newKey(t)
	_, otherDID := newKey(t)
	op := plc.State{RotationKeys: []string{rotDID}}.Next("")
	if op.Prev != nil || op.VerificationMethods == nil || op.Services == nil || op.AlsoKnownAs == nil {
		t.Fatalf("genesis shape: %+v", op)
	}
	if _, err := op.CID(); err == nil {
		t.Fatal("CID of an unsigned operation")
	}
	if err := op.Sign(rot); err != nil {
		t.Fatal(err)
	}
	if err := op.Verify(rotDID); err != nil {
		t.Fatalf("verify with the signing key: %v", err)
	}
	if err := op.Verify(otherDID); err == nil {
		t.Fatal("verified with another key")
	}
	did, err := op.DID()
	if err != nil || !strings.HasPrefix(did, "did:plc:") || len(did) != len("did:plc:")+24 || strings.ToLower(did) != did {
		t.Fatalf("DID %q %v", did, err)
	}
	if _, err := syntax.ParseDID(did); err != nil {
		t.Fatal(err)
	}
	// A changed field invalidates the signature.
	op.AlsoKnownAs = []string{"at://someone.test"}
	if err := op.Verify(rotDID); err == nil {
		t.Fatal("verified after a change")
	}
	next := plc.State{RotationKeys: []string{rotDID}}.Next("bafyreib")
	if _, err := next.DID(); err == nil {
		t.Fatal("a non-genesis operation named a DID")
	}
}

// TestReferenceDirectory creates a DID at the reference PLC directory,
// updates it, and resolves it with indigo's identity code: the directory
// checks the chain and the low-S signatures.
func TestReferenceDirectory(t *testing.T) {
	n := refpds.Start(t)
	ctx := context.Background()
	c := &plc.Client{URL: n.PLCURL, HTTP: http.DefaultClient}
	rot, rotDID := newKey(t)
	_, sigDID := newKey(t)

	genesis := plc.State{
		RotationKeys:        []string{rotDID},
		VerificationMethods: map[string]string{"atproto": sigDID},
		Services:            map[string]plc.Service{"bsky_appview": {Type: "BskyAppView", Endpoint: "https://one.example"}},
	}.Next("")
	if err := genesis.Sign(rot); err != nil {
		t.Fatal(err)
	}
	did, err := genesis.DID()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.State(ctx, did); !errors.Is(err, plc.ErrNotFound) {
		t.Fatalf("state before genesis: %v", err)
	}
	if err := c.Submit(ctx, did, genesis); err != nil {
		t.Fatalf("submit genesis: %v", err)
	}
	head, err := c.Head(ctx, did)
	if want, _ := genesis.CID(); err != nil || head != want {
		t.Fatalf("head %q %v, want our CID %q", head, err, want)
	}

	state, err := c.State(ctx, did)
	if err != nil || state.Services["bsky_appview"].Endpoint != "https://one.example" || state.VerificationMethods["atproto"] != sigDID {
		t.Fatalf("state %+v %v", state, err)
	}
	state.Services["bsky_appview"] = plc.Service{Type: "BskyAppView", Endpoint: "https://two.example"}
	state.Services["feed"] = plc.Service{Type: "BskyFeedGenerator", Endpoint: "https://two.example"}
	update := state.Next(head)
	if err := update.Sign(rot); err != nil {
		t.Fatal(err)
	}
	if err := c.Submit(ctx, did, update); err != nil {
		t.Fatalf("submit update: %v", err)
	}

	dir := identity.BaseDirectory{PLCURL: n.PLCURL, HTTPClient: *http.DefaultClient}
	doc, err := dir.ResolveDID(ctx, syntax.DID(did))
	if err != nil {
		t.Fatal(err)
	}
	endpoints := map[string]string{}
	for _, s := range doc.Service {
		endpoints[s.ID+" "+s.Type] = s.ServiceEndpoint
	}
	if endpoints["#bsky_appview BskyAppView"] != "https://two.example" || endpoints["#feed BskyFeedGenerator"] != "https://two.example" {
		t.Fatalf("resolved services: %v", endpoints)
	}

	// An operation signed by a key that is not a rotation key is refused,
	// with the directory's message.
	stranger, _ := newKey(t)
	head, _ = c.Head(ctx, did)
	bad := state.Next(head)
	if err := bad.Sign(stranger); err != nil {
		t.Fatal(err)
	}
	var perr *plc.Error
	if err := c.Submit(ctx, did, bad); !errors.As(err, &perr) || perr.Status != http.StatusBadRequest || perr.Message == "" {
		t.Fatalf("submit with a stranger's key: %v", err)
	}
}
