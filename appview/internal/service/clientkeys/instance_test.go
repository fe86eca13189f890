package clientkeys_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/lexview/lexview/appview/internal/core/eventlog"
	"github.com/lexview/lexview/appview/internal/core/fail"
	"github.com/lexview/lexview/appview/internal/service/clientkeys"
	"github.com/lexview/lexview/oauth"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

func newInstance(t *testing.T, store storage.Store, sealer *oauth.Sealer) *clientkeys.Instance {
	t.Helper()
	return clientkeys.NewInstance(clientkeys.InstanceOptions{
		Store: store, Sealer: sealer, Now: time.Now,
		Events: eventlog.New(eventlog.Options{Store: store, Logger: slog.New(slog.DiscardHandler)}),
	})
}

func sealer(t *testing.T) *oauth.Sealer {
	t.Helper()
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	s, err := oauth.NewSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// verify checks jwt against the instance's published key set and returns
// its claims.
func verify(t *testing.T, svc *clientkeys.Instance, jwt string) (oauth.AssertionClaims, string) {
	t.Helper()
	jws, err := jose.ParseSignedCompact(jwt, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		t.Fatal(err)
	}
	kid := jws.Signatures[0].Protected.KeyID
	set, err := svc.KeySet(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range set.Keys {
		if k.Kid != kid {
			continue
		}
		pub, err := k.PublicKey()
		if err != nil {
			t.Fatal(err)
		}
		payload, err := jws.Verify(pub)
		if err != nil {
			t.Fatalf("assertion does not verify with published key %s: %v", kid, err)
		}
		var c oauth.AssertionClaims
		if err := json.Unmarshal(payload, &c); err != nil {
			t.Fatal(err)
		}
		return c, kid
	}
	t.Fatalf("kid %s is not published", kid)
	return oauth.AssertionClaims{}, ""
}

// TestInstanceSign: the instance signs client assertions as a domain's
// client with its current key, or with a named retiring key, each
// verifiable with the published key set; revoked and unknown kids,
// and bad issuers, are refused; without a sealer no key can be made.
func TestInstanceSign(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		ctx := context.Background()
		store := open(t)
		svc := newInstance(t, store, sealer(t))
		const clientID = "https://view.example/oauth-client-metadata.json"
		const issuer = "https://auth.example"

		// First use makes the key.
		a, err := svc.Sign(ctx, clientID, issuer, "")
		if err != nil {
			t.Fatal(err)
		}
		c, first := verify(t, svc, a.JWT)
		if c.Issuer != clientID || c.Subject != clientID || c.Audience != issuer || first != a.KID {
			t.Fatalf("claims %+v", c)
		}
		next, retired, err := svc.Rotate(ctx, "did:plc:op")
		if err != nil || retired.KID != first {
			t.Fatalf("rotate: %v %v", retired.KID, err)
		}
		if a, err = svc.Sign(ctx, clientID, issuer, ""); err != nil || a.KID != next.KID {
			t.Fatalf("current key after rotate: %v %v", a.KID, err)
		}
		verify(t, svc, a.JWT)
		if a, err = svc.Sign(ctx, clientID, issuer, first); err != nil || a.KID != first {
			t.Fatalf("retiring key: %v %v", a.KID, err)
		}
		verify(t, svc, a.JWT)
		if err := svc.Revoke(ctx, "did:plc:op", first); err != nil {
			t.Fatal(err)
		}
		for kid, msg := range map[string]string{first: "kid has been revoked", "nope": "unknown kid"} {
			if _, err := svc.Sign(ctx, clientID, issuer, kid); fail.KindOf(err) != fail.Invalid || fail.Message(err) != msg {
				t.Fatalf("sign with %s: %v", kid, err)
			}
		}
		if _, err := svc.Sign(ctx, clientID, "ftp://auth.example", ""); fail.KindOf(err) != fail.Invalid {
			t.Fatalf("bad issuer: %v", err)
		}

		// Without token encryption no key is made.
		bare := newInstance(t, open(t), nil)
		if _, err := bare.List(ctx); fail.KindOf(err) != fail.Unavailable {
			t.Fatalf("list without a sealer: %v", err)
		}
		if set, err := bare.KeySet(ctx); err != nil || len(set.Keys) != 0 {
			t.Fatalf("key set without a sealer: %+v %v", set, err)
		}
	})
}
