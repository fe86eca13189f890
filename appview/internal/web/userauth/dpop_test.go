package userauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/oauth"
)

// brokenReplayStore is a shared replay store whose database is down.
type brokenReplayStore struct{ err error }

func (s brokenReplayStore) RememberDPoPProof(context.Context, []byte, time.Time, time.Time) (bool, error) {
	return false, s.err
}

// TestDPoPReplayCheckFailsClosed: when the shared replay store fails, a
// valid proof is refused with a server error (not accepted, and not
// blamed on the caller as a 401).
func TestDPoPReplayCheckFailsClosed(t *testing.T) {
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	down := errors.New("database unreachable")
	a := &Authenticator{
		PublicURL: "https://appview.test",
		DPoP:      oauth.NewVerifier(oauth.VerifierOptions{Now: func() time.Time { return now }, Shared: brokenReplayStore{down}}),
		Now:       func() time.Time { return now },
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := oauth.NewSigner(key, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	proof, err := signer.NewProof("GET", "https://appview.test/xrpc/app.test.get", "tok", "")
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("GET", "https://appview.test/xrpc/app.test.get", nil)
	r.Header.Set("Authorization", "DPoP tok")
	r.Header.Set("DPoP", proof)
	s, err := a.DPoPSession(r, "client")
	if s != nil || !errors.Is(err, down) {
		t.Fatalf("session %v, error %v; want the store's failure", s, err)
	}
	if k := fail.KindOf(err); k != fail.Internal {
		t.Fatalf("a store failure is a %v refusal, want an internal error", k)
	}
}
