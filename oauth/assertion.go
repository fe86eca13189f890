package oauth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Client assertions (RFC 7523) let Lexview authenticate as an app's
// confidential client to the app users' authorization servers.
const (
	// ClientAssertionType is the client_assertion_type of a JWT-bearer
	// client assertion.
	ClientAssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
	// AssertionLifetime is how long a client assertion is valid.
	AssertionLifetime = 60 * time.Second
	// SigningAlgorithm is the only algorithm of client authentication keys.
	SigningAlgorithm = "ES256"
)

// AssertionClaims are the claims of a client assertion.
type AssertionClaims struct {
	Issuer   string `json:"iss"`
	Subject  string `json:"sub"`
	Audience string `json:"aud"`
	JTI      string `json:"jti"`
	IssuedAt int64  `json:"iat"`
	Expiry   int64  `json:"exp"`
}

// NewClientAssertion signs a client assertion with an ES256 key named kid:
// iss and sub are clientID (the client's client_id URL), aud is the
// authorization server's issuer URL, jti is random, iat is now and exp is
// now plus AssertionLifetime. It returns the compact JWT and its expiry.
func NewClientAssertion(key *ecdsa.PrivateKey, kid, clientID, issuer string, now time.Time) (string, time.Time, error) {
	if key == nil || key.Curve != elliptic.P256() {
		return "", time.Time{}, errors.New("oauth: client assertion needs an EC P-256 private key")
	}
	if kid == "" || clientID == "" || issuer == "" {
		return "", time.Time{}, errors.New("oauth: client assertion needs a kid, a client_id and an issuer")
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: key, KeyID: kid}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return "", time.Time{}, fmt.Errorf("oauth: assertion signer: %w", err)
	}
	iat := now.Unix()
	exp := time.Unix(iat, 0).Add(AssertionLifetime)
	jwt, err := signJSON(signer, AssertionClaims{
		Issuer: clientID, Subject: clientID, Audience: issuer, JTI: randomID(), IssuedAt: iat, Expiry: exp.Unix(),
	})
	if err != nil {
		return "", time.Time{}, err
	}
	return jwt, exp, nil
}

// PublicJWK is a published client authentication key.
type PublicJWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y"`
	Kid string `json:"kid"`
	Alg string `json:"alg"`
	Use string `json:"use"`
}

// JWKS is a JSON Web Key Set as served at /oauth/clients/{id}/jwks.json.
type JWKS struct {
	Keys []PublicJWK `json:"keys"`
}

// NewPublicJWK describes a P-256 public key for a key set: kty EC, crv
// P-256, x, y, the kid, alg ES256 and use sig.
func NewPublicJWK(pub *ecdsa.PublicKey, kid string) (PublicJWK, error) {
	if pub == nil || pub.Curve != elliptic.P256() {
		return PublicJWK{}, errors.New("oauth: not an EC P-256 public key")
	}
	b, err := pub.Bytes()
	if err != nil {
		return PublicJWK{}, fmt.Errorf("oauth: encode public key: %w", err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	return PublicJWK{Kty: "EC", Crv: "P-256", X: enc(b[1:33]), Y: enc(b[33:65]), Kid: kid, Alg: SigningAlgorithm, Use: "sig"}, nil
}

// PublicKey decodes the key's point.
func (j PublicJWK) PublicKey() (*ecdsa.PublicKey, error) {
	if j.Kty != "EC" || j.Crv != "P-256" {
		return nil, errors.New("oauth: JWK is not an EC P-256 key")
	}
	x, errX := base64.RawURLEncoding.DecodeString(j.X)
	y, errY := base64.RawURLEncoding.DecodeString(j.Y)
	if errX != nil || errY != nil || len(x) != 32 || len(y) != 32 {
		return nil, errors.New("oauth: JWK coordinates must be base64url of 32 bytes")
	}
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
	if err != nil {
		return nil, fmt.Errorf("oauth: JWK public key: %w", err)
	}
	return pub, nil
}

// NewJWKS renders a key set; with no keys, Keys is an empty list (never
// null), as the endpoint serves for an unknown client.
func NewJWKS(keys ...PublicJWK) JWKS {
	if keys == nil {
		keys = []PublicJWK{}
	}
	return JWKS{Keys: keys}
}

// NewKeyID returns a fresh random key identifier for a client
// authentication key.
func NewKeyID() string { return randomID() }
