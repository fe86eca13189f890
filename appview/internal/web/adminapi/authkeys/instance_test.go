package authkeys_test

import (
	"context"
	"slices"
	"testing"

	"github.com/lexview/lexview/appview"
	"github.com/lexview/lexview/appview/internal/service/admins"
	"github.com/lexview/lexview/appview/internal/service/clientkeys"
	"github.com/lexview/lexview/appview/internal/testing/testenv"
	"github.com/lexview/lexview/oauth"
	"github.com/lexview/lexview/storage"
	"github.com/lexview/lexview/storage/storagetest"
)

type instanceKeyList struct {
	Keys []struct {
		KID       string           `json:"kid"`
		Status    string           `json:"status"`
		CreatedAt string           `json:"created_at"`
		RetiredAt *string          `json:"retired_at"`
		RevokedAt *string          `json:"revoked_at"`
		PublicJWK *oauth.PublicJWK `json:"public_jwk"`
	} `json:"keys"`
	JWKSURI string `json:"jwks_uri"`
}

func (l instanceKeyList) statuses() []string {
	var out []string
	for _, k := range l.Keys {
		out = append(out, k.KID+":"+k.Status)
	}
	return out
}

// instanceJWKS fetches the instance's key set and returns its kids, each
// key checked to be a P-256 ES256 signing key.
func instanceJWKS(t *testing.T, env *testenv.Env) []string {
	t.Helper()
	r := env.Do(t, "GET", "/oauth/jwks.json", nil)
	if r.Status != 200 {
		t.Fatalf("instance jwks: %d %s", r.Status, r.Raw)
	}
	expect(t, r, 200, "")
	var set oauth.JWKS
	r.JSON(t, &set)
	kids := []string{}
	for _, k := range set.Keys {
		if _, err := k.PublicKey(); err != nil || k.Kty != "EC" || k.Crv != "P-256" || k.Alg != "ES256" || k.Use != "sig" {
			t.Fatalf("published key %+v: %v", k, err)
		}
		kids = append(kids, k.Kid)
	}
	return kids
}

