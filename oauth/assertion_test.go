package oauth

import (
	"encoding/json"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

func TestClientAssertion(t *testing.T) {
	key := mustKey(t)
	const clientID = "https://app.test/client-metadata.json"
	const issuer = "https://pds.test"
	jwt, exp, err := NewClientAssertion(key, "kid-1", clientID, issuer, testNow.Add(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if !exp.Equal(testNow.Add(AssertionLifetime)) {
		t.Fatalf("expiry %v", exp)
	}
	jws, err := jose.ParseSignedCompact(jwt, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		t.Fatal(err)
	}
	h := jws.Signatures[0].Protected
	if h.KeyID != "kid-1" || h.Algorithm != "ES256" || h.JSONWebKey != nil {
		t.Fatalf("header %+v", h)
	}
	pubJWK, err := NewPublicJWK(&key.PublicKey, "kid-1")
	if err != nil {
		t.Fatal(err)
	}
	pub, err := pubJWK.PublicKey()
	if err != nil || !pub.Equal(&key.PublicKey) {
		t.Fatalf("public JWK round trip: %v", err)
	}
	payload, err := jws.Verify(pub)
	if err != nil {
		t.Fatal(err)
	}
	var c AssertionClaims
	if err := json.Unmarshal(payload, &c); err != nil {
		t.Fatal(err)
	}
	if c.Issuer != clientID || c.Subject != clientID || c.Audience != issuer || c.JTI == "" ||
		c.IssuedAt != testNow.Unix() || c.Expiry != testNow.Unix()+60 {
		t.Fatalf("claims %+v", c)
	}
	other, _, _ := NewClientAssertion(key, "kid-1", clientID, issuer, testNow)
	var c2 AssertionClaims
	j2, _ := jose.ParseSignedCompact(other, []jose.SignatureAlgorithm{jose.ES256})
	p2, _ := j2.Verify(pub)
	_ = json.Unmarshal(p2, &c2)
	if c2.JTI == c.JTI {
		t.Fatal("jti reused")
	}
	if _, _, err := NewClientAssertion(key, "", clientID, issuer, testNow); err == nil {
		t.Fatal("assertion without kid")
	}
	if ClientAssertionType != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" {
		t.Fatal("assertion type")
	}
}

func TestJWKS(t *testing.T) {
	empty, _ := json.Marshal(NewJWKS())
	if string(empty) != `{"keys":[]}` {
		t.Fatalf("empty set %s", empty)
	}
	a, _ := NewPublicJWK(&mustKey(t).PublicKey, "a")
	b, _ := NewPublicJWK(&mustKey(t).PublicKey, "b")
	raw, _ := json.Marshal(NewJWKS(a, b))
	var got struct {
		Keys []map[string]any `json:"keys"`
	}
	if err := json.Unmarshal(raw, &got); err != nil || len(got.Keys) != 2 {
		t.Fatalf("%s %v", raw, err)
	}
	for i, k := range got.Keys {
		if len(k) != 7 || k["kty"] != "EC" || k["crv"] != "P-256" || k["alg"] != "ES256" || k["use"] != "sig" ||
			k["kid"] != []string{"a", "b"}[i] || k["x"] == "" || k["y"] == "" || k["d"] != nil {
			t.Fatalf("key %d: %v", i, k)
		}
	}
	// The set parses as a JWKS for other implementations.
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(raw, &set); err != nil || len(set.Key("b")) != 1 || !set.Keys[0].IsPublic() {
		t.Fatalf("go-jose reads the set: %v", err)
	}
	if a, b := NewKeyID(), NewKeyID(); a == b {
		t.Fatal("key IDs repeat")
	}
}