// TestInstanceKeyLifeCycle: the instance key is made at first boot, kept
// across restarts, rotated (the old key retiring, both published), and
// revoked (no longer published); the current key cannot be revoked, an
// unknown kid is 404, and nothing ever returns a private key.
func TestInstanceKeyLifeCycle(t *testing.T) {
	storagetest.ForEach(t, func(t *testing.T, open func(testing.TB) storage.Store) {
		store := open(t)
		env := testenv.New(t, store, appview.Config{})
		su := env.Bootstrap(t)
		list := func() instanceKeyList {
			t.Helper()
			r := su.Do(t, "GET", "/admin/oauth/instance-key", nil)
			expect(t, r, 200, "")
			var l instanceKeyList
			r.JSON(t, &l)
			if l.JWKSURI != env.URL+"/oauth/jwks.json" {
				t.Fatalf("jwks_uri %q", l.JWKSURI)
			}
			return l
		}

		// Made at first boot; a second App on the same store keeps it.
		l := list()
		if len(l.Keys) != 1 || l.Keys[0].Status != storage.AuthKeyCurrent || l.Keys[0].PublicJWK == nil ||
			l.Keys[0].RetiredAt != nil || l.Keys[0].RevokedAt != nil {
			t.Fatalf("first boot: %+v", l.Keys)
		}
		first := l.Keys[0].KID
		if l.Keys[0].PublicJWK.Kid != first {
			t.Fatalf("public_jwk kid %q, want %q", l.Keys[0].PublicJWK.Kid, first)
		}
		testenv.New(t, store, appview.Config{})
		if got := list().statuses(); !slices.Equal(got, []string{first + ":current"}) {
			t.Fatalf("after a second boot: %v", got)
		}
		if got := instanceJWKS(t, env); !slices.Equal(got, []string{first}) {
			t.Fatalf("published: %v", got)
		}

		// Refusals.
		expect(t, su.Do(t, "DELETE", "/admin/oauth/instance-key/"+first, nil), 400, "cannot revoke the current key; rotate first")
		expect(t, su.Do(t, "DELETE", "/admin/oauth/instance-key/nosuchkid", nil), 404, "instance key not found")

		// Rotate: the old key retires and stays published.
		r := su.Do(t, "POST", "/admin/oauth/instance-key/rotate", nil)
		expect(t, r, 200, "")
		o := r.Object(t)
		second, _ := o["kid"].(string)
		if second == "" || second == first || o["retired_kid"] != first || o["jwks_uri"] != env.URL+"/oauth/jwks.json" {
			t.Fatalf("rotate: %s", r.Raw)
		}
		l = list()
		if got := l.statuses(); !slices.Equal(got, []string{second + ":current", first + ":retiring"}) {
			t.Fatalf("after rotate: %v", got)
		}
		if l.Keys[1].RetiredAt == nil || l.Keys[1].PublicJWK == nil {
			t.Fatalf("retiring key: %+v", l.Keys[1])
		}
		if got := instanceJWKS(t, env); !slices.Equal(got, []string{second, first}) {
			t.Fatalf("published after rotate (current first): %v", got)
		}
		expect(t, su.Do(t, "DELETE", "/admin/oauth/instance-key/"+second, nil), 400, "cannot revoke the current key; rotate first")

		// Revoke the retiring key: gone from the key set at once; again is a
		// no-op.
		if r := su.Do(t, "DELETE", "/admin/oauth/instance-key/"+first, nil); r.Status != 204 {
			t.Fatalf("revoke retiring: %d %s", r.Status, r.Raw)
		}
		if r := su.Do(t, "DELETE", "/admin/oauth/instance-key/"+first, nil); r.Status != 204 {
			t.Fatalf("revoke again: %d %s", r.Status, r.Raw)
		}
		l = list()
		if got := l.statuses(); !slices.Equal(got, []string{second + ":current", first + ":revoked"}) {
			t.Fatalf("after revoke: %v", got)
		}
		if l.Keys[1].RevokedAt == nil || l.Keys[1].PublicJWK != nil {
			t.Fatalf("revoked key: %+v", l.Keys[1])
		}
		if got := instanceJWKS(t, env); !slices.Equal(got, []string{second}) {
			t.Fatalf("published after revoke: %v", got)
		}

		// Sealed at rest under the instance's own purpose.
		keys, err := store.ListInstanceKeys(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		sealer := testSealer(t)
		for _, k := range keys {
			if _, err := clientkeys.PrivateKey(sealer, k); err != nil {
				t.Fatalf("open %s: %v", k.KID, err)
			}
			if _, err := sealer.Open(clientkeys.SealPurpose("instance", k.KID), k.SealedPrivateKey); err == nil {
				t.Fatalf("key %s opens under a client key's purpose", k.KID)
			}
		}

		// The audit trail.
		events, _, err := store.ListEvents(context.Background(), storage.EventFilter{Category: "instance_key", Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		counts := map[string]int{}
		for _, e := range events {
			counts[e.Type]++
		}
		if counts[clientkeys.EventInstanceCreated] != 1 || counts[clientkeys.EventInstanceRotated] != 1 ||
			counts[clientkeys.EventInstanceRevoked] != 1 {
			t.Fatalf("events: %v", counts)
		}

		// settings:manage is required.
		other := env.AddAdmin(t, admins.UsersRead)
		for _, req := range [][2]string{{"GET", "/admin/oauth/instance-key"}, {"POST", "/admin/oauth/instance-key/rotate"},
			{"DELETE", "/admin/oauth/instance-key/" + second}} {
			if r := other.Do(t, req[0], req[1], nil); r.Status != 403 {
				t.Fatalf("%s %s without settings:manage: %d %s", req[0], req[1], r.Status, r.Raw)
			}
		}
	})
}
